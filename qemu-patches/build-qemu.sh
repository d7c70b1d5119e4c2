#!/usr/bin/env bash
# Builds qemu-system-x86_64, qemu-img and the disk qtests from Debian's qemu
# 10.0 source package plus the patches in qemu-patches/series, caches the result
# in ${BLKLAB_CACHE:-~/.cache/blklab}/qemu/<key>/ and points build/qemu at it.
# <key> hashes the source and firmware versions, the series, this script, the
# variant, the libdevmodel sources QEMU links and the headers they compile
# against (scripts/host-headers.lock); a cached entry is reused without
# network access.
#
# Every input is pinned by exact version (qemu_pin, meson_pin,
# firmware_pins below), so Debian 12 and Debian 13 hosts build the same
# QEMU. The pins are looked up in pin_suites, derived from the host's own
# apt entries (same mirror, components and keyring; only the suite name
# changes; scripts/debian-apt.sh).
#
# With BLKLAB_QEMU_SANITIZE=1 it builds the sanitizer variant instead: QEMU
# configured with --enable-asan and --enable-ubsan (AddressSanitizer and
# UndefinedBehaviorSanitizer) and line tables, libdevmodel built with
# -fsanitize=address,undefined, cached in ${BLKLAB_CACHE}/qemu-asan/<key>/
# (its own key and lock) and linked as build/qemu-asan; build/qemu is not
# touched. `make qemu-asan` runs it; `make test SANITIZE=1` tests with it.
#
# Usage: build-qemu.sh              build or reuse, then link build/qemu
#                                   (build/qemu-asan for the sanitizer variant)
#        build-qemu.sh --extract DIR
#                                   unpack the patched source into DIR as a git
#                                   tree (one commit per patch) and stop
# Environment: BLKLAB_CACHE, BLKLAB_BUILD (default <repo>/build),
#   BLKLAB_JOBS (default: nproc), BLKLAB_APT_REFRESH=1 (re-read the archive
#   indices), BLKLAB_VERBOSE=1 (show configure and compiler output),
#   BLKLAB_QEMU_SANITIZE=1 (the sanitizer variant).
set -euo pipefail

# Debian's python3 and meson; the python3 first on PATH may be another build.
export PATH="/usr/bin:/bin:$PATH"
export LC_ALL=C

patch_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$patch_dir/$(basename "${BASH_SOURCE[0]}")"
repo_root=$(dirname "$patch_dir")
cache_root=$(realpath -m "${BLKLAB_CACHE:-$HOME/.cache/blklab}/qemu")
link_dir=$(realpath -m "${BLKLAB_BUILD:-$repo_root/build}")
jobs="${BLKLAB_JOBS:-$(nproc)}"
# The apt directory and the downloads are shared by both variants; each
# variant keeps its entries, work trees, logs and lock in entries_root.
apt_dir="$cache_root/apt"
# Debian's QEMU 10.0 as trixie ships it (bookworm-backports carries an
# older 10.0.x). The source has no python/wheels, and QEMU 10.0 needs
# meson >= 1.5 (bookworm has 1.0): meson_pin is unpacked from its .deb
# (architecture "all") and used by the build only.
qemu_pin="1:10.0.13+ds-0+deb13u1"
meson_pin="1.7.0-1"
# The suites that have the pins: trixie on a Debian 13 host is its own;
# a Debian 12 host derives it from its bookworm entry.
pin_suites=(trixie)
download_dir="$cache_root/downloads"
case ${BLKLAB_QEMU_SANITIZE:-0} in
    0) variant=release
       entries_root=$cache_root
       link_name=qemu
       version_tag="" ;;
    1) variant=sanitize
       entries_root=$(realpath -m "$cache_root/../qemu-asan")
       link_name=qemu-asan
       version_tag=", ASan+UBSan" ;;
    *) printf 'build-qemu: error: BLKLAB_QEMU_SANITIZE must be 0 or 1\n' >&2
       exit 1 ;;
esac

