#!/bin/bash
# Builds blklab's guest for one kernel: Debian's stock kernel (vmlinuz, and
# the ELF inside it that QEMU boots), an initramfs holding the modules
# blklab needs, busybox, blkgen, blktrace/blkparse/btt and the guest init,
# and fio with the shared libraries only it needs in an archive of its own
# (fio.cpio), which a cell's initrd carries when its workload is fio.
#
# Nothing in it comes from the host's installed packages: the kernel is the
# package kernels.lock pins for the series and flavour, the programs and
# libraries come from the build root of userland.lock (build-root.sh), blkgen
# is built statically in that root, and every step that writes image bytes
# (dpkg-deb, depmod, busybox --list, ldd, cpio) runs inside it. So every host
# builds the same bytes from the same commit.
#
# The result is cached by a hash of every input (the pins and the project's
# sources) under
#   ${BLKLAB_CACHE:-~/.cache/blklab}/image/<series>-<flavour>-<hash>/
# and build/images/<series>-<flavour> points at it; a cached image needs
# neither the archive nor the build root. The initramfs is reproducible:
# sorted entries, fixed timestamps, owner root, inode numbers renumbered.
#
# Usage: build-image.sh [--kernel SERIES-FLAVOUR | FLAVOUR]
#   e.g. --kernel 6.12-cloud-amd64; a bare flavour means the default series
#   (guest-images/kernel-series). Default: the default series' amd64.
#   build-image.sh --key --kernel K prints the image's cache key and stops.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cache=${BLKLAB_CACHE:-$HOME/.cache/blklab}
build=${BLKLAB_BUILD:-$repo/build}
kernel=amd64
only_key=0
die() { echo "build-image.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --kernel) [ $# -ge 2 ] || die "--kernel needs a value"; kernel=$2; shift 2 ;;
        --key) only_key=1; shift ;;
        *) echo "build-image.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

# shellcheck source=guest-images/guest-apt.sh
source "$here/guest-apt.sh"
# shellcheck source=guest-images/build-root.sh
source "$here/build-root.sh"

# The kernel: "<series>-<flavour>" or a flavour of the default series,
# one line of kernels.lock.
kernels_lock=$here/kernels.lock
case "$kernel" in
    [0-9]*) ;;
    *) kernel=$(default_series)-$kernel ;;
