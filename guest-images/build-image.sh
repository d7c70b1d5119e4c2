#!/bin/bash
# Builds blklab's guest: Debian's stock kernel (vmlinuz) and an initramfs
# holding the modules blklab needs, busybox, blkgen, fio with its shared
# libraries, blktrace/blkparse/btt and the guest init.
#
# The result is cached by a hash of every input under
#   ${BLKLAB_CACHE:-~/.cache/blklab}/image/<flavour>-<hash>/
# and build/images/<flavour> points at it. The initramfs is reproducible:
# the same inputs give the same bytes (sorted entries, fixed timestamps,
# owner root, inode numbers renumbered).
#
# Usage: build-image.sh [--flavour amd64|cloud-amd64|rt-amd64] --blkgen PATH
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cache=${BLKLAB_CACHE:-$HOME/.cache/blklab}
build=${BLKLAB_BUILD:-$repo/build}
flavour=amd64
blkgen=""

while [ $# -gt 0 ]; do
    case "$1" in
        --flavour) flavour=$2; shift 2 ;;
        --blkgen) blkgen=$2; shift 2 ;;
        *) echo "build-image.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
case "$flavour" in
    amd64|cloud-amd64|rt-amd64) ;;
    *) echo "build-image.sh: --flavour '$flavour' is not one of amd64, cloud-amd64, rt-amd64" >&2; exit 2 ;;
esac
if [ -z "$blkgen" ] || [ ! -x "$blkgen" ]; then
    echo "build-image.sh: --blkgen must name the built blkgen binary (got '$blkgen')" >&2
    exit 2
fi

# Files fixed in time: every entry of the initramfs gets this mtime.
export SOURCE_DATE_EPOCH=0
export LC_ALL=C

# The guest's drivers, each with the Kconfig symbol that builds it (named
# in messages, with its value read from the package's config-*). A driver
# is a module of the package (copied with its modules.dep closure), built
# into the kernel (listed in modules.builtin; busybox's modprobe then
# succeeds without a file), or missing.
# Every guest needs these; a flavour without one is an error.
# crct10dif_generic and crc64_rocksoft_generic are soft dependencies of
# crc-t10dif and crc64-rocksoft (modules.softdep), which nvme and sd_mod need.
core_drivers="virtio_pci:VIRTIO_PCI virtio_console:VIRTIO_CONSOLE
    kyber-iosched:MQ_IOSCHED_KYBER bfq:IOSCHED_BFQ
    crct10dif_generic:CRYPTO_CRCT10DIF crc64_rocksoft_generic:CRYPTO_CRC64_ROCKSOFT"
# The drivers of each device kind (scenario [[device]] kind; guest-images/init
# loads them). A flavour that lacks one still builds: image.json records the
# kind as missing that driver, and the harness rejects a scenario that pairs
# the flavour with the kind.
kind_drivers="nvme=nvme:BLK_DEV_NVME
    ide-hd=ata_piix:ATA_PIIX,sd_mod:BLK_DEV_SD
    ahci-hd=ahci:SATA_AHCI,sd_mod:BLK_DEV_SD"
# Host programs copied with their shared libraries.
host_programs="/usr/bin/fio /usr/sbin/blktrace /usr/bin/blkparse /usr/bin/btt"

pkg_version() {
    dpkg-query -W -f='${Version}' "$1"
}

