#!/usr/bin/env bash
# Guest stage 2: PID 1 of the Soft-RoCE guest, run by stage 1 (guest-init.sh) once the host's / is
# mounted; /run/softroce is the host's run dir (softroce.sh run put this file, guest.conf, the command
# and its settings there). It finishes the guest's setup (mounts, modules, the netdev and rxe0 on it,
# the wire to the other guest in pair mode), runs the command with its output on the virtio-serial
# port "out", leaves its exit code in the run dir and powers off. A failed setup is written to
# setup-error for the host to name. Runs in the guest only.
set -euo pipefail
# shellcheck source=guest.conf
source /run/softroce/guest.conf

guest_fail() {
  local msg="$*" port
  echo "softroce-guest: setup failed: $msg" >/dev/console
  echo "$msg" >/run/softroce/setup-error
  port=$(guest_port out) && echo "softroce-guest: setup failed: $msg" >"$port"
  sync
  echo o >/proc/sysrq-trigger
  while :; do sleep 1 2>/dev/null || true; done # PID 1 must not exit
}

guest_port() { # /dev node of the virtio-serial port named $1
  local p
  for p in /sys/class/virtio-ports/*; do
    [[ $(cat "$p/name" 2>/dev/null) == "$1" ]] && { echo "/dev/${p##*/}"; return 0; }
  done
  return 1
}

guest_nic() { # the virtio-net interface (pair mode)
  local n
  for n in /sys/class/net/*; do
    [[ $(basename "$(readlink -f "$n/device/driver" 2>/dev/null)") == virtio_net ]] && { echo "${n##*/}"; return 0; }
  done
  return 1
}

guest_main() {
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  trap 'guest_fail "line $LINENO: $BASH_COMMAND"' ERR
  local ctl=/run/softroce share mods cwd port i state gid
  share=$(cat $ctl/share-path) mods=$(cat $ctl/modules-path) cwd=$(cat $ctl/cwd)

  # proc/sys/dev were moved here by the initramfs; add what programs expect.
  mountpoint -q /proc || mount -t proc proc /proc
  mountpoint -q /sys || mount -t sysfs sys /sys
  mountpoint -q /dev || mount -t devtmpfs dev /dev
  mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs shm /dev/shm
  # devtmpfs has no /dev/fd and /dev/std* (udev makes them): bash's process substitution needs /dev/fd.
  [[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
  [[ -e /dev/stdin ]] || ln -s /proc/self/fd/0 /dev/stdin
  [[ -e /dev/stdout ]] || ln -s /proc/self/fd/1 /dev/stdout
  [[ -e /dev/stderr ]] || ln -s /proc/self/fd/2 /dev/stderr
  mkdir -p /lib/modules && mount --bind "$mods" /lib/modules
  mkdir -p "$share" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "$share"

  # Soft-RoCE: rxe on a dummy netdev (MTU 9000 -> rxe active MTU 4096; 1500 is ~4x slower), or in
  # pair mode on the virtio NIC wired to the other guest.
  ulimit -l unlimited
  local m
  for m in rdma_rxe rdma_ucm dummy; do
    modprobe "$m" 2>/tmp/modprobe.err ||
      guest_fail "cannot load the $m module ($(tr '\n' ' ' </tmp/modprobe.err)) from the unpacked kernel $(uname -r): delete the harness cache's kernel/ and run softroce.sh prepare"
  done
  ip link set lo up
  local addr=$SR0_ADDR peer="" netdev=sr0 index
  if [[ -f $ctl/wire-index ]]; then
    index=$(cat $ctl/wire-index)
    modprobe virtio_net
    for ((i = 0; i < 100; i++)); do
      netdev=$(guest_nic) && break
      sleep 0.1
    done
    [[ -n $netdev ]] || guest_fail "no virtio NIC for the wire"
    addr=$WIRE_NET.$((index + 1))/24 peer=$WIRE_NET.$((2 - index))
    # Names for the two hosts, as a cluster has them (YARN addresses nodes by name).
    echo "host$index" >/proc/sys/kernel/hostname
    printf '%s host0\n%s host1\n' "$WIRE_NET.1" "$WIRE_NET.2" >>/etc/hosts
    ip link set "$netdev" mtu $WIRE_MTU
    ip addr add "$addr" dev "$netdev"
    ip link set "$netdev" up
  else
    ip link add sr0 type dummy
    ip link set sr0 mtu 9000
    ip addr add "$addr" dev sr0
    ip link set sr0 up
  fi
  rdma link add "$RXE_DEV" type rxe netdev "$netdev"
  for ((i = 0; i < 300; i++)); do
    state=$(cat /sys/class/infiniband/$RXE_DEV/ports/1/state 2>/dev/null || true)
    gid=$(cat /sys/class/infiniband/$RXE_DEV/ports/1/gids/$RXE_GID_INDEX 2>/dev/null || true)
    [[ $state == *ACTIVE* && -n $gid && $gid != *0000:0000:0000:0000:0000:0000:0000:0000* ]] && break
    sleep 0.1
  done
  ((i < 300)) || guest_fail "$RXE_DEV port 1 not ACTIVE with GID[$RXE_GID_INDEX] (state '$state', gid '$gid')"
  cut -d' ' -f1 /proc/uptime >$ctl/ready
  port=$(guest_port out) || guest_fail "virtio-serial port 'out' not found"
  trap - ERR

  local rc=0
  (
    cd "$cwd" || exit 125
    export HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8
    export JAVA_HOME=$GUEST_JAVA_HOME PATH=$GUEST_JAVA_HOME/bin:$PATH
    export SOFTROCE_DEVICE=$RXE_DEV SOFTROCE_GID_INDEX=$RXE_GID_INDEX SOFTROCE_ADDR=${addr%/*} SOFTROCE_SHARE=$share
    if [[ -n $peer ]]; then
      export SOFTROCE_HOST_INDEX=$index SOFTROCE_PEER_ADDR=$peer SOFTROCE_NETDEV=$netdev
    fi
    exec bash -c "$(cat $ctl/cmd)"
  ) </dev/null >"$port" 2>&1 || rc=$?
  sync
  echo "$rc" >$ctl/rc
  sync
  echo o >/proc/sysrq-trigger # power off; qemu exits
  while :; do sleep 1 2>/dev/null || true; done # (the root fs may already be gone)
}

guest_main
