#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command as root in a real Debian kernel booted under QEMU, in the
# caller's directory, with the host's root as the guest's (the virtme way),
# and exits with the command's status:
#
#   bash tests/vm/run.sh [--kernel 6.1|6.12] [--sriov] [--module NAME]... CMD [ARG]...
#
# --kernel   Debian's 6.1 (bookworm, the default) or 6.12 (bookworm-security)
#            amd64 kernel: the newest linux-image-*-amd64-unsigned of that
#            series that apt knows (RAILGATE_VM_KERNEL_PKG names another)
# --sriov    QEMU's emulated Intel igb (SR-IOV PF, 7 VFs) behind a PCIe root
#            port; igb and igbvf are loaded before CMD (there is no udev)
# --module   a kernel module loaded (modprobe) before CMD, e.g. rdma_rxe;
#            repeatable
#
# Fetched once into a cache outside the repo (RAILGATE_VM_CACHE, default
# /var/cache/railgate-vm), one directory per version, under scripts/lib/cache.sh's
# lock: the kernel package (apt-get download, dpkg-deb -x, depmod on the
# unpacked tree, the vmlinux taken out of the bzImage), QEMU 10 with its
# firmware from bookworm-backports (a scratch apt configuration; nothing is
# installed; set RAILGATE_VM_QEMU_REFRESH=1 to look for a newer one), and the
# initramfs (busybox-static, tests/vm/guest-init.sh and guest-stage2.sh, the 9p,
# overlay and virtio modules). Its libraries come from scripts/deps.sh.
#
# The guest: the host's / read-only over virtio-9p under a tmpfs overlay
# (writes, /tmp's too, are the guest's own and vanish), a fresh /run, the kernel's
# modules at /lib/modules/<version> (modprobe and the kernel's autoload work),
# and the caller's directory shared read-write at the same path, so a build
# dir runs as built and what tests write there stays. CMD runs in a clean
# environment plus the caller's RAILGATE_* and CTEST_* variables (under TCG
# RAILGATE_TEST_WAIT_SCALE=10 unless the caller set one), its output
# on a virtio console (QEMU's stdout); the kernel's console goes to a file
# shown when the guest fails. KVM when /dev/kvm opens (2 vCPUs), else TCG
# (1 vCPU), 2 GiB; RAILGATE_VM_ACCEL=kvm|tcg overrides (a /dev/kvm of a
# kernel module other than kvm_intel or kvm_amd is not used). Exits 125 when
# the VM never ran CMD or ran out of time
# (RAILGATE_VM_TIMEOUT seconds, default 3600, times RAILGATE_TEST_WAIT_SCALE).
# A summary line with the kernel, QEMU, accelerator and times goes to stderr;
# RAILGATE_VM_DEBUG=1 shows the whole boot log too.
set -euo pipefail

PROG=tests/vm/run.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${RAILGATE_VM_CACHE:-/var/cache/railgate-vm}
SAY_FD=2
DIE_STATUS=125 # 1 is CMD's own failure
# shellcheck source=scripts/lib/log.sh
. "$HERE/../../scripts/lib/log.sh"
# shellcheck source=scripts/lib/cache.sh
. "$HERE/../../scripts/lib/cache.sh"
usage() {
  sed -n '6,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 125
}

series=6.1
sriov=0
MODULES=()
while [ $# -gt 0 ]; do
  case $1 in
  --kernel)
    [ $# -ge 2 ] || usage
    series=$2
    shift 2
    ;;
  --kernel=*)
    series=${1#*=}
    shift
    ;;
  --sriov)
    sriov=1
    MODULES+=(igb igbvf)
    shift
    ;;
  --module)
    [ $# -ge 2 ] || usage
    [[ $2 =~ ^[A-Za-z0-9_-]+$ ]] || die "--module takes a module name, not '$2'"
    MODULES+=("$2")
    shift 2
    ;;
  --module=*)
    [[ ${1#*=} =~ ^[A-Za-z0-9_-]+$ ]] || die "--module takes a module name, not '${1#*=}'"
    MODULES+=("${1#*=}")
    shift
    ;;
  -h | --help) usage ;;
  --)
    shift
    break
    ;;
  -*) usage ;;
  *) break ;;
  esac
