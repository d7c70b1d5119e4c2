#!/usr/bin/env bash
# Checks the second supported host, Debian 13 (trixie), from this Debian
# host: `make test-host-debian13`. Not part of `make test` (it builds QEMU
# from source in the root: 17 to 38 minutes on 2 cores).
#
#  1. A minimal Debian 13 root made by debootstrap from the host's own apt
#     entries (scripts/debian-apt.sh derives the suites; no mirror is written
#     down), kept in $BLKLAB_CACHE/host-debian13/root and reused.
#  2. In the root, what the README asks of a fresh machine: `apt-get install
#     make git`, a fresh `git clone` of this checkout's HEAD, `make deps`,
#     the builds (`make qemu cmake image apps`, from source: the root's
#     HOME has its own ~/.cache/blklab) and the two scenarios, both
#     deterministic: tests/host/debian13.toml (blkgen on one NVMe SSD on a
#     device model, the four schedulers) and tests/host/debian13-app.toml
#     (one application cell: MariaDB and sysbench oltp_insert on ext4 made
#     in the guest, on the applications' image).
#  3. On the host, in this checkout: `make qemu cmake image apps` and the
#     same scenarios.
#  4. tests/host/same_cells.py, per scenario: the root's cells must be the
#     host's bytes (all but the host keys), the application's own results
#     included, and built from the same guest image and applications'
#     image (cache key and SHA-256), or the check fails naming the first
#     keys.
#
# Shared with the root, to save downloads only: the host's
# ~/.cache/blklab/qemu/downloads (Debian's qemu source package, meson and
# firmware .debs) and ~/.cache/blklab/debs (the guest's pinned .debs, each
# checked against its lock's SHA-256) are copied into the root's cache
# before its builds; the builds themselves run from source in the root.
# --fresh-downloads copies nothing, so the root fetches everything itself.
#
# Usage: tests/host/debian13.sh [--fresh-downloads] [--jobs N]
#   --jobs N: cells run in parallel on each side (blklab run --jobs;
#   default one per core).
# Needs root (debootstrap, chroot, mount), a clean checkout (the root
# clones HEAD, so uncommitted changes would be checked on one side only).
# Writes results/host-debian13/<UTC time>/timings.txt and the runs
# {host,debian13}/<scenario>/ (<scenario>: debian13, debian13-app).
# Environment: BLKLAB_CACHE (default ~/.cache/blklab).
set -euo pipefail

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=$(realpath -m "${BLKLAB_CACHE:-$HOME/.cache/blklab}")
release=trixie
# The root's own apt entries: the release and its updates and security suites.
root_suites=("$release" "$release-updates" "$release-security")
root=$cache/host-debian13/root
scenarios=(tests/host/debian13.toml tests/host/debian13-app.toml)
checkout=/root/blklab  # the fresh clone, inside the root
PYTHON=/usr/bin/python3

log() { printf 'host-debian13: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=../../scripts/debian-apt.sh
source "$repo/scripts/debian-apt.sh"

usage="usage: $0 [--fresh-downloads] [--jobs N]"
share_downloads=1
jobs_arg=""  # blklab run's --jobs, the same on both sides
while [[ $# -gt 0 ]]; do
    case $1 in
        --fresh-downloads) share_downloads=0 ;;
        --jobs)
            [[ ${2:-} =~ ^[1-9][0-9]*$ ]] ||
                die "--jobs takes a whole number of cells, 1 or more (got '${2:-}'); $usage"
            jobs_arg="--jobs $2"
            shift ;;
        *) die "unknown argument '$1'; $usage" ;;
    esac
    shift
done

out=$repo/results/host-debian13/$(date -u +%Y%m%dT%H%M%SZ)
timings=$out/timings.txt

# timed STEP COMMAND...: runs COMMAND, records its wall time under STEP.
timed() {
    local step=$1 start rc=0
    shift
    log "$step: $*"
    start=$(date +%s)
    "$@" || rc=$?
    printf '%-28s %5d s%s\n' "$step" "$(( $(date +%s) - start ))" \
        "$([[ $rc -eq 0 ]] || echo "  (failed, exit $rc)")" >>"$timings"
    [[ $rc -eq 0 ]] || log "$step failed (exit $rc); the root stays in $root for a look"
    return "$rc"
}

# On every exit: the root's mounts undone, the steps' wall times shown.
finish() {
    unmount_all
    if [[ -s ${timings:-} ]]; then
        log "wall time per step ($timings):"
        cat "$timings" >&2
    fi
}

