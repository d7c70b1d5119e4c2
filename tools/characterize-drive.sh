#!/bin/bash
# Runs blklab's characterization suite (tools/characterize/*.fio) on a real
# block device with plain fio, on your own machine: no blklab needed there.
# Writes OUT/<job>.json (fio --output-format=json) per job, OUT/<job>.log
# (fio's stderr), the fill job's bandwidth log under OUT/logs/, and
# OUT/characterize.json (the drive, the kernel, fio and the knobs).
# Then, where blklab is: blklab characterize --compare OUT RUN_DIR.
#
# THIS DESTROYS EVERY BYTE ON THE DEVICE. It refuses to run without the
# device path and --destroy-data, on a device that is mounted, in use
# (holders: LVM, md, dm-crypt) or swap, or when OUT already has results.
#
# Usage: tools/characterize-drive.sh --device /dev/nvme1n1 --destroy-data \
#            --out DIR [--runtime 30s] [--ramp 5s] [--fill-size 100%] \
#            [--job NAME]... [--list]
#   --runtime, --ramp   each timed job's measured time and the time before it
#                       (fio syntax; defaults: tools/characterize/defaults.env)
#   --fill-size SIZE    also run the fill job (first) over SIZE, e.g. 100%;
#                       a whole 1 TB drive takes some 10-20 minutes
#   --job NAME          run only this job (repeatable); --list names them
# Needs bash, fio 3.x (the version blklab's guest runs is in
# guest-images/userland.lock) with io_uring, and root for the device.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jobdir="$here/characterize"

die() { echo "characterize-drive: $*" >&2; exit 2; }

device="" destroy=0 out="" fill="" list=0 runtime="" ramp=""
jobs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --device) device=${2:?--device needs a path}; shift 2 ;;
        --device=*) device=${1#*=}; shift ;;
        --destroy-data) destroy=1; shift ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --out=*) out=${1#*=}; shift ;;
        --runtime) runtime=${2:?--runtime needs a time}; shift 2 ;;
        --runtime=*) runtime=${1#*=}; shift ;;
        --ramp) ramp=${2:?--ramp needs a time}; shift 2 ;;
        --ramp=*) ramp=${1#*=}; shift ;;
        --fill-size) fill=${2:?--fill-size needs a size}; shift 2 ;;
        --fill-size=*) fill=${1#*=}; shift ;;
        --job) jobs+=("${2:?--job needs a name}"); shift 2 ;;
        --job=*) jobs+=("${1#*=}"); shift ;;
        --list) list=1; shift ;;
        -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) die "unknown argument '$1' (--help)" ;;
    esac
done

# The knobs' defaults: one file, which blklab characterize reads too.
# shellcheck disable=SC1091  # tools/characterize/defaults.env
. "$jobdir/defaults.env"
RUNTIME=${runtime:-$RUNTIME}
RAMP=${ramp:-$RAMP}
FILL_SIZE=$fill
export RUNTIME RAMP FILL_SIZE

if [ $list = 1 ]; then
    for f in "$jobdir"/*.fio; do
        printf '%s: %s\n' "$(basename "$f" .fio)" "$(sed -n '/^[^;]/q;s/^; \{0,1\}//p' "$f" | tr '\n' ' ')"
    done
    exit 0
fi

# Which jobs: the fill first (it leaves the drive full, as the others
# expect), then those that only read, by name, on the drive as the fill
# left it (sequential reads meet pages in the order they were written, as
# on blklab's full drive), then those that write, by name.
if [ ${#jobs[@]} -eq 0 ]; then
    [ -n "$FILL_SIZE" ] && jobs+=(fill)
    writers=()
    for f in "$jobdir"/*.fio; do
        n=$(basename "$f" .fio)
        [ "$n" = fill ] && continue
        if grep -Eq '^rw=(write|randwrite|rw|readwrite|randrw|trim|randtrim|trimwrite)$' "$f"; then
            writers+=("$n")
        else
            jobs+=("$n")
        fi
    done
    jobs+=("${writers[@]}")
fi
for n in "${jobs[@]}"; do
    [ -f "$jobdir/$n.fio" ] || die "--job $n: no $jobdir/$n.fio (--list names the jobs)"
    if [ "$n" = fill ] && [ -z "$FILL_SIZE" ]; then
        die "--job fill needs --fill-size (e.g. 100% for the whole drive)"
    fi
done

# Safety first: the device, the flag, nothing on it in use.
[ -n "$device" ] || die "no --device: name the block device to destroy, e.g. --device /dev/nvme1n1"
[ -n "$out" ] || die "no --out: name a directory for the results"
[ -b "$device" ] || die "$device: not a block device"
[ $destroy = 1 ] || die "refusing to write to $device without --destroy-data: every byte on it is lost"
command -v fio > /dev/null || die "fio is not installed (Debian/Ubuntu: apt install fio)"
fio_version=$(fio --version)
case "$fio_version" in
    fio-3.*) ;;
    *) die "$fio_version: blklab reads fio 3.x's JSON; install fio 3.x" ;;
esac
real=$(readlink -f "$device")
name=$(basename "$real")
sys=/sys/class/block/$name
[ -d "$sys" ] || die "$device: no $sys"
parts=("$real")
for p in "$sys"/*/partition; do
    [ -f "$p" ] && parts+=("/dev/$(basename "$(dirname "$p")")")