done
[ $# -gt 0 ] || usage
case $series in
6.1) kpattern='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' kcached=kernel-6.1.0- ;;
6.12) kpattern='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' kcached=kernel-6.12. ;;
*) die "--kernel takes 6.1 or 6.12, not $series" ;;
esac
[ "$(id -u)" -eq 0 ] || die "run as root (the cache is $CACHE_ROOT; the guest runs CMD as root)"
if ! command -v modprobe >/dev/null || ! command -v cpio >/dev/null || [ ! -x /bin/busybox ]; then
  die "missing host tools (kmod, cpio, busybox-static): run bash scripts/deps.sh"
fi

QEMU_PID=
SCRATCH=$(mktemp -d /tmp/railgate-vm.XXXXXX)
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ -n "$QEMU_PID" ]; then
    kill "$QEMU_PID" 2>/dev/null || true
    wait "$QEMU_PID" 2>/dev/null || true
  fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# apt with a configuration of our own (lists, cache and sources in SCRATCH);
# the sandbox user stays root so that gpgv runs (as _apt it does not here)
apt_scratch() {
  local a=$SCRATCH/apt
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/parts"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main" >"$a/sources.list"
  APT_OPTS=(-o APT::Sandbox::User=root -o Dir::Etc::sourcelist="$a/sources.list"
    -o Dir::Etc::sourceparts="$a/parts" -o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache")
  apt-get -qq "${APT_OPTS[@]}" update >&2 || die "apt-get update of bookworm-backports failed"
}

download() { # download DIR PKG=VERSION...: apt-get download into DIR
  mkdir -p "$1"
  (cd "$1" && apt-get -q -o APT::Sandbox::User=root "${APT_OPTS[@]}" download "${@:2}") >&2 ||
    die "apt-get download ${*:2} failed"
}

# The vmlinux inside a bzImage: the setup header gives the compressed
# payload's offset and length (boot protocol 2.08); the compressor's magic
# says how to open it. The payload ends with 4 bytes of size, not part of it.
extract_vmlinux() { # extract_vmlinux BZIMAGE OUT
  local sects off len magic
  sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$1" | tr -d ' ')
  [ "$sects" -ne 0 ] || sects=4
  off=$(od -An -tu4 -j $((0x248)) -N4 "$1" | tr -d ' ')
  len=$(od -An -tu4 -j $((0x24c)) -N4 "$1" | tr -d ' ')
  off=$(((sects + 1) * 512 + off))
  magic=$(od -An -tx1 -j "$off" -N4 "$1" | tr -d ' ')
  local payload=(dd if="$1" bs=64K iflag=skip_bytes',count_bytes' skip="$off" count="$((len - 4))" status=none)
  case $magic in
  fd377a58) "${payload[@]}" | xz -dc --single-stream >"$2" ;;
  28b52ffd) "${payload[@]}" | zstd -dcq >"$2" ;;
  1f8b*) "${payload[@]}" | gzip -dc >"$2" ;;
  *) die "$1: unknown kernel compression (payload starts $magic)" ;;
  esac
  [ "$(od -An -c -N4 "$2" | tr -d ' ')" = '177ELF' ] || die "$1: no ELF vmlinux inside"
}