# Part of the cache key (this file is hashed). --prefix and --with-pkgversion
# are added per build.
configure_flags=(
    --target-list=x86_64-softmmu
    --without-default-features
    --without-default-devices
    --with-devices-x86_64=blklab
    --enable-kvm
    --enable-tools
    --enable-linux-io-uring
    --disable-user
    --disable-docs
    --disable-werror
    --disable-debug-info
    --disable-install-blobs
)
# Added for the sanitizer variant: QEMU 10.0's --enable-asan and
# --enable-ubsan (-fsanitize=address, -fsanitize=undefined; configure stops
# if the compiler lacks either); check_sanitized makes sure both reached the
# build. -g1 gives reports file:line without full debug info; frame pointers
# give ASan's fast unwinder whole allocation and free stacks. UBSan stays
# recoverable in QEMU's code: the runners set UBSAN_OPTIONS=halt_on_error=1
# (tests/sanitizers.env).
sanitize_configure_flags=(
    --enable-asan
    --enable-ubsan
    "--extra-cflags=-g1 -fno-omit-frame-pointer"
)
build_targets=(
    qemu-system-x86_64
    qemu-img
    tests/qtest/qos-test
    tests/qtest/ide-test
    tests/qtest/ahci-test
    tests/qtest/blklab-nvme-test
    tests/qtest/blklab-ide-test
    tests/qtest/blklab-virtio-blk-test
    tests/qtest/x86-cmpxchg-flags-test
    tests/qtest/icount-rate-test
)
# libdevmodel (blklab's device timing models) is built with the repository's
# CMake tree, static and position-independent, installed into a staging
# prefix inside the QEMU build directory and passed to configure as
# --devmodel=PREFIX. These are the files that build uses, relative to the
# repository root; all of them are hashed into <key>. Unit tests are not built.
devmodel_inputs=(CMakeLists.txt devmodel/CMakeLists.txt devmodel/include devmodel/src)
devmodel_cmake_flags=(
    -DCMAKE_BUILD_TYPE=Release
    -DBUILD_TESTING=OFF
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON
)
# The sanitizer variant: BLKLAB_SANITIZE (CMakeLists.txt) instruments the
# library with -fsanitize=address,undefined -fno-sanitize-recover=all, so UB
# in the model aborts QEMU with its report; RelWithDebInfo for file:line.
sanitize_devmodel_cmake_flags=(
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DBUILD_TESTING=OFF
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON
    -DBLKLAB_SANITIZE=ON
)
# Firmware QEMU loads at run time, as package:path from Debian's binary
# packages: SeaBIOS, the VGA BIOS, and the ROMs of the NICs "pc" and "q35"
# add by default. Pinned, as the firmware runs in the guest.
firmware_packages=(seabios ipxe-qemu)
declare -A firmware_pins=(
    [seabios]="1.16.3-2"
    [ipxe-qemu]="1.21.1+git20250501.dad20602+dfsg-1"
)
firmware_files=(
    seabios:/usr/share/seabios/bios-256k.bin
    seabios:/usr/share/seabios/vgabios-stdvga.bin
    ipxe-qemu:/usr/share/qemu/efi-e1000.rom
    ipxe-qemu:/usr/share/qemu/efi-e1000e.rom
)
# pc-bios/optionrom outputs, built with QEMU's own Makefile and the host's
# compiler (configure looks for an i386 cross compiler and, finding none,
# skips them); "-M pc -kernel" loads linuxboot_dma.bin and kvmvapic.bin.
option_roms=(linuxboot.bin linuxboot_dma.bin kvmvapic.bin multiboot.bin
             multiboot_dma.bin pvh.bin)

log() { printf 'build-qemu: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    # Kept on disk (the system may disable them) so a cached run takes
    # a fraction of a second per apt call.
    -o Dir::Cache::pkgcache=pkgcache.bin
    -o Dir::Cache::srcpkgcache=srcpkgcache.bin
)
if [[ $EUID -eq 0 ]]; then
    # The _apt user cannot read a cache under /root; say so instead of
    # letting apt warn about it on every download.
    apt_opts+=(-o APT::Sandbox::User=root)
fi

# derive_sources: the machine's own Debian apt entries (shared with
# guest-images/, which derives other suites from them).
# shellcheck source=../scripts/debian-apt.sh
source "$repo_root/scripts/debian-apt.sh"

