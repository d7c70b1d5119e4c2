#!/bin/bash
# Prints, as a Markdown table, what each kernel of kernels.lock has for
# blklab, read from the pinned package's own config-* (the package is
# fetched into the cache like an image build does): the drivers of the
# device kinds, the schedulers and the cgroup controls blkgen writes.
# scenarios/README.md's "Guest kernels" table is this script's output.
#
# Usage: kernel-facts.sh
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cache=${BLKLAB_CACHE:-$HOME/.cache/blklab}
die() { echo "kernel-facts.sh: $*" >&2; exit 1; }
# shellcheck source=guest-images/guest-apt.sh
source "$here/guest-apt.sh"

symbols=(BLK_DEV_NVME ATA_PIIX SATA_AHCI BLK_DEV_SD MQ_IOSCHED_DEADLINE MQ_IOSCHED_KYBER
         IOSCHED_BFQ BFQ_GROUP_IOSCHED BLK_DEV_THROTTLING BLK_CGROUP_IOCOST
         BLK_CGROUP_IOLATENCY PREEMPT_RT)

printf '| kernel | package |'
printf ' %s |' "${symbols[@]}"
printf '\n|---|---|'
printf -- '---|%.0s' "${symbols[@]}"
printf '\n'
while read -r series flavour pkg version sum; do
    fetch_pinned guest-images/kernels.lock "$pkg $version $sum"
    deb=$(compgen -G "$debs/${pkg}_${version//:/%3a}_*.deb" | head -n1)
    config=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './boot/config-*')
    printf '| `%s-%s` | %s |' "$series" "$flavour" "$version"
    for s in "${symbols[@]}"; do
        if v=$(grep -m1 "^CONFIG_$s=" <<<"$config"); then
            printf ' %s |' "${v#*=}"
        elif grep -q "^# CONFIG_$s is not set" <<<"$config"; then
            printf ' not set |'
        else
            printf ' absent |'
        fi
    done
    printf '\n'
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/kernels.lock")