fetch_kernel() {
  local pattern=$kpattern pkg ver
  # one apt-cache call (this apt keeps no binary cache: each call reads the lists)
  if [ -n "${RAILGATE_VM_KERNEL_PKG:-}" ]; then
    pattern=${RAILGATE_VM_KERNEL_PKG//./\\.}
    pattern="^${pattern//+/\\+}\$"
  fi
  read -r ver pkg < <(apt-cache search --names-only --full "$pattern" 2>/dev/null |
    awk '/^Package: / { p = $2 } /^Version: / { print $2, p }' | sort -V | tail -n1) || true
  if [ -z "${ver:-}" ]; then
    # apt knows none (no lists): the newest one cached
    KDIR=$(find "$CACHE_ROOT" -maxdepth 2 -path "$CACHE_ROOT/kernel-*/done" 2>/dev/null |
      sed 's#/done$##' | grep -F "/$kcached" | sort -V | tail -n1 || true)
    [ -n "$KDIR" ] || die "apt knows no package like $pattern and none is cached (apt-get update?)"
  else
    KDIR=$CACHE_ROOT/kernel-${pkg#linux-image-}_${ver#*:}
  fi
  if cache_open "$KDIR"; then
    local start t=$SCRATCH/kernel
    start=$(date +%s)
    say "fetching $pkg $ver into $KDIR"
    APT_OPTS=()
    download "$t" "$pkg=$ver"
    rm -rf "$KDIR/root" "$KDIR/vmlinux"
    dpkg-deb -x "$t"/*.deb "$t/x"
    local kver
    kver=$(ls "$t/x/lib/modules")
    mkdir -p "$KDIR/root/lib/modules"
    mv "$t/x/lib/modules/$kver" "$KDIR/root/lib/modules/"
    cp "$t/x/boot/config-$kver" "$t/x/boot/System.map-$kver" "$KDIR/"
    cp "$t/x/boot/vmlinuz-$kver" "$KDIR/vmlinuz"
    depmod -b "$KDIR/root" -F "$KDIR/System.map-$kver" "$kver"
    extract_vmlinux "$KDIR/vmlinuz" "$KDIR/vmlinux"
    echo "$kver" >"$KDIR/kver"
    cache_close "$KDIR" "$start"
    say "kernel $kver cached in $(cat "$KDIR/build-seconds")s"
  fi
  KVER=$(cat "$KDIR/kver")
}

fetch_qemu() {
  QDIR=
  [ "${RAILGATE_VM_QEMU_REFRESH:-0}" = 1 ] ||
    QDIR=$(find "$CACHE_ROOT" -maxdepth 2 -path "$CACHE_ROOT/qemu-*/done" 2>/dev/null |
      sed 's#/done$##' | sort -V | tail -n1 || true)
  if [ -z "$QDIR" ]; then
    apt_scratch
    local ver
    ver=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions qemu-system-x86/bookworm-backports 2>/dev/null |
      sed -n 's/^Version: //p' | head -n1)
    [ -n "$ver" ] || die "bookworm-backports has no qemu-system-x86"
    QDIR=$CACHE_ROOT/qemu-${ver#*:}
  fi
  if cache_open "$QDIR"; then
    local start t=$SCRATCH/qemu f
    start=$(date +%s)
    say "fetching QEMU $ver from bookworm-backports into $QDIR"
    # qboot.rom, pvh.bin and the rest are in qemu-system-data: SeaBIOS is not needed
    download "$t" "qemu-system-x86=$ver" "qemu-system-data=$ver"
    rm -rf "$QDIR/root"
    for f in "$t"/*.deb; do
      dpkg-deb -x "$f" "$QDIR/root"
    done
    cache_close "$QDIR" "$start"
    say "QEMU cached in $(cat "$QDIR/build-seconds")s"
  fi
  QEMU=$QDIR/root/usr/bin/qemu-system-x86_64
  local missing
  missing=$(ldd "$QEMU" | sed -n 's/^\s*\(\S*\) => not found$/\1/p' | tr '\n' ' ')
  [ -z "$missing" ] || die "QEMU needs $missing: run bash scripts/deps.sh"
}

# The initramfs: busybox, the two stages, and the modules that mount the
# shares (uncompressed: busybox insmod takes plain .ko only), in load order.
build_initramfs() {
  local mods=(virtio_pci virtio_console 9pnet_virtio 9p overlay) list hash
  list=$(for m in "${mods[@]}"; do
    modprobe -d "$KDIR/root" -S "$KVER" --show-depends "$m" || die "$KVER has no module $m"
  done | sed -n 's/^insmod \(\S*\).*/\1/p' | awk '!seen[$0]++')
  hash=$(cat "$HERE/guest-init.sh" "$HERE/guest-stage2.sh" /bin/busybox <(echo "$list") | sha256sum | cut -c1-12)
  IDIR=$CACHE_ROOT/initramfs-$KVER-$hash
  if cache_open "$IDIR"; then
    local start t=$SCRATCH/initramfs m ko
    start=$(date +%s)
    mkdir -p "$t/bin" "$t/modules"
    cp /bin/busybox "$t/bin/"
    install -m 0755 "$HERE/guest-init.sh" "$t/init"
    install -m 0644 "$HERE/guest-stage2.sh" "$t/stage2"
    for m in $list; do
      ko=$(basename "$m")
      case $ko in
      *.xz) xz -dc "$m" >"$t/modules/${ko%.xz}" && ko=${ko%.xz} ;;
      *.zst) zstd -dcq "$m" >"$t/modules/${ko%.zst}" && ko=${ko%.zst} ;;
      *) cp "$m" "$t/modules/" ;;
      esac
      echo "$ko" >>"$t/modules/order"
    done
    (cd "$t" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$IDIR/initramfs.cpio.new"
    mv "$IDIR/initramfs.cpio.new" "$IDIR/initramfs.cpio"
    cache_close "$IDIR" "$start"
  fi
}

