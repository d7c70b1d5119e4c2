#!/bin/bash
# Prints the CMake prefix (for CMAKE_PREFIX_PATH) of the header-only C++
# libraries pinned in scripts/host-headers.lock, downloading them by exact
# version and SHA-256 (through the guest images' private apt directory,
# derived from this machine's apt entries) and unpacking them once into
# ${BLKLAB_CACHE:-~/.cache/blklab}/headers/<hash of the lock>/.
# Used by scripts/configure-cmake.sh and qemu-patches/build-qemu.sh.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
here=$repo/guest-images
cache=${BLKLAB_CACHE:-$HOME/.cache/blklab}
lock_file=$repo/scripts/host-headers.lock
die() { echo "pinned-headers.sh: $*" >&2; exit 1; }
# shellcheck source=../guest-images/guest-apt.sh
source "$here/guest-apt.sh"

mapfile -t entries < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$lock_file")
[[ ${#entries[@]} -gt 0 ]] || die "$lock_file pins nothing"
key=$(sha256sum <"$lock_file" | cut -c1-16)
dest=$cache/headers/$key
if [[ ! -f $dest/.complete ]]; then
    mkdir -p "$cache/headers"
    exec 8>"$cache/headers/.lock"
    flock 8
    if [[ ! -f $dest/.complete ]]; then
        fetch_pinned scripts/host-headers.lock "${entries[@]}" >&2
        work=$(mktemp -d "$cache/headers/.unpack-$key.XXXXXX")
        for e in "${entries[@]}"; do
            read -r p v _ <<<"$e"
            dpkg-deb -x "$(compgen -G "$debs/${p}_${v//:/%3a}_*.deb" | head -n1)" "$work"
        done
        touch "$work/.complete"
        rm -rf "$dest"
        mv "$work" "$dest"
    fi
    exec 8>&-
fi
printf '%s\n' "$dest/usr"
