#!/bin/sh
# guest_vs_fio.sh: blkgen's IOPS over fio's for the same job, same device,
# one run each (issue 6's benchmark). The job: 4K random reads, QD32,
# io_uring, O_DIRECT, time based. POSIX sh only, so it runs under the
# guest's busybox.
#
# usage: guest_vs_fio.sh DEVICE_OR_FILE [RUNTIME]
#   RUNTIME  fio time (default 10s)
# environment:
#   BLKGEN   blkgen binary (default: blkgen on PATH, else beside this script's
#            build: ../../build/cmake/workload/blkgen)
#   FIO      fio binary (default: fio)
#   SIZE     region for a regular file (default 1G; a device uses all of it)
#   REPEAT   runs of each, alternating fio and blkgen; medians are compared
#            (default 1)
#   OUTDIR   where the JSON reports go (default: a new directory in /tmp)
# Prints one line per run and a final "ratio blkgen/fio = X.XX".
set -eu

die() { echo "guest_vs_fio.sh: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: guest_vs_fio.sh DEVICE_OR_FILE [RUNTIME]"
target=$1
runtime=${2:-10s}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${BLKGEN:-}" ]; then
  if command -v blkgen >/dev/null 2>&1; then
    BLKGEN=$(command -v blkgen)
  else
    BLKGEN=$here/../../build/cmake/workload/blkgen
  fi
fi
FIO=${FIO:-fio}
REPEAT=${REPEAT:-1}
[ -x "$BLKGEN" ] || die "no blkgen at $BLKGEN (set BLKGEN=)"
command -v "$FIO" >/dev/null 2>&1 || die "no fio ($FIO; set FIO=)"
[ -b "$target" ] || [ -f "$target" ] || die "$target is neither a block device nor a file"
OUTDIR=${OUTDIR:-$(mktemp -d /tmp/guest_vs_fio.XXXXXX)}
mkdir -p "$OUTDIR"

# The job, in option syntax both tools share.
set -- --name=randread --filename="$target" --rw=randread --bs=4k --iodepth=32 \
  --ioengine=io_uring --direct=1 --runtime="$runtime" --time_based --randrepeat=1 \
  --output-format=json
if [ -f "$target" ]; then set -- "$@" --size="${SIZE:-1G}"; fi

# read.iops of the first job: the first "iops" key of the report (fio writes
# "iops" : N, blkgen "iops": N).
read_iops() {
  sed -n 's/^ *"iops" *: *\([0-9.e+]*\),*$/\1/p' "$1" | head -n 1
}

median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
                                      else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

: >"$OUTDIR/fio.iops"
: >"$OUTDIR/blkgen.iops"
i=1
while [ "$i" -le "$REPEAT" ]; do
  for tool in fio blkgen; do
    if [ "$tool" = fio ]; then bin=$FIO; else bin=$BLKGEN; fi
    report=$OUTDIR/$tool.$i.json
    "$bin" "$@" --output="$report" >/dev/null || die "$tool failed (report: $report)"
    iops=$(read_iops "$report")
    [ -n "$iops" ] || die "no read iops in $report"
    echo "$iops" >>"$OUTDIR/$tool.iops"
    printf '%-6s run %d: %s IOPS\n' "$tool" "$i" "$iops"
  done
  i=$((i + 1))
done

fio_iops=$(median <"$OUTDIR/fio.iops")
blkgen_iops=$(median <"$OUTDIR/blkgen.iops")
echo "target $target, 4K randread QD32 io_uring direct, runtime $runtime, runs $REPEAT"
echo "fio    $fio_iops IOPS ($("$FIO" --version 2>/dev/null || echo fio))"
echo "blkgen $blkgen_iops IOPS ($("$BLKGEN" --version))"
awk -v b="$blkgen_iops" -v f="$fio_iops" 'BEGIN { printf "ratio blkgen/fio = %.2f\n", b / f }'
echo "reports in $OUTDIR"