preflight() {
    local c dirty
    [[ $EUID -eq 0 ]] || die "needs root (debootstrap, chroot and mount); run it as root"
    for c in debootstrap chroot git mount umount; do
        command -v "$c" >/dev/null ||
            die "$c is missing: 'make deps' installs it (or apt-get install ${c/chroot/coreutils})"
    done
    [[ -x $PYTHON ]] || die "$PYTHON is missing: apt-get install python3"
    dirty=$(git -C "$repo" status --porcelain --untracked-files=no)
    [[ -z $dirty ]] || die "the checkout has uncommitted changes, which the root's clone of
HEAD would not have:
$dirty
Commit or stash them, then run this again"
    # Fails with derive_sources' own message when an entry is missing.
    derive_sources --binary "${root_suites[@]}" >/dev/null ||
        die "cannot derive the $release entries of the root from this host's apt entries"
}

# mirror_of DERIVED: the URI and components of the first entry for $release.
mirror_of() {
    awk -v rel="$release" '
        /^deb / { i = ($2 ~ /^\[/) ? 3 : 2
                  while ($i !~ /^[a-z]+:\/\// && i < NF) i++
                  if ($(i + 1) == rel) { comps = ""
                      for (j = i + 2; j <= NF; j++) comps = comps (comps ? "," : "") $j
                      print $i, comps; exit } }
        /^Types:/ { uri = ""; suites = ""; comps = "" }
        /^URIs:/ { uri = $2 }
        /^Suites:/ { suites = " " substr($0, 8) " " }
        /^Components:/ { comps = substr($0, 13); gsub(/[ \t]+/, ",", comps) }
        /^$/ && uri != "" && suites ~ " " rel " " { print uri, comps; exit }
        END { if (uri != "" && suites ~ " " rel " ") print uri, comps }' <<<"$1" | head -n1
}

# keyring_of DERIVED: the Signed-By keyring of the entries, if one is named.
keyring_of() {
    sed -n -e 's/^Signed-By: *\(\/.*\)/\1/p' \
        -e 's/^deb \[.*signed-by=\([^] ]*\).*/\1/p' <<<"$1" | head -n1
}

# make_root: debootstraps the Debian 13 root unless it exists; a half-made
# one (killed debootstrap) is left in root.partial-* and started over.
make_root() {
    local derived uri comps keyring work opts=()
    if [[ -f $root/.blklab-host-root ]]; then
        log "reusing the $release root $root"
        return 0
    fi
    derived=$(derive_sources --binary "$release") || exit 1
    read -r uri comps < <(mirror_of "$derived") ||
        die "no $release entry with a URI in: $derived"
    keyring=$(keyring_of "$derived")
    [[ -z $keyring ]] || opts+=(--keyring="$keyring")
    [[ -z $comps ]] || opts+=(--components="$comps")
    work=$(mktemp -d "$cache/host-debian13/root.partial-XXXXXX")
    # mktemp's 0700 would be the root's "/": no user but root (apt's _apt,
    # libvirt-qemu) could reach anything in it.
    chmod 0755 "$work"
    log "debootstrap --variant=minbase $release from $uri ($comps) into $work"
    if ! debootstrap --variant=minbase --arch=amd64 "${opts[@]}" \
            "$release" "$work" "$uri" >"$work.log" 2>&1; then
        tail -n 30 "$work.log" >&2
        die "debootstrap of the $release root failed (log above, $work.log); $work is left as it is"
    fi
    touch "$work/.blklab-host-root" && mv -T "$work" "$root" &&
        mv "$work.log" "$root.debootstrap.log" || die "could not move $work to $root"
}

# The mounts of the root, undone in reverse order on every exit.
mounted=()
unmount_all() {
    local i
    for (( i = ${#mounted[@]} - 1; i >= 0; i-- )); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" ||
            log "could not unmount ${mounted[i]}"
    done
    mounted=()
}

# mount_root: /proc, /sys, /dev, /dev/pts and a /dev/shm of its own. Mounts
# left by a run killed with SIGKILL are undone first (the lock taken in main
# rules out a run going on now). The binds are slaves: nothing mounted under
# them reaches the host's /dev.
mount_root() {
    local m
    for m in dev/shm dev/pts dev sys proc; do
        if mountpoint -q "$root/$m"; then
            log "unmounting $root/$m, left by an earlier run"
            umount "$root/$m" || umount -l "$root/$m" || die "cannot unmount $root/$m"
        fi
    done
    for m in proc sys dev dev/pts dev/shm; do
        mkdir -p "$root/$m"
        case $m in
            proc) mount -t proc proc "$root/proc" ;;
            sys) mount -t sysfs sysfs "$root/sys" ;;
            dev|dev/pts) mount --bind "/$m" "$root/$m" && mount --make-rslave "$root/$m" ;;
            dev/shm) mount -t tmpfs -o mode=1777 shm "$root/dev/shm" ;;
        esac || die "cannot mount $root/$m"
        mounted+=("$root/$m")
    done
}

# inroot COMMAND...: runs a shell command line in the root as a fresh root
# login would, at the lowest priority (the machine is shared).
inroot() {
    nice -n 19 chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LC_ALL=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
        /bin/bash -euo pipefail -c "$*"
}

# setup_root: the root's apt entries (derived again each run, so the host's
# current entries count) and name resolution.
setup_root() {
    local derived
    derived=$(derive_sources --binary "${root_suites[@]}") || exit 1
    write_apt_sources "$root/etc/apt" "$derived" || true
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}

# clone_head: a fresh clone of this checkout's HEAD at $checkout in the root.
clone_head() {
    local bundle=$root/root/blklab.bundle
    git -C "$repo" bundle create "$bundle" HEAD 2>/dev/null
    inroot "rm -rf $checkout && git -c advice.detachedHead=false -c init.defaultBranch=main clone -q /root/blklab.bundle $checkout &&
            git -C $checkout log -1 --format='root checkout: %h %s'"
    rm -f "$bundle"
}

share_download_caches() {
    local d
    for d in qemu/downloads debs; do
        [[ -d $cache/$d ]] || continue
        mkdir -p "$root/root/.cache/blklab/$d"
        cp -a -n "$cache/$d/." "$root/root/.cache/blklab/$d/"
    done
}

# name_of SCENARIO: its file name without .toml, which names its runs.
name_of() { basename "$1" .toml; }

# The shell line that builds the guest image of each scenario's kernel,
# run from the checkout's top (the same line on both sides).
images_line() {
    local s
    for s in "${scenarios[@]}"; do
        # shellcheck disable=SC2016 # $(...) runs where the line runs
        printf 'make --no-print-directory image KERNEL=$(cd harness && %s -m blklab validate --kernel ../%s) && ' \
            "$PYTHON" "$s"
    done
    echo true
}

host_side() {
    local s
    timed "host: builds" nice -n 19 make -C "$repo" --no-print-directory qemu cmake
    timed "host: image" nice -n 19 bash -euo pipefail -c "cd '$repo' && $(images_line)"
    timed "host: make apps" nice -n 19 make -C "$repo" --no-print-directory apps
    for s in "${scenarios[@]}"; do
        timed "host: $(name_of "$s")" bash -c "cd '$repo/harness' &&
            $PYTHON -m blklab run '../$s' --no-report $jobs_arg --out '$out/host/$(name_of "$s")'"
    done
}

root_side() {
    timed "root: debootstrap" make_root
    mount_root
    setup_root
    timed "root: make and git" inroot "apt-get update -q && apt-get install -y -q make git"
    clone_head
    timed "root: make deps" inroot "cd $checkout && make deps"
    [[ $share_downloads -eq 0 ]] || share_download_caches
    timed "root: make qemu" inroot "cd $checkout && make qemu"
    timed "root: make cmake" inroot "cd $checkout && make cmake"
    timed "root: make image" inroot "cd $checkout && $(images_line)"
    timed "root: make apps" inroot "cd $checkout && make apps"
    for s in "${scenarios[@]}"; do
        timed "root: $(name_of "$s")" inroot "cd $checkout/harness &&
            $PYTHON -m blklab run ../$s --no-report $jobs_arg --out $checkout/results/host-debian13/$(name_of "$s")"
    done
    cp -a "$root$checkout/results/host-debian13" "$out/debian13"
    unmount_all
}

main() {
    local rc=0
    preflight
    trap finish EXIT
    trap 'exit 130' INT TERM
    mkdir -p "$cache/host-debian13"
    exec 7>"$cache/host-debian13/.lock"
    flock -n 7 || die "another run of this check holds $cache/host-debian13/.lock; wait for it"
    mkdir -p "$out"
    : >"$timings"
    # The root first: it is the long part, and the host's build is usually
    # cached by then (make test made it).
    root_side
    host_side
    for s in "${scenarios[@]}"; do
        log "$s: the Debian 13 root's cells against the host's"
        "$here/same_cells.py" "$out/host/$(name_of "$s")" "$out/debian13/$(name_of "$s")" \
            --names "Debian 12 host,Debian 13 root" || rc=1
    done
    log "runs in $out"
    [[ $rc -eq 0 ]] || die "the Debian 13 root's cells differ from the host's (above)"
}

main