esac
series=${kernel%%-*}
flavour=${kernel#*-}
kline=$(lock_entries "$kernels_lock" | awk -v s="$series" -v f="$flavour" '$1 == s && $2 == f')
if [ -z "$kline" ]; then
    echo "build-image.sh: --kernel '$kernel' is not pinned in guest-images/kernels.lock;" \
         "allowed: $(lock_entries "$kernels_lock" | awk '{printf "%s%s-%s", (NR > 1 ? ", " : ""), $1, $2}')" \
         "(or a bare flavour for series $(default_series))" >&2
    exit 2
fi
read -r _ _ kpkg kver_pkg ksum <<<"$kline"
kernel_release=${kpkg#linux-image-}

# Files fixed in time: every entry of the initramfs gets this mtime.
export SOURCE_DATE_EPOCH=0
export LC_ALL=C
# Modes of the directories and files the build creates, whatever the
# caller's umask (cpio records them).
umask 022

# The guest's drivers, each with the Kconfig symbol that builds it (named
# in messages, with its value read from the package's config-*). A driver
# is a module of the package (copied with its modules.dep closure), built
# into the kernel (listed in modules.builtin; busybox's modprobe then
# succeeds without a file), or missing.
# Every guest needs these; a flavour without one is an error.
# crct10dif_generic and crc64_rocksoft_generic are soft dependencies of
# crc-t10dif and crc64-rocksoft (modules.softdep), which nvme and sd_mod need.
core_drivers="virtio_pci:VIRTIO_PCI virtio_console:VIRTIO_CONSOLE
    mq-deadline:MQ_IOSCHED_DEADLINE kyber-iosched:MQ_IOSCHED_KYBER bfq:IOSCHED_BFQ
    crct10dif_generic:CRYPTO_CRCT10DIF crc64_rocksoft_generic:CRYPTO_CRC64_ROCKSOFT"
# The drivers of each device kind (scenario [[device]] kind; guest-images/init
# loads them). A flavour that lacks one still builds: image.json records the
# kind as missing that driver, and the harness rejects a scenario that pairs
# the flavour with the kind.
kind_drivers="nvme=nvme:BLK_DEV_NVME
    ide-hd=ata_piix:ATA_PIIX,sd_mod:BLK_DEV_SD
    ahci-hd=ahci:SATA_AHCI,sd_mod:BLK_DEV_SD
    virtio-blk=virtio_blk:VIRTIO_BLK"
# The drivers a guest with the applications' root ([guest] apps) needs:
# its squashfs on a virtio-blk disk (virtio_blk is a device kind's driver,
# already in the initramfs) and the filesystems applications run on. They
# go into an archive of their own, apps.cpio, with a modules.dep of both
# archives' modules that replaces the initramfs's when a cell's initrd
# carries it, so that the initramfs of every other cell stays as it was.
# crc32c_generic: ext4's and jbd2's checksums (modules.softdep names
# crypto-crc32c; qemu64 has no SSE4.2 for crc32c-intel).
apps_drivers="squashfs:SQUASHFS ext4:EXT4_FS xfs:XFS_FS crc32c_generic:CRYPTO_CRC32C"
# Programs of the build root copied with their shared libraries.
root_programs="/usr/sbin/blktrace /usr/bin/blkparse /usr/bin/btt"
# fio and the libraries only it needs (70 of 102 MB, its I/O engines'
# libraries among them) go into an archive of their own, fio.cpio, which
# the harness adds to the initrd of a cell whose workload is fio: a guest's
# kernel unpacks all of its initrd into RAM, at a cost of host seconds under
# TCG and of memory the workload's page cache then lacks.
fio_programs="/usr/bin/fio"

pinned_version() {
    lock_entries "$userland_lock" | awk -v p="$1" '$1 == p {print $2}'
}

# Hash of every input: the kernel pin, the userland pins, blkgen's key (the
# root and the sources), the guest init and the scripts that build it.
inputs=$( {
    echo "kernel $kline"
    echo "userland.lock $(sha256sum < "$userland_lock" | cut -d' ' -f1)"
    echo "blkgen $(blkgen_key)"
    echo "init $(sha256sum < "$here/init" | cut -d' ' -f1)"
    echo "capture $(sha256sum < "$here/../tools/blklab-capture.sh" | cut -d' ' -f1)"
    echo "build-image.sh $(sha256sum < "$0" | cut -d' ' -f1)"
    echo "build-root.sh $(sha256sum < "$here/build-root.sh" | cut -d' ' -f1)"
    echo "vmlinux-from-bzimage.py $(sha256sum < "$here/vmlinux-from-bzimage.py" | cut -d' ' -f1)"
} )
hash=$(printf '%s\n' "$inputs" | sha256sum | cut -c1-16)
dest=$cache/image/$kernel-$hash
if [ $only_key = 1 ]; then
    echo "$kernel-$hash"
    exit 0
fi

link_result() {
    mkdir -p "$build/images"
    ln -sfn "$dest" "$build/images/$kernel"
    echo "image: $build/images/$kernel -> $dest"
}

if [ -f "$dest/image.json" ]; then
    link_result
    exit 0
fi

echo "image: building $kernel-$hash"
fetch_pinned guest-images/kernels.lock "$kpkg $kver_pkg $ksum"
kdeb=$(compgen -G "$debs/${kpkg}_${kver_pkg//:/%3a}_*.deb" | head -n1)
build_blkgen
ensure_root
# One image at a time in the root; the work tree is /blklab-image inside it.
exec 8>"$cache/guest-root/.lock"
flock 8
work=$build_root/blklab-image
rm -rf "$work"
trap 'rm -rf "$work"' EXIT
root=$work/root
kx=$work/kernel
mkdir -p "$root" "$kx"
cp "$kdeb" "$work/kernel.deb"
inroot "$build_root" dpkg-deb -x /blklab-image/kernel.deb /blklab-image/kernel
# Packages of a merged-/usr release (trixie) keep the modules under
# /usr/lib/modules; the guest and depmod -b look in /lib/modules.
if [ -d "$kx/usr/lib/modules/$kernel_release" ] && [ ! -e "$kx/lib/modules/$kernel_release" ]; then
    mkdir -p "$kx/lib/modules"
    mv "$kx/usr/lib/modules/$kernel_release" "$kx/lib/modules/"
fi

# Drivers: each one's state in the package, then the modules.dep closure
# of those that are modules, then a depmod of the subset so busybox's
# modprobe finds them in the guest.
inroot "$build_root" depmod -b /blklab-image/kernel "$kernel_release"
moddir=lib/modules/$kernel_release
kconfig=$kx/boot/config-$kernel_release
[ -f "$kconfig" ] || { echo "build-image.sh: $kpkg has no boot/config-$kernel_release" >&2; exit 1; }

# driver_state NAME: module, builtin or missing.
driver_state() {
    local pat="(^|/)${1//-/[-_]}\.ko(\.xz)?"
    if grep -qE "${pat}:" "$kx/$moddir/modules.dep"; then
        echo module
    elif grep -qE "${pat}\$" "$kx/$moddir/modules.builtin"; then
        echo builtin
    else
        echo missing
    fi
}
# kconfig_line SYMBOL: "CONFIG_X=m", "CONFIG_X is not set" or "CONFIG_X absent".
kconfig_line() {
    local line
    line=$(grep -E "^(# )?CONFIG_$1[= ]" "$kconfig" | head -1 | sed 's/^# //')
    echo "${line:-CONFIG_$1 absent from config-$kernel_release}"
}

declare -A state config
drivers_json=""
note_driver() {  # note_driver NAME SYMBOL
    [ -n "${state[$1]:-}" ] && return 0
    state[$1]=$(driver_state "$1")
    config[$1]=$(kconfig_line "$2")
    drivers_json+="${drivers_json:+,}
    \"$1\": {\"state\": \"${state[$1]}\", \"config\": \"${config[$1]}\"}"
}
for entry in $core_drivers; do
    d=${entry%%:*}
    note_driver "$d" "${entry#*:}"
    # A symbol the series does not have at all (crc64-rocksoft came with
    # 6.0) is nothing this kernel needs.
    if [ "${state[$d]}" = missing ] && [[ ${config[$d]} != *" absent from "* ]]; then
        echo "build-image.sh: flavour $flavour: $kpkg $kver_pkg has no driver $d, which every" \
             "blklab guest needs: no $d.ko in the package and not in modules.builtin" \
             "(${config[$d]})" >&2
        exit 1
    fi
done
kinds_json=""
runnable=""
for entry in $kind_drivers; do
    kind=${entry%%=*}
    names="" missing=""
    for pair in $(echo "${entry#*=}" | tr ',' ' '); do
        d=${pair%%:*}
        note_driver "$d" "${pair#*:}"
        names+="${names:+, }\"$d\""
        if [ "${state[$d]}" = missing ]; then
            missing+="${missing:+, }\"$d\""
            echo "image: flavour $flavour cannot run $kind devices: $kpkg $kver_pkg has no" \
                 "driver $d (${config[$d]})"
        fi
    done
    [ -z "$missing" ] && runnable+=" $kind"
    kinds_json+="${kinds_json:+,}
    \"$kind\": {\"drivers\": [$names], \"missing\": [$missing]}"
done
if [ -z "$runnable" ]; then
    echo "build-image.sh: flavour $flavour: $kpkg $kver_pkg can run none of blklab's device" \
         "kinds (see the lines above)" >&2
    exit 1
fi

want=$(
    for d in "${!state[@]}"; do
        [ "${state[$d]}" = module ] || continue
        grep -E "(^|/)${d//-/[-_]}\.ko(\.xz)?:" "$kx/$moddir/modules.dep" | tr -d ':' | tr ' ' '\n'
    done | sed '/^$/d' | sort -u
)
# Compressed modules (6.12 ships .ko.xz) go in decompressed, so that
# busybox's modprobe loads them as it loads 6.1's.
for rel in $want; do
    case "$rel" in
        *.ko.xz)
            mkdir -p "$(dirname "$root/$moddir/$rel")"
            inroot "$build_root" busybox xz -dc "/blklab-image/kernel/$moddir/$rel" \
                > "$root/$moddir/${rel%.xz}"
            chmod 0644 "$root/$moddir/${rel%.xz}" ;;
        *.ko) install -D -m 0644 "$kx/$moddir/$rel" "$root/$moddir/$rel" ;;
        *) die "$kpkg: module $rel is compressed in a way the image does not unpack" ;;
    esac