done
for part in "${parts[@]}"; do
    [ -b "$part" ] || continue
    if grep -q "^$part " /proc/mounts; then
        die "$part is mounted: unmount it first (this script destroys $device)"
    fi
    if grep -q "^$part " /proc/swaps; then
        die "$part is in use as swap"
    fi
    pname=$(basename "$part")
    if [ -n "$(ls -A "/sys/class/block/$pname/holders" 2> /dev/null)" ]; then
        die "$part is held by another device (/sys/class/block/$pname/holders: LVM, md or dm-crypt)"
    fi
done
mkdir -p "$out"
for n in "${jobs[@]}"; do
    [ ! -e "$out/$n.json" ] || die "$out/$n.json exists (job $n): choose a new --out; nothing is overwritten"
done
[ ! -e "$out/characterize.json" ] || die "$out/characterize.json exists: choose a new --out"

model=$(sed 's/ *$//' "$sys/device/model" 2> /dev/null || true)
firmware=$(sed 's/ *$//' "$sys/device/firmware_rev" 2> /dev/null || true)
bytes=$(( $(cat "$sys/size") * 512 ))
scheduler=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$sys/queue/scheduler" 2> /dev/null || true)
echo "================================================================"
echo " ALL DATA ON $device WILL BE DESTROYED"
echo " model: ${model:-unknown}  firmware: ${firmware:-unknown}  size: $bytes bytes"
echo " jobs: ${jobs[*]}"
echo " Ctrl-C within 10 seconds to stop."
echo "================================================================"
sleep 10

json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
tmp="$out/.characterize.json.tmp"
{
    echo "{"
    echo "  \"device\": $(json_string "$device"),"
    echo "  \"model\": $(json_string "$model"),"
    echo "  \"firmware\": $(json_string "$firmware"),"
    echo "  \"size_bytes\": $bytes,"
    echo "  \"scheduler\": $(json_string "$scheduler"),"
    echo "  \"kernel\": $(json_string "$(uname -r)"),"
    echo "  \"fio\": $(json_string "$fio_version"),"
    echo "  \"knobs\": {\"RUNTIME\": $(json_string "$RUNTIME"), \"RAMP\": $(json_string "$RAMP"), \"FILL_SIZE\": $(json_string "$FILL_SIZE")},"
    echo "  \"jobs\": [$(printf '"%s",' "${jobs[@]}" | sed 's/,$//')],"
    echo "  \"started\": $(json_string "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
    echo "}"
} > "$tmp"
mv "$tmp" "$out/characterize.json"

mkdir -p "$out/logs"
for n in "${jobs[@]}"; do
    echo "== $n"
    # fio writes its logs (the fill's bandwidth log) where it runs.
    (cd "$out/logs" && fio --filename="$real" --output-format=json \
        --output="../.$n.json.tmp" "$jobdir/$n.fio" 2> "../$n.log") ||
        die "fio failed on job $n: $(tail -n 3 "$out/$n.log")"
    mv "$out/.$n.json.tmp" "$out/$n.json"
done
echo "results: $out"
echo "compare: blklab characterize --compare $out RUN_DIR"
