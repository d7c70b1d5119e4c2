#!/bin/bash
# Renders the top of a run's report.html to a PNG with Debian's headless
# Chromium (make deps installs it): the picture of a report the README
# shows. Nothing is fetched: the report is one self-contained file.
#
# Usage: report-picture.sh RUN_DIR OUT.png [WIDTH HEIGHT]   (default 1200 1400 px)
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
    echo "usage: $0 RUN_DIR OUT.png [WIDTH HEIGHT]" >&2
    exit 2
fi
report=$1/report.html
out=$2
width=${3:-1200}
height=${4:-1400}
if [ ! -f "$report" ]; then
    echo "report-picture: $report: no such file (a run directory holds report.html)" >&2
    exit 2
fi
case "$width$height" in
    *[!0-9]*) echo "report-picture: WIDTH and HEIGHT are pixels, got '$width' '$height'" >&2
              exit 2 ;;
esac
if [ -e "$out" ]; then
    echo "report-picture: $out exists; remove it first" >&2
    exit 2
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --window-size="$width,$height" \
    --screenshot="$(realpath -m "$out")" "file://$(realpath "$report")" 2>/dev/null
[ -s "$out" ] || { echo "report-picture: chromium wrote no $out" >&2; exit 1; }
echo "report-picture: $out ($width x $height px) from $report"
