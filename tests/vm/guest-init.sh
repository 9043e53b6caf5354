#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# The guest's first stage, /init of the initramfs that tests/vm/run.sh builds:
# loads the 9p, overlay and virtio modules packed beside it, makes the host's
# root (read-only over 9p) the root of the guest under a tmpfs overlay, mounts
# the kernel's modules, the job share and the caller's directory (read-write),
# and hands over to tests/vm/guest-stage2.sh with switch_root, so that the kernel's
# own module loader finds /sbin/modprobe in the new root.

/bin/busybox mkdir -p /proc /sys /dev /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t devtmpfs dev /dev
mount -t proc proc /proc
mount -t sysfs sys /sys

# Every message goes to the kernel console (a file on the host); the host
# tells a guest that never ran the command by the missing exit status.
fail() {
  echo "railgate-vm: init: $*"
  poweroff -f
  reboot -f
}

while read -r m; do
  insmod "/modules/$m" || fail "insmod $m failed"
done </modules/order

p9() { # p9 TAG DIR OPTIONS: mount the host share TAG on DIR
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,$3" "$1" "$2" ||
    fail "cannot mount the 9p share $1 on $2"
}

mkdir -p /lower /upper /newroot
p9 root /lower ro,cache=loose
mount -t tmpfs -o mode=0755 upper /upper
mkdir /upper/data /upper/work
mount -t overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work root /newroot ||
  fail "cannot put the overlay on the host's root"
mount -t tmpfs -o mode=0755,nosuid,nodev run /newroot/run

vm=/newroot/run/railgate-vm
mkdir -p "$vm/job"
p9 job "$vm/job" rw,cache=none
kver=$(uname -r)
mkdir -p "/newroot/lib/modules/$kver"
p9 modules "/newroot/lib/modules/$kver" ro,cache=loose
cwd=$(cat "$vm/job/cwd")
if [ "$cwd" != / ]; then
  mkdir -p "/newroot$cwd"
  p9 cwd "/newroot$cwd" rw,cache=mmap
fi

cp /bin/busybox /stage2 "$vm/"
for d in dev proc sys; do
  mount --move "/$d" "/newroot/$d"
done
exec switch_root /newroot /run/railgate-vm/busybox sh /run/railgate-vm/stage2