# Resolve the kernel package behind the flavour's metapackage, e.g.
# linux-image-amd64 -> linux-image-6.1.0-57-amd64 (version 6.1.192-3).
meta=linux-image-$flavour
kpkg=$(apt-cache depends "$meta" 2>/dev/null |
       awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
    echo "build-image.sh: apt knows no kernel behind $meta; run 'make deps' (apt-get update)" >&2
    exit 1
fi
kver_pkg=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')
kernel_release=${kpkg#linux-image-}

debs=${BLKLAB_DEBS:-$cache/debs}
mkdir -p "$debs"
kdeb=$(ls "$debs/${kpkg}_${kver_pkg//:/%3a}_amd64.deb" 2>/dev/null || true)
if [ -z "$kdeb" ]; then
    echo "image: downloading $kpkg $kver_pkg"
    (cd "$debs" && apt-get download "$kpkg=$kver_pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
    kdeb=$(ls "$debs/${kpkg}_"*"_amd64.deb" | grep -F "_${kver_pkg//:/%3a}_" | head -1)
fi
[ -f "$kdeb" ] || { echo "build-image.sh: could not download $kpkg" >&2; exit 1; }

# Hash of every input: the kernel package, the copied host files (with
# their libraries), blkgen, the guest init and this script.
host_files() {
    local p
    for p in $host_programs; do
        echo "$p"
        ldd "$p" | awk '/=>/ {print $3} /^[ \t]*\/lib64\// {print $1}'
    done | sort -u
}
inputs=$( {
    echo "flavour $flavour"
    echo "kernel $kpkg $kver_pkg $(sha256sum < "$kdeb" | cut -d' ' -f1)"
    echo "busybox $(sha256sum < /bin/busybox | cut -d' ' -f1)"
    for f in $(host_files); do echo "$f $(sha256sum < "$f" | cut -d' ' -f1)"; done
    echo "blkgen $(sha256sum < "$blkgen" | cut -d' ' -f1)"
    echo "init $(sha256sum < "$here/init" | cut -d' ' -f1)"
    echo "capture $(sha256sum < "$here/../tools/blklab-capture.sh" | cut -d' ' -f1)"
    echo "script $(sha256sum < "$0" | cut -d' ' -f1)"
} )
hash=$(printf '%s\n' "$inputs" | sha256sum | cut -c1-16)
dest=$cache/image/$flavour-$hash

link_result() {
    mkdir -p "$build/images"
    ln -sfn "$dest" "$build/images/$flavour"
    echo "image: $build/images/$flavour -> $dest"
}

if [ -f "$dest/image.json" ]; then
    link_result
    exit 0
fi

echo "image: building $flavour-$hash"
mkdir -p "$cache/image"
work=$(mktemp -d "$cache/image/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
kx=$work/kernel
mkdir -p "$root" "$kx"
dpkg-deb -x "$kdeb" "$kx"

# Drivers: each one's state in the package, then the modules.dep closure
# of those that are modules, then a depmod of the subset so busybox's
# modprobe finds them in the guest.
depmod -b "$kx" "$kernel_release"
moddir=lib/modules/$kernel_release
kconfig=$kx/boot/config-$kernel_release
[ -f "$kconfig" ] || { echo "build-image.sh: $kpkg has no boot/config-$kernel_release" >&2; exit 1; }

# driver_state NAME: module, builtin or missing.
driver_state() {
    local pat="(^|/)${1//-/[-_]}\.ko"
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
    if [ "${state[$d]}" = missing ]; then
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
        grep -E "(^|/)${d//-/[-_]}\.ko:" "$kx/$moddir/modules.dep" | tr -d ':' | tr ' ' '\n'
    done | sed '/^$/d' | sort -u
)
for rel in $want; do
    install -D -m 0644 "$kx/$moddir/$rel" "$root/$moddir/$rel"
done
cp "$kx/$moddir/modules.order" "$kx/$moddir/modules.builtin" \
   "$kx/$moddir/modules.builtin.modinfo" "$root/$moddir/"
depmod -b "$root" "$kernel_release"
rm -f "$root/$moddir"/*.bin

# Userland: busybox with one link per applet, blkgen, host programs and
# their libraries at the paths the dynamic loader looks in.
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" \
         "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/run" \
         "$root/etc/blklab" "$root/job"
install -m 0755 /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
install -m 0755 "$blkgen" "$root/usr/bin/blkgen"
for f in $(host_files); do
    install -D -m 0755 "$(readlink -f "$f")" "$root$f"
done
install -m 0755 "$here/init" "$root/init"
# What a customer runs to describe their machine (scenario.capture runs it
# in the guest, so blklab can make a customer's bundle in the open).
install -m 0755 "$here/../tools/blklab-capture.sh" "$root/usr/bin/blklab-capture"

# What is inside, for every result's manifest.
fio_version=$(pkg_version fio)
cat > "$root/etc/blklab/image.json" <<EOF
{
  "flavour": "$flavour",
  "kernel_package": "$kpkg",
  "kernel_package_version": "$kver_pkg",
  "kernel_release": "$kernel_release",
  "busybox_version": "$(pkg_version busybox-static)",
  "fio_version": "$fio_version",
  "blktrace_version": "$(pkg_version blktrace)",
  "blkgen_sha256": "$(sha256sum < "$blkgen" | cut -d' ' -f1)",
  "drivers": {$drivers_json
  },
  "device_kinds": {$kinds_json
  }
}
EOF

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
(cd "$root" && find . -mindepth 1 | sort |
    cpio --quiet -o -H newc -R 0:0 --reproducible > "$work/initramfs.cpio")

install -m 0644 "$kx/boot/vmlinuz-$kernel_release" "$work/vmlinuz"
{
    sed '$d' "$root/etc/blklab/image.json" | sed '$ s/$/,/'
    printf '  "hash": "%s",\n  "initramfs_sha256": "%s",\n  "vmlinuz_sha256": "%s"\n}\n' \
        "$hash" "$(sha256sum < "$work/initramfs.cpio" | cut -d' ' -f1)" \
        "$(sha256sum < "$work/vmlinuz" | cut -d' ' -f1)"
} > "$work/image.json"
printf '%s\n' "$inputs" > "$work/inputs.txt"

mkdir -p "$work/out"
mv "$work/vmlinuz" "$work/initramfs.cpio" "$work/image.json" "$work/inputs.txt" "$work/out/"
rm -rf "$dest"
mv "$work/out" "$dest"
link_result
