#!/bin/sh
# Builds and runs the devmodel benchmarks; prints the median cost per request
# (5 repetitions) and the model memory of the sparse 4 TiB case.
# Usage: devmodel/scripts/bench.sh [build-dir]   (default: build/cmake-devmodel)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/../build/cmake-devmodel}
cmake --build "$build" --target devmodel_bench -j2 >/dev/null
bench=$(find "$build" -name devmodel_bench -type f -perm -u+x | head -n 1)
"$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
         --benchmark_format=console 2>&1 |
  awk '/preconditioned/ { print; next }
       /_median/ || /SparseMemory/ || /Precondition64/ { print }'
echo "targets: SSD <= 200 ns median per request; HDD, cloud <= 100 ns; sparse model < 128 MiB"