timeout_seconds() {
  awk -v s="${RAILGATE_VM_TIMEOUT:-3600}" -v f="${RAILGATE_TEST_WAIT_SCALE:-1}" \
    'BEGIN { if (!(f >= 1 && f <= 1000)) f = 1; printf "%d", s * f }'
}

# The job share: the command as a bash script (cd, the caller's RAILGATE_*
# and CTEST_* variables, exec CMD), the directory to share, the terminal; the
# guest writes back when CMD started (its uptime) and its exit status.
write_job() {
  local job=$SCRATCH/job v
  mkdir -p "$job"
  CWD=$(pwd -P)
  printf '%s\n' "$CWD" >"$job/cwd"
  # the guest's console is a terminal: colours only when ours is one too
  if [ -t 1 ]; then printf '%s\n' "${TERM:-dumb}"; else echo dumb; fi >"$job/term"
  printf '%s\n' "${MODULES[*]}" >"$job/modules"
  [ ! -t 0 ] || touch "$job/tty"
  {
    printf 'umask 022\ncd -- %q || exit 125\n' "$CWD"
    for v in $(compgen -e | grep -E '^(RAILGATE|CTEST)_' || true); do
      printf 'export %s=%q\n' "$v" "${!v}"
    done
    # TCG runs the tests 8-16 times slower: their waits allow 10 times longer
    [ "$accel_name" = kvm ] || [ -n "${RAILGATE_TEST_WAIT_SCALE:-}" ] ||
      printf 'export RAILGATE_TEST_WAIT_SCALE=10\n'
    printf 'exec'
    printf ' %q' "$@"
    printf '\n'
  } >"$job/cmd"
}

# KVM runs a stock kernel only with the CPU's own virtualization behind it
# (kvm_intel, kvm_amd): a /dev/kvm served by another module (kvm_pvm, which
# runs only guests built for it) fails the guest's first atomic instruction
# ("KVM internal error ... emulation failure"). RAILGATE_VM_ACCEL=tcg|kvm
# chooses.
kvm_usable() {
  [ -c /dev/kvm ] && { exec 8<>/dev/kvm; } 2>/dev/null || return 1
  exec 8>&-
  [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]
}

