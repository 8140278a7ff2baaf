#!/usr/bin/env bash
# Soft-RoCE VM harness: runs a command inside a qemu (TCG) guest that has a real
# rdma_rxe verbs device (rxe0), because the host kernel cannot load rdma_rxe.
#
#   softroce.sh prepare                      fetch + unpack Debian kernel, build initramfs (cached)
#   softroce.sh run [opts] -- CMD...         boot, set up rxe0, run CMD, exit with its code
#   softroce.sh pair [opts] -- CMD...        boot two guests joined by a wire, each with rxe0 on
#                                            its own NIC; run CMD in both; exit 0 if both did
#   softroce.sh check                        smoke test (ibv_devinfo + ib_read_bw over rxe0)
#   softroce.sh pair-check                   ib_read_bw from one guest's rxe0 to the other's
#   softroce.sh host-check                   whether this host can get the guest's kernel (exit 0), or one
#                                            line and exit 77 (skip; 125 under CI=true) where it cannot
#   SOFTROCE_KERNEL=SUITE softroce.sh ...    guest kernel: bookworm (6.1, default) or trixie/forky/sid
#
# The guest sees the host's / read-only (9p + tmpfs overlay), so it uses the host's
# JDK, rdma-core userspace and checkout. See README.md next to this file.
#
# This file is the host side. The guest's side: guest-init.sh (the initramfs's /init, stage 1),
# guest-stage2.sh (PID 1 once the host's / is mounted: rxe0, then the command), guest.conf (the
# constants both sides share). The test stages run in the guest are guest-tests.sh's.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")
CACHE=${RDMA_SHUFFLE_CACHE:-$HOME/.cache/rdma-shuffle}/softroce

# shellcheck source=guest.conf
source "$HERE/guest.conf"

# Initramfs modules, in load order (deps first): just enough for virtio-pci, 9p,
# overlayfs and virtio-serial. Everything else is modprobed later from the full tree.
INITRAMFS_MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
  9pnet 9pnet_virtio netfs fscache 9p overlay virtio_console"
# Of those, the ones a newer kernel may lack altogether (neither a module nor built in):
# fscache is part of netfs since 6.8.
OPTIONAL_MODULES="fscache"

log() { echo "softroce: $*" >&2; }
die() { log "error: $*"; exit 125; }

# Guest kernel: bookworm is Debian 12's 6.1 from the host's own apt, what the harness is proven on;
# a newer suite's (trixie, forky, sid) comes through a private apt dir, to prove what newer rxe
# adds (ODP, memory windows, FLUSH, atomic write). KDIR holds vmlinux, kernel/ (the unpacked tree),
# initramfs.img and kernel.ready (its version): bookworm's is $CACHE itself (the layout from
# before there was a choice), a newer suite's is $CACHE/kernels/SUITE, a link to
# $CACHE/kernels/<kver>/ made once the suite's kernel is resolved: no network after that.
KERNEL_SUITE=${SOFTROCE_KERNEL:-bookworm}
[[ $KERNEL_SUITE =~ ^[a-z]+(-[a-z]+)?$ ]] || die "SOFTROCE_KERNEL=$KERNEL_SUITE: not a Debian suite name (bookworm, trixie, forky, sid)"
if [[ $KERNEL_SUITE == bookworm ]]; then KDIR=$CACHE; else KDIR=$CACHE/kernels/$KERNEL_SUITE; fi

# --- host prerequisites ------------------------------------------------------------

