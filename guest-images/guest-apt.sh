# The guest's pinned Debian packages: the private apt directory they are
# fetched through (every release guest-images/kernel-series names, with its
# -updates and -security suites, derived from this machine's apt entries)
# and the download of exact pinned versions into the package cache.
# Sourced by guest-images/build-image.sh and guest-images/pin.sh, which set
# `here` (this directory), `repo` and `cache` first and define die().

# shellcheck source=../scripts/debian-apt.sh
source "$repo/scripts/debian-apt.sh"

guest_apt_dir=$cache/guest-apt
# Downloaded packages, named <package>_<version>_<arch>.deb as apt names
# them (":" in a version as "%3a"); shared by every image and build root.
debs=${BLKLAB_DEBS:-$cache/debs}
apt_opts=(
    -o "Dir::Etc::SourceList=$guest_apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$guest_apt_dir/sources.list.d"
    -o "Dir::State::Lists=$guest_apt_dir/lists"
    -o "Dir::State::status=$guest_apt_dir/status"
    -o "Dir::Cache=$guest_apt_dir/cache"
    -o Dir::Cache::pkgcache=pkgcache.bin
    -o Dir::Cache::srcpkgcache=srcpkgcache.bin
    -o APT::Architecture=amd64
    -o "APT::Architectures=amd64"
)
if [[ $EUID -eq 0 ]]; then
    # The _apt user cannot write to a cache under /root.
    apt_opts+=(-o APT::Sandbox::User=root)
fi

# kernel_series_rows: "series release flavour..." for each series in
# kernel-series (comments and the default line left out).
kernel_series_rows() {
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e '/^default[[:space:]]/d' "$here/kernel-series"
}

# default_series: the series a bare flavour means.
default_series() {
    awk '$1 == "default" {print $2}' "$here/kernel-series"
}

# guest_suites: every suite the guest's packages may come from.
guest_suites() {
    local r
    for r in $(kernel_series_rows | awk '{print $2}' | sort -u); do
        printf '%s %s-updates %s-security ' "$r" "$r" "$r"
    done
}

# guest_apt_prepare: writes the private apt sources and fetches their
# indices when missing, when the derived sources changed, or with
# BLKLAB_APT_REFRESH=1.
guest_apt_prepare() {
    local derived stale=0
    mkdir -p "$guest_apt_dir/sources.list.d" "$guest_apt_dir/lists/partial" \
        "$guest_apt_dir/cache/archives/partial"
    touch "$guest_apt_dir/status"
    # shellcheck disable=SC2046
    derived=$(derive_sources --binary $(guest_suites)) || die "cannot derive the guest's apt entries"
    if write_apt_sources "$guest_apt_dir" "$derived"; then
        stale=1
    fi
    if [[ $stale -eq 1 || ${BLKLAB_APT_REFRESH:-0} == 1 ]] ||
       ! compgen -G "$guest_apt_dir/lists/*_Packages*" >/dev/null; then
        echo "image: fetching Debian archive indices ($(guest_suites)) into $guest_apt_dir" >&2
        apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update failed in $guest_apt_dir"
    fi
}

# deb_path PACKAGE VERSION: where the cache keeps that package.
deb_path() {
    printf '%s/%s_%s_%s.deb' "$debs" "$1" "${2//:/%3a}" "${3:-amd64}"
}

# fetch_pinned LOCK ENTRY...: makes sure the package cache holds each
# ENTRY ("package version sha256"), downloading the missing ones by exact
# version, and checks every file against its pinned SHA-256. A version the
# archive no longer has stops the build, naming it, the lock and the ways
# out. LOCK is the lock file's path from the repository root, for messages.
fetch_pinned() {
    local lock=$1 e p v sum f missing=() gone=() out arch
    shift
    mkdir -p "$debs"
    for e in "$@"; do
        read -r p v sum <<<"$e"
        if ! compgen -G "$debs/${p}_${v//:/%3a}_*.deb" >/dev/null; then
            missing+=("$p=$v")
        fi
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        guest_apt_prepare
        echo "image: downloading ${#missing[@]} pinned package(s) from $lock" >&2
        if ! out=$(cd "$debs" && apt-get "${apt_opts[@]}" -q download "${missing[@]}" 2>&1); then
            gone=()
            while read -r p; do
                gone+=("$p")
            done < <(sed -n "s/^E: Version '\\([^']*\\)' for '\\([^']*\\)' was not found.*/\\2 \\1/p;
                             s/^E: Unable to locate package \\(.*\\)/\\1 (any version)/p;
                             s/^E: Failed to fetch .*\\/\\([^_\\/]*\\)_\\([^_]*\\)_[^_]*\\.deb  *404 .*/\\1 \\2 (listed in the index, 404 on the mirror)/p" \
                         <<<"$out" | sed 's/%3a/:/g')
            if [[ ${#gone[@]} -eq 0 ]]; then
                printf '%s\n' "$out" >&2
                die "downloading the packages pinned in $lock failed (see apt's message above)"
            fi
            if [[ ${BLKLAB_APT_REFRESH:-0} != 1 ]]; then
                echo "image: retrying once with fresh archive indices" >&2
                BLKLAB_APT_REFRESH=1 fetch_pinned "$lock" "$@"
                return
            fi
            {
                echo "blklab: the Debian archive cannot serve these versions pinned in"
                echo "  $lock:"
                printf '    %s\n' "${gone[@]}"
                echo "  (apt finds none of them, with archive indices fetched just now)."
                echo "  Ways out:"
                echo "  - bring the image from a machine that has it: there"
                echo "    'blklab image export FILE', here 'blklab image import FILE'"
                echo "    (the same commit then uses it without the archive);"
                echo "  - pin versions the archive has in $lock (guest-images/pin.sh"
                echo "    rewrites the guest's locks; a new pin changes the keys of what it builds)."
            } >&2
            exit 1
        fi
    fi
    for e in "$@"; do
        read -r p v sum <<<"$e"
        f=$(compgen -G "$debs/${p}_${v//:/%3a}_*.deb" | head -n1)
        arch=$(sha256sum <"$f" | cut -d' ' -f1)
        [[ $arch == "$sum" ]] ||
            die "$f has SHA-256 $arch, but $lock pins $p $v as $sum"
    done
}
