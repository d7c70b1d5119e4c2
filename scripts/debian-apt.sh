# Debian apt entries derived from this machine's own apt sources, for the
# private apt directories of qemu-patches/build-qemu.sh (the QEMU source)
# and guest-images/ (the guest's pinned packages). Never a hard-coded
# mirror: every URI, component and option comes from the machine's entries.
# Sourced by bash scripts; defines functions only.

# derive_sources [--binary] [SUITE...]
# Prints the machine's enabled Debian entries: one-line entries first, then
# a line "--", then deb822 stanzas. Each entry is written for "deb" and
# "deb-src", or for "deb" only with --binary.
#   With no SUITE: the entries whose suite is the release codename or one of
#   its -updates/-security/-backports/-proposed-updates suites, as they are.
#   With SUITEs (e.g. trixie trixie-security bookworm-backports): each suite
#   from the machine's entry of its kind with the suite substituted: one
#   ending in -security from the <codename>-security entry, any other from
#   the <codename> entry (the archive that serves a release also serves its
#   -updates and -backports).
# Fails with a message on stderr when /etc/os-release names no codename or
# when a SUITE has no entry of its kind to derive from.
derive_sources() {
    local types="deb deb-src" codename suite_re f want="" s
    if [[ ${1:-} == --binary ]]; then
        types="deb"
        shift
    fi
    # shellcheck source=/dev/null
    codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
    if [[ -z $codename ]]; then
        printf 'derive_sources: no VERSION_CODENAME in /etc/os-release\n' >&2
        return 1
    fi
    suite_re="^${codename}(-updates|-security|-backports|-proposed-updates)?\$"
    want="$*"
    local out
    out=$(_derive_entries "$codename" "$suite_re" "$want" "$types")
    for s in $want; do
        if ! grep -qE "^(deb|Suites:).* $s( |\$)" <<<"$out"; then
            printf 'derive_sources: no apt entry to derive suite %s from: %s needs an enabled\n' \
                "$s" "$s" >&2
            printf '  %s entry in /etc/apt/sources.list or /etc/apt/sources.list.d/\n' \
                "$([[ $s == *-security ]] && echo "$codename-security" || echo "$codename")" >&2
            return 1
        fi
    done
    printf '%s\n' "$out"
}

# _derive_entries CODENAME SUITE_RE WANT TYPES: derive_sources' work.
_derive_entries() {
    local codename=$1 suite_re=$2 want=$3 types=$4 f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        awk -v re="$suite_re" -v codename="$codename" -v want="$want" -v types="$types" '
            function emit(opts, uri, suite, rest,    t, nt, i) {
                nt = split(types, t, " ")
                for (i = 1; i <= nt; i++)
                    print t[i] " " opts uri " " suite rest
            }
            /^[ \t]*deb[ \t]/ {
                line = $0
                sub(/#.*/, "", line)
                sub(/[ \t]+$/, "", line)
                sub(/^[ \t]*deb[ \t]+/, "", line)
                opts = ""
                if (line ~ /^\[/) {
                    end = index(line, "]")
                    opts = substr(line, 1, end) " "
                    line = substr(line, end + 1)
                }
                sub(/^[ \t]+/, "", line)
                n = split(line, w, /[ \t]+/)
                if (n < 2 || w[2] !~ re) next
                rest = ""
                for (i = 3; i <= n; i++) rest = rest " " w[i]
                if (want == "") { emit(opts, w[1], w[2], rest); next }
                nw = split(want, ws, " ")
                for (j = 1; j <= nw; j++) {
                    sec = (ws[j] ~ /-security$/)
                    if ((sec && w[2] == codename "-security") || (!sec && w[2] == codename))
                        emit(opts, w[1], ws[j], rest)
                }
            }' "$f"
    done
    echo "--"
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v re="$suite_re" -v codename="$codename" -v want="$want" -v types="$types" '
            BEGIN { RS = ""; FS = "\n" }
            {
                stypes = ""; suites = ""; enabled = "yes"; body = ""; keep = 1
                for (i = 1; i <= NF; i++) {
                    l = $i
                    if (l ~ /^#/) continue
                    if (l ~ /^[ \t]/) { if (keep) body = body l "\n"; continue }
                    k = tolower(l); sub(/:.*/, "", k)
                    v = l; sub(/^[^:]*:[ \t]*/, "", v)
                    keep = 0
                    if (k == "types") stypes = v
                    else if (k == "suites") suites = v
                    else if (k == "enabled") enabled = tolower(v)
                    else { keep = 1; body = body l "\n" }
                }
                if (enabled == "no" || (" " stypes " ") !~ /[ \t]deb[ \t]/) next
                kept = ""
                n = split(suites, s, /[ \t]+/)
                if (want == "") {
                    for (j = 1; j <= n; j++)
                        if (s[j] ~ re) kept = kept (kept == "" ? "" : " ") s[j]
                } else {
                    nw = split(want, ws, " ")
                    for (m = 1; m <= nw; m++) {
                        sec = (ws[m] ~ /-security$/)
                        for (j = 1; j <= n; j++)
                            if ((sec && s[j] == codename "-security") ||
                                (!sec && s[j] == codename))
                                kept = kept (kept == "" ? "" : " ") ws[m]
                    }
                }
                if (kept == "") next
                printf "Types: %s\nSuites: %s\n%s\n", types, kept, body
            }' "$f"
    done
}

# write_apt_sources DIR DERIVED: writes derive_sources' output DERIVED into
# the private apt directory DIR (DIR/sources.list and
# DIR/sources.list.d/debian.sources) unless it holds exactly that already.
# Returns 0 when it wrote them (the indices are stale), 1 when unchanged.
write_apt_sources() {
    local dir=$1 derived=$2
    mkdir -p "$dir/sources.list.d"
    if [[ "$(sed -n '/^--$/q;p' <<<"$derived")" == \
          "$(cat "$dir/sources.list" 2>/dev/null)" &&
          "$(sed '0,/^--$/d' <<<"$derived")" == \
          "$(cat "$dir/sources.list.d/debian.sources" 2>/dev/null)" ]]; then
        return 1
    fi
    sed -n '/^--$/q;p' <<<"$derived" >"$dir/sources.list"
    sed '0,/^--$/d' <<<"$derived" >"$dir/sources.list.d/debian.sources"
    return 0
}
