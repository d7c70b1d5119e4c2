#!/bin/sh
# blklab-capture.sh: record what blklab needs to model this machine's block
# devices, into one text file for `blklab import`. POSIX sh, no
# dependencies (lsblk and iostat are used when present), read-only: it only
# reads /proc and /sys and runs lsblk/iostat; it changes nothing.
#
#   sh blklab-capture.sh [OUTPUT]     # default: blklab-capture-<host>.txt
#
# The file is sections, each "== <section> [<name>]" then its lines:
#   meta      capture format, date, host name
#   kernel    uname -r, uname -v, /proc/cmdline
#   device X  model, vendor, size, queue/*, queue/iosched/* as path=value
#   lsblk     lsblk's table (bytes)
#   cgroup X  the io.* files of cgroup v2 directory X (those with settings)
#   diskstats /proc/diskstats, twice, SAMPLE seconds apart (iostat's input)
#   iostat    iostat -x output when sysstat is installed
set -u
out=${1:-blklab-capture-$(uname -n).txt}
SAMPLE=${SAMPLE:-5}
LC_ALL=C
export LC_ALL

# Prints name=value for each readable regular file in directory $1 whose
# value is one line, prefixed with $2.
attrs() {
    for f in "$1"/*; do
        [ -f "$f" ] && [ -r "$f" ] || continue
        v=$(head -c 4096 "$f" 2>/dev/null | head -n 2) || continue
        case "$v" in *"
"*) continue ;; esac
        printf '%s%s=%s\n' "$2" "${f##*/}" "$v"
    done
}

capture() {
    echo "== meta"
    echo "format=blklab-capture 1"
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(uname -n)"
    echo "== kernel"
    echo "release=$(uname -r)"
    echo "version=$(uname -v)"
    echo "machine=$(uname -m)"
    [ -r /proc/cmdline ] && echo "cmdline=$(cat /proc/cmdline)"
    for d in /sys/block/*; do
        [ -d "$d/queue" ] || continue
        name=${d##*/}
        case "$name" in loop*|ram*|zram*|dm-*|md*|sr*|fd*|nbd*) continue ;; esac
        echo "== device $name"
        [ -r "$d/size" ] && echo "size_sectors=$(cat "$d/size")"
        [ -r "$d/dev" ] && echo "dev=$(cat "$d/dev")"
        for a in model vendor rev serial firmware_rev transport; do
            [ -r "$d/device/$a" ] && echo "device/$a=$(cat "$d/device/$a" | sed 's/ *$//')"
        done
        [ -r "$d/device/numa_node" ] && echo "device/numa_node=$(cat "$d/device/numa_node")"
        drv=$(readlink "$d/device/driver" 2>/dev/null) && echo "device/driver=${drv##*/}"
        [ -d "$d/mq" ] && echo "nr_hw_queues=$(ls "$d/mq" | wc -l | tr -d ' ')"
        attrs "$d/queue" "queue/"
        [ -d "$d/queue/iosched" ] && attrs "$d/queue/iosched" "queue/iosched/"
    done
    if command -v lsblk >/dev/null 2>&1; then
        echo "== lsblk"
        lsblk -b -o NAME,KNAME,TYPE,SIZE,ROTA,MODEL,TRAN,MOUNTPOINT 2>&1
    fi
    if [ -r /sys/fs/cgroup/cgroup.controllers ]; then
        find /sys/fs/cgroup -maxdepth 4 -type d 2>/dev/null | while read -r c; do
            set -- "$c"/io.max "$c"/io.weight "$c"/io.bfq.weight "$c"/io.latency "$c"/io.cost.qos "$c"/io.cost.model
            lines=""
            for f in "$@"; do
                [ -r "$f" ] || continue
                v=$(cat "$f" 2>/dev/null) || continue
                [ -n "$v" ] || continue
                lines="$lines$(echo "$v" | sed "s|^|${f##*/}: |")
"
            done
            if [ -n "$lines" ]; then
                echo "== cgroup ${c#/sys/fs/cgroup}"
                printf '%s' "$lines"
            fi
        done
    fi
    echo "== diskstats 0"
    cat /proc/diskstats
    sleep "$SAMPLE"
    echo "== diskstats $SAMPLE"
    cat /proc/diskstats
    if command -v iostat >/dev/null 2>&1; then
        echo "== iostat"
        iostat -x -d "$SAMPLE" 2 2>&1
    fi
    echo "== end"
}

capture > "$out" || exit 1
echo "blklab-capture: wrote $out" >&2