# Writes the private apt configuration and fetches its indices when they are
# missing, when the derived sources changed, or when BLKLAB_APT_REFRESH=1.
prepare_apt() {
    local derived stale=0
    mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" \
        "$apt_dir/cache/archives/partial"
    derived=$(derive_sources "${pin_suites[@]}") || exit 1
    grep -q '^deb\|^Types:' <<<"$derived" ||
        die "no enabled Debian entries in /etc/apt/sources.list{,.d}"
    if [[ "$(sed -n '/^--$/q;p' <<<"$derived")" != \
          "$(cat "$apt_dir/sources.list" 2>/dev/null)" ||
          "$(sed '0,/^--$/d' <<<"$derived")" != \
          "$(cat "$apt_dir/sources.list.d/debian.sources" 2>/dev/null)" ]]; then
        sed -n '/^--$/q;p' <<<"$derived" >"$apt_dir/sources.list"
        sed '0,/^--$/d' <<<"$derived" >"$apt_dir/sources.list.d/debian.sources"
        stale=1
    fi
    if [[ $stale -eq 1 || ${BLKLAB_APT_REFRESH:-0} == 1 ]] ||
       ! compgen -G "$apt_dir/lists/*_Sources*" >/dev/null ||
       ! compgen -G "$apt_dir/lists/*_Packages*" >/dev/null; then
        log "fetching Debian archive indices into $apt_dir"
        apt-get "${apt_opts[@]}" -qq update >&2
    fi
}

# Stops the build because a pinned version is not in the archive indices.
pin_gone() {
    die "$1 $2 is not in the archive (suites: $(derived_suites)). It may have
left it for a newer version. Either bring this build's inputs from a machine
that has them built: 'blklab image export' there, 'blklab image import FILE'
here; or pin the version the archive has now in $self (that changes the cache
key, so every figure measured on the old build must be measured again)"
}

# Prints the suites of the private apt configuration.
derived_suites() {
    {
        awk '/^deb /{ print ($2 ~ /^\[/) ? $4 : $3 }' "$apt_dir/sources.list"
        sed -n 's/^Suites: //p' "$apt_dir/sources.list.d/debian.sources"
    } 2>/dev/null | tr ' ' '\n' | sort -u | tr '\n' ' '
}

# Sets qemu_version (with epoch), qemu_dsc (file name) and firmware_version
# from the pins, after checking that the archive has each of them.
resolve_versions() {
    local p
    qemu_version=$qemu_pin
    qemu_dsc=$(apt-get "${apt_opts[@]}" source --print-uris "qemu=$qemu_pin" \
                   2>/dev/null | awk '$2 ~ /^qemu_.*\.dsc$/ { print $2; exit }')
    [[ -n $qemu_dsc ]] || pin_gone "the qemu source package" "$qemu_pin"
    archive_has meson "$meson_pin" || pin_gone "meson" "$meson_pin"
    for p in "${firmware_packages[@]}"; do
        archive_has "$p" "${firmware_pins[$p]}" ||
            pin_gone "$p" "${firmware_pins[$p]}"
        firmware_version[$p]=${firmware_pins[$p]}
    done
}

# Whether the archive indices list binary package $1 at version $2.
archive_has() {
    local versions
    versions=$(apt-cache "${apt_opts[@]}" madison "$1" | awk -F' *[|] *' '{ print $2 }')
    grep -qxF -- "$2" <<<"$versions"
}

# Prints "package=version" for each firmware package.
firmware_list() {
    local p
    for p in "${firmware_packages[@]}"; do
        printf '%s=%s\n' "$p" "${firmware_version[$p]}"
    done
}

series_patches() {
    sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' \
        "$patch_dir/series"
}

# Prints the files of devmodel_inputs that the library build reads, sorted,
# relative to the repository root (unit tests excluded).
devmodel_files() {
    (cd "$repo_root" &&
     find "${devmodel_inputs[@]}" -type f ! -name '*_test.cc' -print0 |
     LC_ALL=C sort -z | tr '\0' '\n')
}

# Sets devmodel_sha256: every file devmodel_files names, with its path.
hash_devmodel() {
    local f
    devmodel_sha256=$(
        while read -r f; do
            printf '\0%s\0' "$f"
            cat "$repo_root/$f"
        done < <(devmodel_files) | sha256sum | cut -d' ' -f1)
}

