#!/bin/sh
# Builds and runs the devmodel benchmarks; prints medians over 5 repetitions:
# cost per request (Time = wall, CPU = this thread), the 1 TiB SSD's setup,
# model / malloc-heap / resident memory of the sparse 4 TiB cases, and the
# time to precondition 64 GiB (built directly; simulated:1 = replayed), and
# the SSD's cost in units of this host's memory latency (one dependent
# random load from a 1 GiB huge-page table, the L2P's shape).
# Usage: devmodel/scripts/bench.sh [build-dir] [extra benchmark flags]
#        (default build-dir: build/cmake-devmodel)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/../build/cmake-devmodel}
[ $# -gt 0 ] && shift
cmake --build "$build" --target devmodel_bench -j2 >/dev/null
bench=$(find "$build" -name devmodel_bench -type f -perm -u+x | head -n 1)
"$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
         --benchmark_format=console "$@" 2>&1 |
  awk '/preconditioned/ || /_median/ { print }
       # the SSD against one dependent random load from 1 GiB, in this run
       /^BM_Ssd1TiBSteadyMixed_median/ { ssd = $2 }
       /^BM_RandomLoad1GiBFloor\/dependent:1_median/ { floor = $2 }
       END { if (ssd && floor) printf "SSD cost per request / dependent 1 GiB load: %.2f\n", ssd / floor }'
echo "targets: SSD <= 200 ns median per request; HDD, cloud <= 100 ns; sparse model < 128 MiB;"
echo "         64 GiB preconditioning <= a few seconds"
