#!/bin/bash
# configure-cmake.sh BUILD_DIR [CMAKE_ARG...]: configures the repository's
# CMake tree in BUILD_DIR against the pinned headers (scripts/pinned-headers.sh),
# unless it is already configured with the same arguments. A tree configured
# with other arguments or other headers is configured afresh: CMake keeps the
# packages it found in its cache, so a new prefix alone would not reach them.
#
# Every compile goes through ccache, its cache under $BLKLAB_CACHE/ccache
# beside QEMU's and the images: a fresh clone (CI's, a second checkout)
# compiles nothing another checkout on this machine compiled from the same
# sources and flags. Paths under the checkout are hashed relative to it
# (CCACHE_BASEDIR), and the working directory is not hashed
# (CCACHE_NOHASHDIR): devmodel's and blkgen's CMakeLists map the checkout
# and the build tree out of debug info and __FILE__ (-ffile-prefix-map), so
# an object compiled in another checkout is the same bytes. ccache returns
# the compiler's own output, so what runs does not change with it. The
# guest's blkgen is built elsewhere (guest-images/build-root.sh, without
# ccache) and the QEMU's libdevmodel by qemu-patches/build-qemu.sh.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: configure-cmake.sh BUILD_DIR [CMAKE_ARG...]" >&2; exit 2; }
dir=$1
shift
prefix=$("$repo/scripts/pinned-headers.sh")
cache=$(realpath -m "${BLKLAB_CACHE:-$HOME/.cache/blklab}")
command -v ccache >/dev/null || { echo "configure-cmake.sh: ccache is missing (make deps installs it)" >&2; exit 1; }
launcher="env;CCACHE_DIR=$cache/ccache;CCACHE_BASEDIR=$repo;CCACHE_NOHASHDIR=1;ccache"
args=(-S "$repo" -B "$dir" -G Ninja "-DCMAKE_PREFIX_PATH=$prefix"
      "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" "$@")
stamp=$dir/.blklab-configure
want=$(printf '%s\n' "${args[@]}" "CC=${CC:-}" "CXX=${CXX:-}")
if [[ -f $dir/build.ninja && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
    exit 0
fi
rm -f "$dir/CMakeCache.txt" "$stamp"
cmake "${args[@]}"
printf '%s\n' "$want" >"$stamp"