t0=$(date +%s.%N)
accel=(-accel tcg -cpu max -smp 1)
accel_name=tcg
case ${RAILGATE_VM_ACCEL:-auto} in
auto) ! kvm_usable || accel_name=kvm ;;
kvm | tcg) accel_name=$RAILGATE_VM_ACCEL ;;
*) die "RAILGATE_VM_ACCEL=$RAILGATE_VM_ACCEL: auto, kvm or tcg" ;;
esac
[ "$accel_name" = tcg ] || accel=(-accel kvm -cpu host -smp 2)
fetch_kernel
fetch_qemu
build_initramfs
write_job "$@"

machine=(-M q35)
# the igb's backend sends to a socket no one binds: no host network, link up
[ "$sriov" = 0 ] || machine+=(-device 'pcie-root-port,id=rp0,chassis=1' -device 'igb,bus=rp0,netdev=igb0'
  -netdev "dgram,id=igb0,local.type=unix,local.path=$SCRATCH/igb.sock,remote.type=unix,remote.path=$SCRATCH/igb-peer.sock")

share() { # share TAG PATH [ro]: a virtio-9p export
  local o="local,id=fs_$1,path=${2//,/,,},security_model=none,multidevs=remap"
  [ "${3:-}" != ro ] || o+=",readonly=on"
  QARGS+=(-fsdev "$o" -device "virtio-9p-pci,fsdev=fs_$1,mount_tag=$1")
}
QARGS=("${machine[@]}" "${accel[@]}" -m 2G -nodefaults -no-user-config -display none -no-reboot
  -L "$QDIR/root/usr/share/qemu"
  -bios qboot.rom -kernel "$KDIR/vmlinux" -initrd "$IDIR/initramfs.cpio"
  -append "console=ttyS0 $([ "${RAILGATE_VM_DEBUG:-0}" = 1 ] || echo quiet loglevel=4) panic=-1"
  -serial "file:$SCRATCH/console.log"
  -device 'virtio-serial-pci,id=vser' -chardev 'stdio,id=out' -device 'virtconsole,chardev=out')
share root / ro
share modules "$KDIR/root/lib/modules/$KVER" ro
share job "$SCRATCH/job"
[ "$CWD" = / ] || share cwd "$CWD"

limit=$(timeout_seconds)
t1=$(date +%s.%N)
# timeout forwards a TERM from cleanup to QEMU; --foreground lets QEMU read
# a terminal on stdin
timeout --foreground "$limit" "$QEMU" "${QARGS[@]}" <&0 &
QEMU_PID=$!
qrc=0
wait "$QEMU_PID" || qrc=$?
QEMU_PID=
t2=$(date +%s.%N)

qver=$("$QEMU" --version | sed -n '1s/^QEMU emulator version \(\S*\).*/\1/p')
summary="kernel $KVER, QEMU $qver, $accel_name, ${machine[*]:0:2}$([ "$sriov" = 0 ] || echo ' + igb')"
if [ ! -f "$SCRATCH/job/rc" ]; then
  tail -n 40 "$SCRATCH/console.log" >&2 || true
  if [ -f "$SCRATCH/job/started" ]; then
    [ "$qrc" != 124 ] || die "$summary: CMD ran out of time (${limit}s; RAILGATE_VM_TIMEOUT, RAILGATE_TEST_WAIT_SCALE)"
    die "$summary: CMD started but left no exit status (QEMU exit $qrc)"
  fi
  die "$summary: the guest never started CMD (QEMU exit $qrc; the kernel's console is above)"
fi
[ "${RAILGATE_VM_DEBUG:-0}" != 1 ] || cat "$SCRATCH/console.log" >&2
rc=$(cat "$SCRATCH/job/rc")
say "$(awk -v s="$summary" -v a="$t0" -v b="$t1" -v c="$t2" -v up="$(cat "$SCRATCH/job/started")" -v rc="$rc" \
  'BEGIN { printf "%s: setup %.1fs, CMD started at %.1fs guest uptime, exit %d after %.1fs in QEMU", s, b - a, up, rc, c - b }')"
exit "$rc"