# Sets series_sha256 (series file and every patch it names) and key.
compute_key() {
    local p
    series_sha256=$(
        {
            cat "$patch_dir/series"
            while read -r p; do
                [[ -f $patch_dir/$p ]] || die "series names missing patch $p"
                printf '\0%s\0' "$p"
                cat "$patch_dir/$p"
            done < <(series_patches)
        } | sha256sum | cut -d' ' -f1)
    key=$(
        {
            printf 'qemu %s\nseries %s\nvariant %s\n' "$qemu_version" \
                "$series_sha256" "$variant"
            printf 'devmodel %s\n' "$devmodel_sha256"
            printf 'headers %s\n' "$(sha256sum <"$repo_root/scripts/host-headers.lock" | cut -d' ' -f1)"
            firmware_list
            cat "$self"
        } | sha256sum | cut -c1-16)
}

point_link() {
    local entry=$1
    mkdir -p "$link_dir"
    ln -sfn "$entry" "$link_dir/.$link_name.$$"
    mv -Tf "$link_dir/.$link_name.$$" "$link_dir/$link_name"
    log "$link_dir/$link_name -> $entry"
}

# Downloads (once) and unpacks the source with Debian's own patches applied.
unpack_source() {
    local dest=$1
    mkdir -p "$download_dir"
    if [[ ! -f $download_dir/$qemu_dsc ]]; then
        log "downloading Debian source qemu $qemu_version"
        (cd "$download_dir" &&
         apt-get "${apt_opts[@]}" -qq source --download-only "qemu=$qemu_version" >&2) ||
            retry_with_fresh_indices
    fi
    # apt has checked the files against the signed archive indices, so
    # dpkg-source's warning about the unchecked .dsc signature goes to the log.
    dpkg-source --no-copy -x "$download_dir/$qemu_dsc" "$dest" >>"$build_log" 2>&1
}

