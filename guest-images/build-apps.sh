#!/bin/bash
# Builds the applications' root: a read-only squashfs image of the Debian
# packages apps.lock pins (MariaDB, PostgreSQL 15, etcd, sysbench, fio,
# sysstat, e2fsprogs, xfsprogs, udev, libbpf-tools, busybox), which a
# scenario's guest mounts from a model-timed disk of its own ([guest] apps),
# so that every byte an application reads from it arrives in virtual time.
# The guest's init runs an application job chrooted into it (guest-images/init).
#
# The packages are unpacked (dpkg-deb -x, no maintainer scripts) in the
# pinned build root (build-root.sh), what no program needs is left out
# (documentation, locales, PostgreSQL's JIT and LLVM bitcode, Python),
# guest-images/apps/ adds the few files a root needs (passwd, group,
# hostname, machine-id), and the root's own mksquashfs writes the image with
# every entry owned by root at time 0 and no extended attributes. The image
# is the same for every kernel; it is cached by a hash of its inputs under
#   ${BLKLAB_CACHE:-~/.cache/blklab}/apps/<hash>/{apps.squashfs,apps.json}
# and build/apps points at it.
#
# Usage: build-apps.sh [--key]   (--key prints the cache key and stops)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cache=${BLKLAB_CACHE:-$HOME/.cache/blklab}
build=${BLKLAB_BUILD:-$repo/build}
die() { echo "build-apps.sh: $*" >&2; exit 1; }
only_key=0
case "${1:-}" in
    --key) only_key=1 ;;
    "") ;;
    *) echo "build-apps.sh: unknown argument '$1'" >&2; exit 2 ;;
esac

# shellcheck source=guest-images/guest-apt.sh
source "$here/guest-apt.sh"
# shellcheck source=guest-images/build-root.sh
source "$here/build-root.sh"

export SOURCE_DATE_EPOCH=0
export LC_ALL=C
umask 022
apps_lock=$here/apps.lock

# Left out of the image: nothing in the guest reads them. PostgreSQL's JIT
# (llvmjit.so) is the only user of libLLVM, and jit=off is the default the
# guest runs with; Python comes with xfsprogs for xfs_scrub_all only.
prune=(usr/share/doc usr/share/man usr/share/info usr/share/locale usr/share/lintian
       usr/share/bug usr/share/bash-completion usr/share/zsh usr/share/i18n usr/include
       usr/lib/postgresql/15/lib/bitcode usr/lib/postgresql/15/lib/llvmjit.so
       usr/lib/postgresql/15/lib/llvmjit_types.bc
       'usr/lib/x86_64-linux-gnu/libLLVM-*' 'usr/lib/llvm-*'
       'usr/lib/python3*' 'usr/bin/python3*' usr/share/python3 'usr/lib/python3.*'
       'usr/share/perl*' 'usr/lib/x86_64-linux-gnu/perl*' usr/bin/perl 'usr/bin/perl5*'
       var/cache var/log)
# Directories the guest mounts over (guest-images/init).
mount_points=(proc sys dev tmp run data out job)

apps_files() {  # the files of guest-images/apps/, relative to it, sorted
    (cd "$here/apps" && find . -type f | LC_ALL=C sort)
}

inputs=$( {
    echo "apps.lock $(sha256sum < "$apps_lock" | cut -d' ' -f1)"
    echo "build root $(root_key)"
    echo "build-apps.sh $(sha256sum < "$0" | cut -d' ' -f1)"
    while read -r f; do
        echo "apps/$f $(sha256sum < "$here/apps/$f" | cut -d' ' -f1)"
    done < <(apps_files)
} )
hash=$(printf '%s\n' "$inputs" | sha256sum | cut -c1-16)
dest=$cache/apps/$hash
if [ $only_key = 1 ]; then
    echo "$hash"
    exit 0
