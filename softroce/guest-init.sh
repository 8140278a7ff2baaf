#!/bin/busybox sh
# /init of the initramfs (busybox sh), stage 1 of the guest: load the virtio and 9p modules, mount
# the host's / read-only with a tmpfs overlay, mount the per-run control dir (the host's run dir),
# then hand over to stage 2 (guest-stage2.sh, copied into the control dir by `softroce.sh run`).
# softroce.sh prepare puts this file in the initramfs as /init, rebuilt whenever it changes.
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
fail() { echo "softroce-init: $*"; echo o >/proc/sysrq-trigger; sleep 60; }
for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko || fail "insmod $m"; done
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /lower || fail "mount hostroot"
mount -t tmpfs -o mode=0755 rw /rw && mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot || fail "mount overlay"
mkdir -p /newroot/run/softroce
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 ctl /newroot/run/softroce || fail "mount ctl"
for d in dev proc sys; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/bash /run/softroce/guest-stage2.sh
