# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# The guest's second stage, run by tests/vm/guest-init.sh after switch_root with the
# busybox it copied to /run/railgate-vm: the rest of a usual system's mounts,
# then the job's command (a bash script the host wrote) as root with its
# drivers loaded, with its output on the virtio console, its exit status written back to the job
# share, and power off.

bb=/run/railgate-vm/busybox
job=/run/railgate-vm/job

$bb mkdir -p /dev/pts /dev/shm /dev/mqueue
$bb mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
$bb ln -sf pts/ptmx /dev/ptmx
$bb mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
$bb mount -t mqueue mqueue /dev/mqueue
$bb ln -sf /proc/self/fd /dev/fd
$bb ln -sf /proc/self/fd/0 /dev/stdin
$bb ln -sf /proc/self/fd/1 /dev/stdout
$bb ln -sf /proc/self/fd/2 /dev/stderr
$bb mount -t cgroup2 cgroup2 /sys/fs/cgroup
$bb mount -t bpf bpf /sys/fs/bpf 2>/dev/null
$bb mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
$bb hostname railgate-vm
$bb ip link set lo up
# No udev here: the drivers the job names (for --sriov, igb and igbvf, so
# that VFs get their netdevs as soon as sriov_numvfs creates them) are
# loaded now; everything else loads on demand through the kernel's modprobe.
mods=$(cat $job/modules)
# shellcheck disable=SC2086 # a list of module names
[ -z "$mods" ] || /sbin/modprobe -a $mods || echo "railgate-vm: modprobe -a $mods failed" >/dev/hvc0

out=/dev/hvc0
$bb stty -F $out -onlcr 2>/dev/null
in=/dev/null
[ -f $job/tty ] && in=$out
read -r up _ </proc/uptime
echo "$up" >$job/started
$bb env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 \
  TERM="$(cat $job/term)" /bin/bash --noprofile --norc $job/cmd <$in >$out 2>&1
echo $? >$job/rc
$bb sync
$bb poweroff -f
$bb reboot -f