# need CMD:DEBIAN_PACKAGE ...  -> fail once, naming every package that is missing.
need() {
  local spec missing=() pkgs=()
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || { missing+=("${spec%%:*}"); pkgs+=("${spec#*:}"); }
  done
  ((${#missing[@]} == 0)) ||
    die "missing host tools: ${missing[*]}; install with: apt-get install -y $(printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' ')"
}

need_verbs() {
  # The guest runs the host's rdma-core userspace: libibverbs and its rxe provider.
  local pkgs=()
  # Not `ldconfig -p | grep -q`: under pipefail, grep quitting early SIGPIPEs ldconfig and the
  # pipeline fails now and then (seen in CI: 4 runs in 200 "missed" an installed libibverbs).
  grep -q 'libibverbs\.so\.1 ' < <(ldconfig -p 2>/dev/null) || pkgs+=(libibverbs1)
  compgen -G '/usr/lib/*/libibverbs/librxe-rdmav*.so' >/dev/null || pkgs+=(ibverbs-providers)
  ((${#pkgs[@]} == 0)) || die "missing rdma-core userspace; install with: apt-get install -y ${pkgs[*]}"
}

# --- prepare -----------------------------------------------------------------------

# Pull the raw ELF vmlinux out of a compressed bzImage (xz in 6.1, zstd from trixie's 6.12 on): booting
# it through the PVH entry point skips the in-guest decompressor, which costs ~6 s under TCG.
extract_vmlinux() {
  local bz=$1 out=$2 off
  for off in $(LC_ALL=C grep -obUaP '\xFD7zXZ\x00' "$bz" | cut -d: -f1); do
    tail -c +$((off + 1)) "$bz" >"$out.xz"
    if xz -dc --single-stream "$out.xz" >"$out.tmp" 2>/dev/null &&
      [[ $(head -c 4 "$out.tmp" | od -An -c | tr -d ' ') == 177ELF ]]; then
      rm -f "$out.xz" && mv "$out.tmp" "$out" && return 0
    fi
  done
  rm -f "$out.xz"
  # zstd has no single-stream mode: it fails on the bytes after the frame, having written it all,
  # so what counts is that a whole ELF came out.
  for off in $(LC_ALL=C grep -obUaP '\x28\xB5\x2F\xFD' "$bz" | cut -d: -f1); do
    need zstd:zstd
    tail -c +$((off + 1)) "$bz" | zstd -dcq >"$out.tmp" 2>/dev/null || true
    if whole_elf "$out.tmp"; then mv "$out.tmp" "$out" && return 0; fi
  done
  rm -f "$out.tmp"
  die "no xz- or zstd-compressed ELF found in $bz"
}

# An ELF64 file that is all there: its section header table (at its end) lies within it.
whole_elf() {
  local f=$1 shoff shentsize shnum
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || return 1
  shoff=$(od -An -t u8 -j 40 -N 8 "$f" | tr -d ' ')
  shentsize=$(od -An -t u2 -j 58 -N 2 "$f" | tr -d ' ')
  shnum=$(od -An -t u2 -j 60 -N 2 "$f" | tr -d ' ')
  ((shnum > 0 && shoff + shentsize * shnum <= $(stat -c %s "$f")))
}

# The initramfs's /init (guest stage 1): guest-init.sh.
INIT_SCRIPT=$(cat "$HERE/guest-init.sh")

# --- the host: Debian's kernel package ----------------------------------------------

# The guest boots Debian's kernel package, the one linux-image-amd64 names, resolved and downloaded with
# the host's apt (a newer suite's through a private apt dir beside it), and runs the host's own userspace:
# the harness needs an x86-64 Debian host. Ubuntu, for one, has no linux-image-amd64. Where the host's
# apt cannot name that package, a Debian x86-64 host only needs fresh package lists (an error saying so);
# any other host cannot run the guest stages: one line, and exit 77 (skipped) -- except under CI=true,
# where a stage that cannot run fails (125).
OS_RELEASE=${SOFTROCE_OS_RELEASE:-/etc/os-release} # tests point it at another distribution's

no_kernel_package() {
  local arch id="" name=""
  arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
  if [[ -r $OS_RELEASE ]]; then
    id=$(sed -n 's/^ID=//p' "$OS_RELEASE" | tr -d '"' | head -1)
    name=$(sed -n 's/^PRETTY_NAME=//p' "$OS_RELEASE" | tr -d '"' | head -1)
  fi
  if [[ $id == debian && $arch == amd64 ]] && command -v apt-cache >/dev/null; then
    die "cannot resolve linux-image-amd64's kernel package (run: apt-get update)"
  fi
  local host
  if ! command -v apt-cache >/dev/null; then host="this host has no apt (${name:-$arch})"
  elif [[ $arch != amd64 ]]; then host="this host is $arch (${name:-$arch}), not x86-64"
  else host="this host's apt has no linux-image-amd64 (${name:-not Debian})"
  fi
  local line="the Soft-RoCE guest stages need Debian's kernel package (linux-image-amd64, with the host's apt) on an x86-64 Debian host, and $host"
  if [[ ${CI:-} == true ]]; then
    log "error: $line; under CI=true a stage that cannot run fails"
    exit 125
  fi
  log "skipped: $line"
  exit 77
}

# host-check: exit 0 when this host has the guest's kernel or can get it; else as no_kernel_package.
# Nothing is downloaded: the stages call it before they build anything.
cmd_host_check() {
  [[ -f $KDIR/kernel.ready ]] && return 0
  command -v apt-cache >/dev/null || no_kernel_package
  [[ -n $(kernel_package || true) ]] || no_kernel_package
}

# The package linux-image-amd64 depends on (the versioned image), from the apt whose options are
# given (none: the host's own). awk reads to the end: an early exit could SIGPIPE apt-cache.
kernel_package() { # [APT_OPTION...]
  apt-cache "$@" depends linux-image-amd64 2>/dev/null |
    awk '!found && $1 ~ /Depends:/ && $2 ~ /^linux-image-[0-9].*-amd64$/ {print $2; found = 1}'
}

# The packages a versioned image package is made of: itself and, since Debian split it (7.x in
# sid), the linux-*-<kver> packages it depends on: linux-base- (config, System.map), linux-binary-
# (vmlinuz), linux-modules-. Bookworm's 6.1 image has none of those: it is the one package.
kernel_parts() { # KPKG [APT_OPTION...]
  local kpkg=$1
  shift
  echo "$kpkg"
  apt-cache "$@" depends "$kpkg" 2>/dev/null | awk -v v="-${kpkg#linux-image-}" '
    $1 == "Depends:" && $2 ~ /^linux-/ && substr($2, length($2) - length(v) + 1) == v && !seen[$2]++ {print $2}'
}

# unpack_kernel DIR KPKG [APT_OPTION...]: download KPKG (and its parts) and unpack them (not install
# them) into DIR/kernel, depmod it, extract DIR/vmlinux, then write DIR/kernel.ready (its version).
unpack_kernel() {
  local dir=$1 kpkg=$2 kver parts p
  shift 2
  parts=$(kernel_parts "$kpkg" "$@" || true)
  log "downloading $(echo $parts)"
  rm -rf "$dir/debs" "$dir/kernel" "$dir/kernel.tmp" && mkdir -p "$dir/debs"
  # shellcheck disable=SC2086 # $parts: one package name a line
  (cd "$dir/debs" && apt-get "$@" download -q $parts 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  for p in $parts; do
    compgen -G "$dir/debs/${p}_*.deb" >/dev/null || die "apt-get download $p failed"
    dpkg-deb -x "$dir"/debs/"${p}"_*.deb "$dir/kernel.tmp"
  done
  # Merged-/usr packages (newer suites) ship usr/lib/modules: move it to where depmod -b,
  # modprobe -d and the guest's bind mount look.
  if [[ ! -d $dir/kernel.tmp/lib/modules && -d $dir/kernel.tmp/usr/lib/modules ]]; then
    mkdir -p "$dir/kernel.tmp/lib" && mv "$dir/kernel.tmp/usr/lib/modules" "$dir/kernel.tmp/lib/modules"
  fi
  kver=$(ls "$dir/kernel.tmp/lib/modules" 2>/dev/null || true)
  [[ -n $kver && $kver != *$'\n'* ]] || die "$(echo $parts) unpacked no single lib/modules/<version> (a new package layout?)"
  depmod -b "$dir/kernel.tmp" "$kver"
  # The image: /boot/vmlinuz-<kver> up to 6.x; the split packages put it beside the modules.
  local bz=$dir/kernel.tmp/boot/vmlinuz-$kver
  [[ -f $bz ]] || bz=$dir/kernel.tmp/lib/modules/$kver/vmlinuz
  [[ -f $bz ]] || die "no vmlinuz in $(echo $parts)"
  log "extracting vmlinux from ${bz#"$dir/kernel.tmp/"}"
  extract_vmlinux "$bz" "$dir/vmlinux"
  rm -rf "$dir/debs" # the 70 MB .deb is no longer needed
  mv "$dir/kernel.tmp" "$dir/kernel"
  echo "$kver" >"$dir/kernel.ready"
}

# suite_kernel SUITE: a newer suite's kernel, as rdma-core.sh fetches that suite's rdma-core: apt in
# a private dir (its own list of the suite, signature-checked with Debian's keyring, the host's
# mirror), nothing installed. Reuses a kernel version already unpacked, and points
# $CACHE/kernels/SUITE at it (later runs read the link, not the network).
suite_kernel() {
  local suite=$1 apt=$CACHE/kernels/apt/$1 mirror kpkg kver
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  mirror=${mirror:-http://deb.debian.org/debian}
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$apt/sources.list"
  local apt_opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  log "reading $suite's package list"
  apt-get "${apt_opts[@]}" -qq update || die "cannot read $suite's package list from $mirror"
  kpkg=$(kernel_package "${apt_opts[@]}" || true)
  [[ -n $kpkg ]] || die "$suite has no linux-image-amd64 naming a kernel package"
  kver=${kpkg#linux-image-} # the package's name carries the version its modules live under
  log "kernel $kpkg from $suite (the harness is proven on bookworm's 6.1)"
  [[ -f $CACHE/kernels/$kver/kernel.ready ]] || unpack_kernel "$CACHE/kernels/$kver" "$kpkg" "${apt_opts[@]}"
  ln -sfn "$kver" "$CACHE/kernels/$suite"
}

# initramfs_module M NEEDED_BY: M's module file into the initramfs being built (cmd_prepare's root,
# tree, kver, loaded), after the modules it depends on: a newer kernel may add a dependency, or
# order them differently (7.x's 9pnet needs netfs). Nothing for one built into the kernel.
initramfs_module() {
  local m=$1 by=$2 f d
  [[ $loaded == *" $m "* ]] && return 0
  grep -Eq "/${m//_/[_-]}\.ko" "$tree/lib/modules/$kver/modules.builtin" && return 0
  f=$(modprobe -d "$tree" -S "$kver" -n -q --show-depends "$m" | awk -v m="$m" '
    {n=$2; sub(/.*\//, "", n); sub(/\.ko.*/, "", n); gsub(/-/, "_", n); if (n == m) print $2}' || true)
  if [[ -z $f ]]; then
    [[ -z $by && " $OPTIONAL_MODULES " == *" $m "* ]] && { log "$m: not in kernel $kver (merged into another module), skipped"; return 0; }
    die "module $m${by:+ (which $by needs)} not found in $tree"
  fi
  for d in $(modinfo -F depends "$f" | tr ',' ' '); do initramfs_module "${d//-/_}" "$m"; done
  [[ " $(echo $INITRAMFS_MODULES) " == *" $m "* ]] || log "kernel $kver: $by needs $m, which INITRAMFS_MODULES lacks: packed too"
  case $f in
  *.xz) xz -dc "$f" >"$root/lib/modules/$m.ko" ;;
  *.zst) need zstd:zstd && zstd -dcq "$f" >"$root/lib/modules/$m.ko" ;;
  *) cp "$f" "$root/lib/modules/$m.ko" ;;
  esac
  echo "$m" >>"$root/lib/modules/load-order"
  loaded+="$m "
}

cmd_prepare() { # [quiet]
  cmd_host_check # a host that cannot get the kernel says so in one line before anything else is asked of it
  need apt-get:apt apt-cache:apt dpkg-deb:dpkg depmod:kmod modprobe:kmod modinfo:kmod xz:xz-utils \
    cpio:cpio gzip:gzip flock:util-linux sha256sum:coreutils
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9 # concurrent prepares/runs must not see half-built files

  # 1. Kernel: the package linux-image-amd64 depends on, unpacked (not installed).
  if [[ ! -f $KDIR/kernel.ready ]]; then
    if [[ $KERNEL_SUITE == bookworm ]]; then
      local kpkg
      kpkg=$(kernel_package || true)
      [[ -n $kpkg ]] || no_kernel_package
      [[ $kpkg == linux-image-6.1.* ]] ||
        log "warning: the host's apt gives $kpkg, not Debian 12's 6.1 kernel this harness is proven on"
      unpack_kernel "$CACHE" "$kpkg"
    else
      suite_kernel "$KERNEL_SUITE"
    fi
  fi
  local kver
  kver=$(cat "$KDIR/kernel.ready")

  # 2. busybox-static, unpacked only (the package conflicts with the usual busybox).
  if [[ ! -x $CACHE/busybox/bin/busybox ]]; then
    log "downloading busybox-static"
    rm -rf "$CACHE/busybox" "$CACHE/bb.tmp" && mkdir -p "$CACHE/bb.tmp"
    (cd "$CACHE/bb.tmp" && apt-get download -q busybox-static 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
    compgen -G "$CACHE/bb.tmp/busybox-static_*.deb" >/dev/null || die "apt-get download busybox-static failed"
    dpkg-deb -x "$CACHE"/bb.tmp/busybox-static_*.deb "$CACHE/bb.tmp/root"
    mv "$CACHE/bb.tmp/root" "$CACHE/busybox" && rm -rf "$CACHE/bb.tmp"
  fi

  # 3. Initramfs; rebuilt whenever /init or the module list changes.
  local sig
  sig=$(printf '%s\n' "$kver" "$INITRAMFS_MODULES" "$INIT_SCRIPT" | sha256sum | cut -c1-16)
  if [[ ! -f $KDIR/initramfs.img || $(cat "$KDIR/initramfs.sig" 2>/dev/null) != "$sig" ]]; then
    log "building initramfs"
    local root="$KDIR/initramfs.tmp" tree="$KDIR/kernel" m loaded=" "
    rm -rf "$root" && mkdir -p "$root"/{bin,dev,proc,sys,lib/modules}
    cp "$CACHE/busybox/bin/busybox" "$root/bin/busybox"
    printf '%s' "$INIT_SCRIPT" >"$root/init" && chmod 755 "$root/init"
    for m in $INITRAMFS_MODULES; do initramfs_module "$m" ""; done
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -6 >"$KDIR/initramfs.img.tmp"
    mv "$KDIR/initramfs.img.tmp" "$KDIR/initramfs.img" && rm -rf "$root"
    echo "$sig" >"$KDIR/initramfs.sig"
  fi
  exec 9>&- # release the lock (run calls prepare and then keeps going)
  [[ ${1:-} == quiet ]] || log "ready: kernel $kver in $KDIR"
}

# --- run (host side) ---------------------------------------------------------------

usage() {
  sed -n '2,13p' "$SELF" | sed 's/^# \{0,1\}//' >&2
  echo "run options: --cpus N (1)  --mem SIZE (3G)  --share HOSTDIR (temp dir)  --timeout SECS (1800)" >&2
  echo "pair: the same options; the share is common to both guests" >&2
  exit 2
}

cmd_run() {
  local cpus=${SOFTROCE_CPUS:-1} mem=${SOFTROCE_MEM:-3G} share="" timeout=${SOFTROCE_TIMEOUT:-1800}
  local wire="" wire_role="" host_index=""
  while (($#)); do
    case $1 in
    --wire-listen) wire=$2; wire_role=listen; shift 2 ;;   # pair mode (internal): this guest makes the wire
    --wire-connect) wire=$2; wire_role=connect; shift 2 ;; # pair mode (internal): this guest joins it
    --host-index) host_index=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --share) share=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
  done
  (($#)) || usage
  local cmd="$*" # one shell command line, like ssh

  need qemu-system-x86_64:qemu-system-x86 rdma:iproute2 ip:iproute2 modprobe:kmod timeout:coreutils
  need_verbs
  cmd_prepare quiet # no-op (no network) once everything is cached
  local kver
  kver=$(cat "$KDIR/kernel.ready")
  [[ $KERNEL_SUITE == bookworm ]] || log "guest kernel $kver ($KERNEL_SUITE)"

  # Per-run control dir, shared read-write as 9p tag "ctl": command, exit code, logs.
  mkdir -p "$CACHE/runs"
  find "$CACHE/runs" -mindepth 1 -maxdepth 1 -mtime +7 -exec rm -rf {} + 2>/dev/null || true
  local run
  run=$(mktemp -d "$CACHE/runs/run.XXXXXX")
  [[ -n $share ]] || share="$run/share"
  mkdir -p "$share"
  share=$(readlink -f "$share")
  cp "$HERE/guest-stage2.sh" "$HERE/guest.conf" "$run/"
  printf '%s' "$cmd" >"$run/cmd"
  printf '%s' "$PWD" >"$run/cwd"
  printf '%s' "$share" >"$run/share-path"
  printf '%s' "$(readlink -f "$KDIR/kernel/lib/modules")" >"$run/modules-path"
  [[ -z $wire ]] || printf '%s' "$host_index" >"$run/wire-index"
  : >"$run/out"

  # -nodefaults: no NIC, no VGA, no monitor. Kernel console -> serial -> console.log;
  # the command's stdout+stderr -> virtio-serial port "out" -> $run/out, tailed live.
  local qemu=(
    qemu-system-x86_64 -nodefaults -no-user-config -no-reboot -display none
    -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$mem"
    -kernel "$KDIR/vmlinux" -initrd "$KDIR/initramfs.img"
    -append "console=ttyS0 quiet loglevel=4 panic=-1 mitigations=off ${SOFTROCE_KERNEL_ARGS:-}"
    -serial "file:$run/console.log"
    -fsdev "local,id=hostroot,path=/,readonly=on,security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
    -fsdev "local,id=ctl,path=$run,security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=ctl,mount_tag=ctl
    -fsdev "local,id=share,path=$share,security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=share,mount_tag=share
    -device virtio-serial-pci,id=vser
    -chardev "file,id=out,path=$run/out"
    -device virtserialport,bus=vser.0,chardev=out,name=out
  )
  if [[ -n $wire ]]; then
    # One virtio NIC on a unix-socket stream: the other guest is the only thing on the wire.
    qemu+=(-netdev "stream,id=wire,server=$([[ $wire_role == listen ]] && echo on || echo off),addr.type=unix,addr.path=$wire"
      -device "virtio-net-pci,netdev=wire,mac=52:54:00:99:01:$(printf '%02x' $((host_index + 1))),host_mtu=$WIRE_MTU")
  fi
  local start=$SECONDS qpid tpid rc
  # timeout(1) kills qemu after $timeout s and then exits 124.
  timeout -k 10 "$timeout" "${qemu[@]}" </dev/null >"$run/qemu.log" 2>&1 &
  qpid=$!
  tail -n +1 -f --pid="$qpid" "$run/out" &
  tpid=$!
  trap 'kill "$qpid" 2>/dev/null; wait "$qpid" 2>/dev/null; kill "$tpid" 2>/dev/null; exit 130' INT TERM HUP
  rc=0
  wait "$qpid" || rc=$?
  wait "$tpid" 2>/dev/null || true # tail drains the file, then exits with qemu
  trap - INT TERM HUP

  if ((rc == 124)); then
    log "timeout: guest still running after ${timeout}s, qemu killed; logs kept in $run (console.log, qemu.log)"
    exit 124
  fi
  if [[ ! -f $run/rc ]]; then
    [[ ! -s $run/setup-error ]] || log "guest setup failed: $(cat "$run/setup-error")"
    log "guest ended without an exit code (qemu exit $rc); see $run/console.log and $run/qemu.log"
    tail -n 20 "$run/console.log" >&2 2>/dev/null || true
    exit 125
  fi
  rc=$(cat "$run/rc")
  log "exit $rc after $((SECONDS - start))s ($RXE_DEV ready at guest uptime $(cat "$run/ready" 2>/dev/null || echo '?')s)"
  if ((rc == 0)) && [[ -z ${SOFTROCE_KEEP_RUN:-} ]]; then
    rm -rf "$run"
  else
    log "run dir kept: $run (console.log, out)"
  fi
  exit "$rc"
}

# --- pair (host side): two guests, one wire ----------------------------------------

cmd_pair() {
  local opts=()
  while (($#)); do
    case $1 in
    --) shift; break ;;
    --cpus | --mem | --share | --timeout) opts+=("$1" "$2"); shift 2 ;;
    *) usage ;;
    esac
  done
  (($#)) || usage
  mkdir -p "$CACHE/runs"
  local wire_dir pid0 pid1 rc0=0 rc1=0 i
  wire_dir=$(mktemp -d "$CACHE/runs/wire.XXXXXX")
  # Both guests mount the same share: the place to meet (ready files) and to leave results.
  [[ " ${opts[*]} " == *" --share "* ]] || opts+=(--share "$wire_dir/share")
  # Each guest's output is prefixed with its index; guest 0 makes the wire, guest 1 joins once it exists.
  "$SELF" run --wire-listen "$wire_dir/wire.sock" --host-index 0 "${opts[@]}" -- "$@" \
    > >(sed -u 's/^/[host0] /') 2> >(sed -u 's/^/[host0] /' >&2) &
  pid0=$!
  for ((i = 0; i < 600; i++)); do
    [[ -S $wire_dir/wire.sock ]] && break
    kill -0 "$pid0" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -S $wire_dir/wire.sock ]]; then
    kill "$pid0" 2>/dev/null; wait "$pid0" 2>/dev/null || true
    rm -rf "$wire_dir"
    die "guest 0 did not open the wire ($wire_dir/wire.sock)"
  fi
  "$SELF" run --wire-connect "$wire_dir/wire.sock" --host-index 1 "${opts[@]}" -- "$@" \
    > >(sed -u 's/^/[host1] /') 2> >(sed -u 's/^/[host1] /' >&2) &
  pid1=$!
  trap 'kill "$pid0" "$pid1" 2>/dev/null; wait; rm -rf "$wire_dir"; exit 130' INT TERM HUP
  wait "$pid0" || rc0=$?
  wait "$pid1" || rc1=$?
  trap - INT TERM HUP
  rm -rf "$wire_dir"
  log "pair: host0 exit $rc0, host1 exit $rc1"
  ((rc0 == 0)) || exit "$rc0"
  exit "$rc1"
}

# --- check ---------------------------------------------------------------------------

cmd_check() {
  need ibv_devices:ibverbs-utils ibv_devinfo:ibverbs-utils ib_read_bw:perftest ss:iproute2
  # perftest: start the server under timeout, wait for its TCP listener, then the client.
  # (perftest's rdma_cm mode -R does not work on rxe here; plain TCP exchange does.)
  cmd_run --timeout "${SOFTROCE_TIMEOUT:-600}" -- '
set -e
ibv_devices
ibv_devinfo -d "$SOFTROCE_DEVICE"
bw="ib_read_bw -d $SOFTROCE_DEVICE -x $SOFTROCE_GID_INDEX -s 65536 -n 200 -p 18515"
timeout 300 $bw >/tmp/server.log 2>&1 & srv=$!
for i in $(seq 150); do grep -q ":18515 " < <(ss -ltn) && break; sleep 0.2; done
$bw "$SOFTROCE_ADDR"
wait $srv || { echo "ib_read_bw server failed:"; cat /tmp/server.log; exit 1; }
echo "softroce check: OK"
'
}

cmd_pair_check() {
  need ib_read_bw:perftest ss:iproute2
  # Host 0 serves, host 1 reads across the wire; each waits for the other with a deadline.
  cmd_pair --timeout "${SOFTROCE_TIMEOUT:-900}" -- '
set -e
ibv_devinfo -d "$SOFTROCE_DEVICE" | grep -E "hca_id|state|active_mtu"
echo "GID[$SOFTROCE_GID_INDEX]: $(cat /sys/class/infiniband/$SOFTROCE_DEVICE/ports/1/gids/$SOFTROCE_GID_INDEX)"
bw="ib_read_bw -d $SOFTROCE_DEVICE -x $SOFTROCE_GID_INDEX -s 65536 -n 200 -p 18515"
# The rendezvous is a file in the share both guests mount (a probe of the port would be taken
# for the client by perftest, which serves one connection).
ready="$SOFTROCE_SHARE/ib_read_bw.ready"
if [ "$SOFTROCE_HOST_INDEX" = 0 ]; then
  rm -f "$ready"
  timeout 600 $bw & srv=$!
  for i in $(seq 300); do grep -q ":18515 " < <(ss -ltn) && break; sleep 0.2; done
  touch "$ready"
  wait $srv
  rm -f "$ready"
else
  for i in $(seq 1200); do [ -e "$ready" ] && break; sleep 0.5; done
  $bw "$SOFTROCE_PEER_ADDR"
fi
echo "softroce pair-check: host $SOFTROCE_HOST_INDEX OK"
'
}

case ${1:-} in
prepare) shift; cmd_prepare "$@" ;;
run) shift; cmd_run "$@" ;;
pair) shift; cmd_pair "$@" ;;
check) shift; cmd_check "$@" ;;
pair-check) shift; cmd_pair_check "$@" ;;
host-check) shift; cmd_host_check ;;
*) usage ;;
esac
