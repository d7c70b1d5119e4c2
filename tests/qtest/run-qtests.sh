#!/usr/bin/env bash
# Runs QEMU's own disk qtests against build/qemu (made by
# qemu-patches/build-qemu.sh): ide-test (PIIX IDE on pc), ahci-test (ICH9 AHCI
# on q35), the nvme and virtio-serial-pci paths of qos-test (pc),
# blklab-nvme-test (NVMe completions at the device model's deadline, a lost
# command taken back by an SQ deletion or a reset, a controller failed by a
# reset fault until the host resets it, and a
# stall counted from the origin the guest sets through blklab-jobpoint),
# blklab-ide-test (PIIX IDE and AHCI/NCQ completions at the model's deadlines),
# the virtio-blk-pci path of qos-test, blklab-virtio-blk-test (virtio-blk
# completions at the model's deadline), x86-cmpxchg-flags-test (the flags
# CMPXCHG16B/8B keep under TCG, with and without icount) and icount-rate-test
# (-icount rate=R runs R instructions per ns).
#
# Usage: tests/qtest/run-qtests.sh [SUITE...]
#   SUITE: ide ahci nvme virtio-serial virtio-blk blklab-nvme blklab-ide
#   blklab-virtio-blk x86-cmpxchg icount-rate
#   (default: all).
#   Prints one line per suite with its time and exits non-zero if any suite
#   fails, runs no test, or its log holds a sanitizer report.
# Environment: BLKLAB_BUILD (default <repo>/build), BLKLAB_QEMU_DIR (the
#   build to test, default $BLKLAB_BUILD/qemu; $BLKLAB_BUILD/qemu-asan is the
#   sanitizer build of `make qemu-asan`), BLKLAB_QTEST_TIMEOUT (seconds per
#   suite, default 600), BLKLAB_QTEST_KEEP_LOGS=1.
#   For a sanitizer build (manifest.json "variant": "sanitize") ASAN_OPTIONS,
#   LSAN_OPTIONS and UBSAN_OPTIONS default to tests/sanitizers.env.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
qemu_dir="${BLKLAB_QEMU_DIR:-${BLKLAB_BUILD:-$repo_root/build}/qemu}"
timeout_s="${BLKLAB_QTEST_TIMEOUT:-600}"
qos_bus=/x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus

if [[ ! -x $qemu_dir/bin/qemu-system-x86_64 ]]; then
    echo "run-qtests: no QEMU in $qemu_dir; run 'make qemu' first" >&2
    exit 2
fi
export QTEST_QEMU_BINARY="$qemu_dir/bin/qemu-system-x86_64"
export QTEST_QEMU_IMG="$qemu_dir/bin/qemu-img"

# Prints the value tests/sanitizers.env gives a variable.
sanitizers_env() {
    # shellcheck source=../sanitizers.env disable=SC2034
    (BLKLAB_REPO=$repo_root && . "$repo_root/tests/sanitizers.env" && printf '%s' "${!1}")
}
report_re=$(sanitizers_env BLKLAB_SANITIZER_REPORT_RE)
if grep -q '"variant": "sanitize"' "$qemu_dir/manifest.json" 2>/dev/null; then
    ASAN_OPTIONS=${ASAN_OPTIONS:-$(sanitizers_env ASAN_OPTIONS)}
    LSAN_OPTIONS=${LSAN_OPTIONS:-$(sanitizers_env LSAN_OPTIONS)}
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-$(sanitizers_env UBSAN_OPTIONS)}
    export ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
    echo "run-qtests: sanitizer build; ASAN_OPTIONS=$ASAN_OPTIONS" \
        "LSAN_OPTIONS=$LSAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS"
fi

