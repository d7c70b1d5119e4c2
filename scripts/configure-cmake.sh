#!/bin/bash
# configure-cmake.sh BUILD_DIR [CMAKE_ARG...]: configures the repository's
# CMake tree in BUILD_DIR against the pinned headers (scripts/pinned-headers.sh),
# unless it is already configured with the same arguments. A tree configured
# with other arguments or other headers is configured afresh: CMake keeps the
# packages it found in its cache, so a new prefix alone would not reach them.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: configure-cmake.sh BUILD_DIR [CMAKE_ARG...]" >&2; exit 2; }
dir=$1
shift
prefix=$("$repo/scripts/pinned-headers.sh")
args=(-S "$repo" -B "$dir" -G Ninja "-DCMAKE_PREFIX_PATH=$prefix" "$@")
stamp=$dir/.blklab-configure
want=$(printf '%s\n' "${args[@]}" "CC=${CC:-}" "CXX=${CXX:-}")
if [[ -f $dir/build.ninja && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
    exit 0
fi
rm -f "$dir/CMakeCache.txt" "$stamp"
cmake "${args[@]}"
printf '%s\n' "$want" >"$stamp"