done
cp "$kx/$moddir/modules.order" "$kx/$moddir/modules.builtin" \
   "$kx/$moddir/modules.builtin.modinfo" "$root/$moddir/"
inroot "$build_root" depmod -b /blklab-image/root "$kernel_release"
rm -f "$root/$moddir"/*.bin

# apps.cpio: the applications' drivers that are modules and are not in the
# initramfs already, and the modules.* files of a depmod over both.
appsroot=$work/apps
union=$work/union
mkdir -p "$appsroot/$moddir" "$union/lib/modules"
cp -a "$root/$moddir" "$union/lib/modules/"
for entry in $apps_drivers; do
    d=${entry%%:*}
    case $(driver_state "$d") in
        module)
            for rel in $(grep -E "(^|/)${d//-/[-_]}\.ko(\.xz)?:" "$kx/$moddir/modules.dep" |
                         tr -d ':' | tr ' ' '\n' | sed '/^$/d'); do
                [ -e "$root/$moddir/${rel%.xz}" ] && continue
                mkdir -p "$(dirname "$appsroot/$moddir/${rel%.xz}")"
                case "$rel" in
                    *.ko.xz) inroot "$build_root" busybox xz -dc "/blklab-image/kernel/$moddir/$rel" \
                                 > "$appsroot/$moddir/${rel%.xz}" ;;
                    *.ko) cp "$kx/$moddir/$rel" "$appsroot/$moddir/$rel" ;;
                    *) die "$kpkg: module $rel is compressed in a way the image does not unpack" ;;
                esac
                chmod 0644 "$appsroot/$moddir/${rel%.xz}"
            done ;;
        builtin) ;;
        *) die "flavour $flavour: $kpkg $kver_pkg has no driver $d, which the applications'" \
               "root needs ($(kconfig_line "${entry#*:}"))" ;;
    esac
done
cp -a "$appsroot/lib" "$union/"
inroot "$build_root" depmod -b /blklab-image/union "$kernel_release"
for f in "$union/$moddir"/modules.*; do
    case "$f" in
        *.bin) ;;
        *) cmp -s "$f" "$root/$moddir/${f##*/}" || cp "$f" "$appsroot/$moddir/" ;;
    esac