# Sets cmd to the qos-test command for the tests under a path, or to ()
# if there are none. GLib's -p does not select qos-test's tests by suite
# prefix, so each is named.
qos_cmd() {
    local path
    cmd=()
    while read -r path; do
        cmd+=(-p "$path")
    done < <("$qemu_dir/qtest/qos-test" -l | grep "^$1/")
    [[ ${#cmd[@]} -eq 0 ]] || cmd=("$qemu_dir/qtest/qos-test" "${cmd[@]}")
}

# Sets cmd to the test command of a suite.
suite_cmd() {
    case $1 in
        ide) cmd=("$qemu_dir/qtest/ide-test") ;;
        ahci) cmd=("$qemu_dir/qtest/ahci-test") ;;
        nvme) qos_cmd "$qos_bus/nvme" ;;
        virtio-serial) qos_cmd "$qos_bus/virtio-serial-pci" ;;
        virtio-blk) qos_cmd "$qos_bus/virtio-blk-pci" ;;
        blklab-nvme) cmd=("$qemu_dir/qtest/blklab-nvme-test") ;;
        blklab-ide) cmd=("$qemu_dir/qtest/blklab-ide-test") ;;
        blklab-virtio-blk) cmd=("$qemu_dir/qtest/blklab-virtio-blk-test") ;;
        x86-cmpxchg) cmd=("$qemu_dir/qtest/x86-cmpxchg-flags-test") ;;
        icount-rate) cmd=("$qemu_dir/qtest/icount-rate-test") ;;
    esac
}

suites=("$@")
[[ ${#suites[@]} -gt 0 ]] || suites=(ide ahci nvme virtio-serial virtio-blk blklab-nvme blklab-ide
                                      blklab-virtio-blk x86-cmpxchg icount-rate)
for s in "${suites[@]}"; do
    case $s in
        ide | ahci | nvme | virtio-serial | virtio-blk | blklab-nvme | blklab-ide | \
            blklab-virtio-blk | x86-cmpxchg | icount-rate) ;;
        *) echo "run-qtests: unknown suite $s" >&2; exit 2 ;;
    esac
done

# The tests create their images in TMPDIR; give them a private one.
work=$(mktemp -d "${TMPDIR:-/tmp}/blklab-qtest.XXXXXX")
export TMPDIR="$work"
if [[ ${BLKLAB_QTEST_KEEP_LOGS:-0} == 1 ]]; then
    trap 'echo "run-qtests: logs in $work" >&2' EXIT
else
    trap 'rm -rf "$work"' EXIT
fi

echo "run-qtests: $("$QTEST_QEMU_BINARY" --version | head -n1)"
failed=0
for s in "${suites[@]}"; do
    suite_cmd "$s"
    suite_log="$work/$s.log"
    start=$(date +%s.%N)
    rc=0
    if [[ ${#cmd[@]} -eq 0 ]]; then
        echo "no $s tests in qos-test -l" >"$suite_log"
    else
        timeout --kill-after=10 "$timeout_s" "${cmd[@]}" --tap >"$suite_log" 2>&1 || rc=$?
    fi
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    passed=$(grep -c '^ok ' "$suite_log" || true)
    notok=$(grep -c '^not ok ' "$suite_log" || true)
    # QEMU's stderr and the test's own go to the suite log.
    reports=$(grep -c -E "$report_re" "$suite_log" || true)
    if [[ $reports -ne 0 ]]; then
        failed=1
        printf 'FAIL %-14s %6s s  %d passed, %d failed, exit %d, %d sanitizer report lines\n' \
            "$s" "$secs" "$passed" "$notok" "$rc" "$reports"
        grep -E -m 5 -A 30 "$report_re" "$suite_log" | sed 's/^/    /'
    elif [[ $rc -ne 0 || $notok -ne 0 || $passed -eq 0 ]]; then
        failed=1
        printf 'FAIL %-14s %6s s  %d passed, %d failed, exit %d\n' \
            "$s" "$secs" "$passed" "$notok" "$rc"
        tail -n 30 "$suite_log" | sed 's/^/    /'
    else
        printf 'PASS %-14s %6s s  %d passed\n' "$s" "$secs" "$passed"
    fi
done
exit "$failed"
