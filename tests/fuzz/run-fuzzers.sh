#!/bin/bash
# Runs blklab's libFuzzer targets: first every input checked in under
# tests/fuzz/<target>/ (seeds and crash regressions; any failure fails), then
# SECONDS of fuzzing per target starting from them. New inputs go to
# build/fuzz/<target>/corpus, crashes to build/fuzz/<target>/ (as
# crash-<sha1>): after fixing the bug, copy the crash file into
# tests/fuzz/<target>/ so it stays a regression input. To keep new coverage,
# merge: <binary> -merge=1 tests/fuzz/<target> build/fuzz/<target>/corpus
#
# Usage: run-fuzzers.sh BUILD_DIR SECONDS TARGET...
set -euo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 BUILD_DIR SECONDS TARGET..." >&2
    exit 2
fi
build=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$here/../.." && pwd)/build/fuzz
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# The same limits for every run: inputs up to 4 KiB from the start (the
# targets read a profile and a request stream from them), 2 GiB of memory,
# 30 s per input.
common=(-max_len=4096 -len_control=0 -rss_limit_mb=2048 -timeout=30)

# One target: its checked-in inputs, then SECONDS of fuzzing. Returns
# non-zero on a failure, having said why on stderr.
fuzz_target() {
    local target=$1 bin corpus start runs rate
    bin=$(find "$build" -name "$target" -type f -perm -u+x | head -n 1)
    corpus=$here/$target
    if [ -z "$bin" ]; then
        echo "run-fuzzers: $target is not built in $build" >&2
        return 2
    fi
    mkdir -p "$out/$target/corpus"
    start=$(date +%s)
    echo "== $target: $(ls "$corpus" | wc -l) checked-in inputs"
    if ! "$bin" "${common[@]}" -runs=0 "$corpus" >"$out/$target/regressions.log" 2>&1; then
        tail -n 60 "$out/$target/regressions.log" >&2
        echo "run-fuzzers: $target fails on a checked-in input (log: $out/$target/regressions.log)" >&2
        return 1
    fi
    if ! "$bin" "${common[@]}" -max_total_time="$seconds" -print_final_stats=1 \
            -artifact_prefix="$out/$target/" "$out/$target/corpus" "$corpus" \
            >"$out/$target/fuzz.log" 2>&1; then
        grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)' "$out/$target/fuzz.log" | tail -n 60 >&2
        echo "run-fuzzers: $target found a bug; input saved as $(ls -t "$out/$target"/crash-* \
            "$out/$target"/timeout-* "$out/$target"/oom-* "$out/$target"/leak-* 2>/dev/null \
            | head -n 1) (log: $out/$target/fuzz.log)" >&2
        return 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$target/fuzz.log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$target/fuzz.log")
    echo "== $target: ok, $runs runs ($rate/s), $(( $(date +%s) - start )) s"
}

# The targets fuzz at once, one process each (SECONDS is wall time, so on
# a machine with a core per target each gets the same work as alone); what
# each says is printed in turn once all have ended.
pids=()
for target in "$@"; do
    mkdir -p "$out/$target"
    fuzz_target "$target" >"$out/$target/run.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
done
for target in "$@"; do
    cat "$out/$target/run.log"
done
exit $status