done
rm -rf "$union"

# Userland, all from the build root: busybox with one link per applet,
# blkgen, the root's programs and their libraries (ldd in the root) at the
# paths the dynamic loader looks in.
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" \
         "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/run" \
         "$root/etc/blklab" "$root/job"
install -m 0755 "$build_root/bin/busybox" "$root/bin/busybox"
for applet in $(inroot "$build_root" /bin/busybox --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
# Without its debug information (11.6 of its 14.5 MB), which nothing in the
# guest reads and every cell's kernel would unpack; the symbols stay.
install -m 0755 "$blkgen" "$root/usr/bin/blkgen"
inroot "$build_root" strip --strip-debug /blklab-image/root/usr/bin/blkgen
install -m 0755 "$jobpoint" "$root/usr/bin/blklab-jobpoint"
inroot "$build_root" strip --strip-debug /blklab-image/root/usr/bin/blklab-jobpoint
root_files() {  # root_files PROGRAM...: them and their libraries
    local p
    for p in "$@"; do
        echo "$p"
        inroot "$build_root" ldd "$p" | awk '/=>/ {print $3} /^[ \t]*\/lib64\// {print $1}'
    done | sort -u
}
# shellcheck disable=SC2086 # the lists are words
for f in $(root_files $root_programs); do
    install -D -m 0755 "$build_root$(inroot "$build_root" readlink -f "$f")" "$root$f"
done
fioroot=$work/fio
mkdir -p "$fioroot"
# shellcheck disable=SC2086
for f in $(root_files $fio_programs); do
    [ -e "$root$f" ] || install -D -m 0755 "$build_root$(inroot "$build_root" readlink -f "$f")" "$fioroot$f"
done
install -m 0755 "$here/init" "$root/init"
# What a customer runs to describe their machine (scenario.capture runs it
# in the guest, so blklab can make a customer's bundle in the open).
install -m 0755 "$here/../tools/blklab-capture.sh" "$root/usr/bin/blklab-capture"

# What is inside, for every result's manifest.
cat > "$root/etc/blklab/image.json" <<EOF
{
  "kernel": "$kernel",
  "kernel_series": "$series",
  "flavour": "$flavour",
  "kernel_package": "$kpkg",
  "kernel_package_version": "$kver_pkg",
  "kernel_release": "$kernel_release",
  "busybox_version": "$(pinned_version busybox-static)",
  "fio_version": "$(pinned_version fio)",
  "blktrace_version": "$(pinned_version blktrace)",
  "userland_lock_sha256": "$(sha256sum < "$userland_lock" | cut -d' ' -f1)",
  "blkgen_sha256": "$(sha256sum < "$blkgen" | cut -d' ' -f1)",
  "drivers": {$drivers_json
  },
  "device_kinds": {$kinds_json
  }
}
EOF

# archive DIR: the tree under /blklab-image/DIR as a reproducible cpio.
archive() {
    inroot "$build_root" sh -ec 'cd "/blklab-image/$1"
        find . -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
        find . -mindepth 1 | sort | cpio --quiet -o -H newc -R 0:0 --reproducible' sh "$1"
}
archive root > "$work/initramfs.cpio"
archive fio > "$work/fio.cpio"
archive apps > "$work/apps.cpio"

install -m 0644 "$kx/boot/vmlinuz-$kernel_release" "$work/vmlinuz"
# The kernel ELF inside it, which QEMU boots through its PVH entry: the
# same kernel without its decompressor (the script says why).
install -m 0755 "$here/vmlinux-from-bzimage.py" "$work/vmlinux-from-bzimage.py"
inroot "$build_root" python3 /blklab-image/vmlinux-from-bzimage.py \
    /blklab-image/vmlinuz /blklab-image/vmlinux
# The kernel's own config: the harness checks scenarios against it.
install -m 0644 "$kconfig" "$work/config"
{
    sed '$d' "$root/etc/blklab/image.json" | sed '$ s/$/,/'
    printf '  "hash": "%s",\n  "initramfs_sha256": "%s",\n  "fio_cpio_sha256": "%s",\n  "apps_cpio_sha256": "%s",\n  "vmlinuz_sha256": "%s",\n  "vmlinux_sha256": "%s"\n}\n' \
        "$hash" "$(sha256sum < "$work/initramfs.cpio" | cut -d' ' -f1)" \
        "$(sha256sum < "$work/fio.cpio" | cut -d' ' -f1)" \
        "$(sha256sum < "$work/apps.cpio" | cut -d' ' -f1)" \
        "$(sha256sum < "$work/vmlinuz" | cut -d' ' -f1)" \
        "$(sha256sum < "$work/vmlinux" | cut -d' ' -f1)"
} > "$work/image.json"
printf '%s\n' "$inputs" > "$work/inputs.txt"

mkdir -p "$work/out"
mv "$work/vmlinuz" "$work/vmlinux" "$work/initramfs.cpio" "$work/fio.cpio" "$work/apps.cpio" \
   "$work/image.json" "$work/inputs.txt" \
   "$work/config" "$work/out/"
mkdir -p "$cache/image"
rm -rf "$dest"
mv "$work/out" "$dest"
link_result