# Downloads (once) and unpacks the pinned meson into $1; sets meson_env, the
# environment under which configure and ninja find it.
unpack_meson() {
    local dest=$1 d debs
    d="$download_dir/meson/$meson_pin"
    mkdir -p "$d"
    if ! compgen -G "$d/*.deb" >/dev/null; then
        (cd "$d" &&
         apt-get "${apt_opts[@]}" -qq download "meson=$meson_pin" >&2) ||
            retry_with_fresh_indices
    fi
    debs=("$d"/*.deb)
    dpkg-deb -x "${debs[0]}" "$dest"
    meson_env=(env "PATH=$dest/usr/bin:$PATH"
               "PYTHONPATH=$dest/usr/lib/python3/dist-packages")
}

# Builds the x86 option ROMs of source tree $1 into $2 with QEMU's own
# Makefile and the host's compiler.
build_option_roms() {
    local src=$1 dest=$2
    mkdir -p "$dest"
    printf '%s\n' "TOPSRC_DIR=$src" "EXTRA_CFLAGS=-m32" "CC=cc" "CCAS=cc" \
        "LD=ld" "OBJCOPY=objcopy" "PYTHON=/usr/bin/python3" >"$dest/config.mak"
    run_logged make -C "$dest" -f "$src/pc-bios/optionrom/Makefile" all
}

# Downloads (once) and unpacks the firmware packages into one tree.
unpack_firmware() {
    local dest=$1 p d debs
    for p in "${firmware_packages[@]}"; do
        d="$download_dir/$p/${firmware_version[$p]}"
        mkdir -p "$d"
        if ! compgen -G "$d/*.deb" >/dev/null; then
            (cd "$d" &&
             apt-get "${apt_opts[@]}" -qq download "$p=${firmware_version[$p]}" >&2) ||
                retry_with_fresh_indices
        fi
        debs=("$d"/*.deb)
        dpkg-deb -x "${debs[0]}" "$dest"
    done
}

# A download fails when the archive has dropped the version named by old
# indices: fetch new indices and start over (once).
retry_with_fresh_indices() {
    [[ ${BLKLAB_APT_REFRESH:-0} != 1 ]] || die "download failed"
    log "download failed; refreshing the archive indices and starting over"
    exec 9>&-
    exec env BLKLAB_APT_REFRESH=1 "$self" "${script_args[@]}"
}

# Applies the series with patch -p1; each patch must pass checkpatch.pl.
apply_series() {
    local src=$1 p
    while read -r p; do
        (cd "$src" && perl scripts/checkpatch.pl -q "$patch_dir/$p" >&2) ||
            die "checkpatch.pl reports errors in $p"
        patch -d "$src" -p1 --batch --forward --quiet <"$patch_dir/$p" ||
            die "$p does not apply"
    done < <(series_patches)
}

extract_only() {
    local dest=$1 p
    [[ ! -e $dest ]] || die "$dest exists"
    unpack_source "$dest"
    local git=(git -C "$dest" -c user.name=blklab -c user.email=blklab@localhost)
    git -C "$dest" init -q
    "${git[@]}" add -A
    "${git[@]}" commit -q -m "Debian qemu $qemu_version"
    "${git[@]}" tag debian-base
    while read -r p; do
        "${git[@]}" am -q "$patch_dir/$p" || die "$p does not apply"
    done < <(series_patches)
    log "patched source in $dest; base commit tagged debian-base"
}

write_manifest() {
    local dest=$1 started=$2
    /usr/bin/python3 - "$dest/manifest.json" "$key" "$qemu_version" \
        "$(firmware_list)" "$series_sha256:$devmodel_sha256" \
        "$(( $(date +%s) - started ))" \
        "$("$dest/bin/qemu-system-x86_64" --version | head -n1)" \
        "$(series_patches)" "$variant" -- "${all_flags[@]}" <<'EOF'
import datetime, json, os, sys
path, key, qemu, firmware, hashes, secs, ver, patches, variant = sys.argv[1:10]
series, devmodel = hashes.split(":")
manifest = {
    "schema_version": 1,
    "cache_key": key,
    "variant": variant,
    "qemu_source": {"package": "qemu", "version": qemu},
    "series_sha256": series,
    "devmodel_sha256": devmodel,
    "series": [p for p in patches.split("\n") if p],
    "firmware_packages": dict(l.split("=", 1) for l in firmware.split("\n") if l),
    "configure_flags": sys.argv[11:],
    "qemu_version": ver,
    "build_seconds": int(secs),
    "built_at": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%dT%H:%M:%SZ"),
}
with open(path + ".tmp", "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
os.replace(path + ".tmp", path)
EOF
}

# Removes the work tree however the build ends.
on_build_exit() {
    local rc=$?
    rm -rf "$work"
    if [[ $rc -ne 0 ]]; then
        log "failed; last lines of $build_log:"
        tail -n 25 "$build_log" >&2
    fi
}

build_entry() {
    local entry=$1 src bld stage started r
    started=$(date +%s)
    work=$(mktemp -d "$entries_root/.build-$key.XXXXXX")
    build_log="$entries_root/logs/$key.log"
    mkdir -p "$entries_root/logs"
    : >"$build_log"
    trap on_build_exit EXIT
    src="$work/src" bld="$work/build" stage="$work/entry"

    unpack_source "$src"
    apply_series "$src"
    unpack_firmware "$work/firmware"
    unpack_meson "$work/meson"

    build_devmodel "$bld/devmodel-build" "$bld/devmodel"

    all_flags=(--prefix="$entry"
               "--with-pkgversion=Debian $qemu_version, blklab ${series_sha256:0:12}$version_tag"
               "--devmodel=$bld/devmodel"
               "${configure_flags[@]}")
    if [[ $variant == sanitize ]]; then
        all_flags+=("${sanitize_configure_flags[@]}")
    fi
    log "configuring (log: $build_log)"
    mkdir -p "$bld"
    (cd "$bld" && run_logged "${meson_env[@]}" "$src/configure" "${all_flags[@]}")
    log "building with $jobs jobs (about 15 minutes on an idle 2-core machine)"
    build_option_roms "$src" "$work/optionrom"
    if [[ $variant == sanitize ]]; then
        check_sanitized "$bld"
    fi
    run_logged "${meson_env[@]}" ninja -C "$bld" -j "$jobs" "${build_targets[@]}"

    mkdir -p "$stage/bin" "$stage/qtest" "$stage/share/qemu"
    install -m 0755 "$bld/qemu-system-x86_64" "$bld/qemu-img" "$stage/bin/"
    install -m 0755 "$bld/tests/qtest/qos-test" "$bld/tests/qtest/ide-test" \
        "$bld/tests/qtest/ahci-test" "$bld/tests/qtest/blklab-nvme-test" \
        "$bld/tests/qtest/blklab-ide-test" "$bld/tests/qtest/blklab-virtio-blk-test" \
        "$bld/tests/qtest/x86-cmpxchg-flags-test" "$bld/tests/qtest/icount-rate-test" \
        "$stage/qtest/"
    for r in "${option_roms[@]}"; do
        install -m 0644 "$work/optionrom/$r" "$stage/share/qemu/"
    done
    for r in "${firmware_files[@]}"; do
        install -m 0644 "$work/firmware/${r#*:}" "$stage/share/qemu/"
    done
    install -m 0644 "$bld/x86_64-softmmu-config-devices.mak" "$stage/config-devices.mak"
    # The binaries look for share/qemu under the --prefix they were built with
    # and, relocated, next to bin/; the entry is renamed to that prefix below.
    write_manifest "$stage" "$started"
    mv -T "$stage" "$entry"
    log "built $entry in $(( $(date +%s) - started )) s"
}

# configure turns each sanitizer on only if the compiler takes it; fail
# instead of building a variant without one.
check_sanitized() {
    local bld=$1 s
    for s in address undefined; do
        grep -q -- "-fsanitize=$s" "$bld/build.ninja" ||
            die "configure did not enable -fsanitize=$s (see $build_log)"
    done
}

# Builds libdevmodel from the repository into the staging prefix $2
# (include/devmodel/*.h, lib/libdevmodel.a), using $1 as the CMake build dir.
build_devmodel() {
    local cbld=$1 prefix=$2 headers
    local flags=("${devmodel_cmake_flags[@]}")
    [[ $variant != sanitize ]] || flags=("${sanitize_devmodel_cmake_flags[@]}")
    log "building libdevmodel ($variant, static, -fPIC) into $prefix"
    headers=$("$repo_root/scripts/pinned-headers.sh") ||
        die "cannot unpack the headers pinned in scripts/host-headers.lock"
    run_logged cmake -S "$repo_root" -B "$cbld" -G Ninja "${flags[@]}" \
        "-DCMAKE_PREFIX_PATH=$headers"
    run_logged cmake --build "$cbld" -j "$jobs" --target devmodel
    mkdir -p "$prefix/lib" "$prefix/include"
    install -m 0644 "$(find "$cbld" -name libdevmodel.a -print -quit)" "$prefix/lib/"
    cp -R "$repo_root/devmodel/include/devmodel" "$prefix/include/"
}

run_logged() {
    if [[ ${BLKLAB_VERBOSE:-0} == 1 ]]; then
        "$@" 2>&1 | tee -a "$build_log" >&2
    else
        "$@" >>"$build_log" 2>&1
    fi
}

main() {
    local entry extract=""
    case $# in
        0) ;;
        2) [[ $1 == --extract ]] || die "usage: $0 [--extract DIR]"
           extract=$(realpath -m "$2")
           script_args=(--extract "$extract") ;;
        *) die "usage: $0 [--extract DIR]" ;;
    esac
    mkdir -p "$cache_root" "$entries_root"
    # apt-get source and download work in the current directory.
    cd "$cache_root"
    prepare_apt
    resolve_versions
    if [[ -n $extract ]]; then
        extract_only "$extract"
        return
    fi
    hash_devmodel
    compute_key
    entry="$entries_root/$key"
    if [[ ! -f $entry/manifest.json ]]; then
        exec 9>"$entries_root/.lock"
        flock 9
        if [[ ! -f $entry/manifest.json ]]; then
            # Only one build of a variant runs at a time; left-overs are from
            # killed builds.
            rm -rf "$entries_root"/.build-* "$entry"
            log "building qemu $qemu_version + series ${series_sha256:0:12}" \
                "($variant) -> $entry"
            build_entry "$entry"
        fi
    fi
    point_link "$entry"
}

script_args=("$@")
declare -A firmware_version
work=""
build_log=/dev/null
main "$@"
