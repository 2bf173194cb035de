#!/bin/busybox sh
# The VM's first process: load the modules for a 9p root, build a writable overlay over the read-only
# root share, mount the job share and hand over to the guest's Python init (or to systemd, which starts
# it from a unit). Any failure powers the VM off (a shell on the serial console would wait forever).
/bin/busybox --install -s /bin
die() { echo "nfsvm-initramfs: FAILED: $*"; echo o > /proc/sysrq-trigger; sleep 30; }
mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t devtmpfs dev /dev || die "proc/sys/dev"
for module in $(cat /modules.order); do
  insmod "/modules/$module" || die "insmod $module"
done
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 rootfs /lower || die "9p root"
mount -t tmpfs -o mode=0755 rw /rw && mkdir /rw/upper /rw/work || die "tmpfs for the overlay"
# The root share is read-only; an overlay with a tmpfs upper layer lets the guest make mount points at the
# host's own paths (the repository and the venv are shared at the same paths).
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot || die "overlay root"
mkdir -p /newroot/nfsvm-job
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /newroot/nfsvm-job || die "9p job share"
[ -f /newroot/nfsvm-job/guest.py ] || die "no guest.py in the job share"
mount --move /dev /newroot/dev || die "move /dev"
# nfsvm.init=systemd (the systemd image): systemd is PID 1 and starts guest.py from a unit after boot.
init_kind=busybox
grep -q 'nfsvm.init=systemd' /proc/cmdline && init_kind=systemd
umount /proc /sys
[ "$init_kind" = systemd ] && exec switch_root /newroot /lib/systemd/systemd
exec switch_root /newroot /usr/bin/python3 -I -B /nfsvm-job/guest.py
die "switch_root"