fi
link_result() {
    mkdir -p "$build"
    ln -sfn "$dest" "$build/apps"
    echo "apps: $build/apps -> $dest"
}
if [ -f "$dest/apps.json" ]; then
    link_result
    exit 0
fi

echo "apps: building $hash"
entries=()
while read -r p v sum; do
    entries+=("$p $v $sum")
done < <(lock_entries "$apps_lock")
fetch_pinned guest-images/apps.lock "${entries[@]}"
ensure_root
exec 8>"$cache/guest-root/.lock"
flock 8
work=$build_root/blklab-apps
rm -rf "$work"
trap 'rm -rf "$work"' EXIT
tree=$work/tree
mkdir -p "$tree" "$work/debs"
for e in "${entries[@]}"; do
    read -r p v _ <<<"$e"
    cp "$(compgen -G "$debs/${p}_${v//:/%3a}_*.deb" | head -n1)" "$work/debs/$p.deb"
done
# In the lock's order (sorted), so that a file two packages ship comes out
# the same everywhere.
for e in "${entries[@]}"; do
    read -r p _ <<<"$e"
    inroot "$build_root" dpkg-deb -x "/blklab-apps/debs/$p.deb" /blklab-apps/tree
done
for pat in "${prune[@]}"; do
    # shellcheck disable=SC2086 # the patterns are globs
    (cd "$tree" && rm -rf $pat)
done
# busybox's applets where the packages put no program of that name.
for applet in $(inroot "$build_root" /blklab-apps/tree/bin/busybox --list); do
    [ -e "$tree/bin/$applet" ] || [ -e "$tree/usr/bin/$applet" ] ||
        [ -e "$tree/sbin/$applet" ] || [ -e "$tree/usr/sbin/$applet" ] ||
        ln -s busybox "$tree/bin/$applet"
done
for d in "${mount_points[@]}"; do
    mkdir -p "$tree/$d"
done
while read -r f; do
    install -D -m 0644 "$here/apps/$f" "$tree/$f"
done < <(apps_files)

ldso=/blklab-apps/tree/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
libs=/blklab-apps/tree/lib/x86_64-linux-gnu:/blklab-apps/tree/usr/lib/x86_64-linux-gnu
inroot "$build_root" "$ldso" --library-path "$libs" /blklab-apps/tree/usr/bin/mksquashfs \
    /blklab-apps/tree /blklab-apps/apps.squashfs -noappend -quiet -no-progress \
    -comp lz4 -Xhc -all-root -no-xattrs >"$work/mksquashfs.log" 2>&1 ||
    { tail -n 20 "$work/mksquashfs.log" >&2; die "mksquashfs failed (log above)"; }

pinned() { lock_entries "$apps_lock" | awk -v p="$1" '$1 == p {print $2}'; }
mkdir -p "$work/out"
mv "$work/apps.squashfs" "$work/out/"
cat > "$work/out/apps.json" <<EOF
{
  "hash": "$hash",
  "apps_lock_sha256": "$(sha256sum < "$apps_lock" | cut -d' ' -f1)",
  "squashfs_sha256": "$(sha256sum < "$work/out/apps.squashfs" | cut -d' ' -f1)",
  "squashfs_bytes": $(stat -c %s "$work/out/apps.squashfs"),
  "versions": {
    "mariadb": "$(pinned mariadb-server-core)",
    "postgresql": "$(pinned postgresql-15)",
    "etcd": "$(pinned etcd-server)",
    "sysbench": "$(pinned sysbench)",
    "fio": "$(pinned fio)",
    "sysstat": "$(pinned sysstat)",
    "e2fsprogs": "$(pinned e2fsprogs)",
    "xfsprogs": "$(pinned xfsprogs)",
    "udev": "$(pinned udev)",
    "libbpf-tools": "$(pinned libbpf-tools)"
  }
}
EOF
printf '%s\n' "$inputs" > "$work/out/inputs.txt"
mkdir -p "$cache/apps"
rm -rf "$dest"
mv "$work/out" "$dest"
link_result
