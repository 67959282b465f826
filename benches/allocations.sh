#!/usr/bin/env bash
# Allocations per substep, scene by scene (docs/benchmarks.md, "Issue 13: no allocation per
# substep"): each scene runs for FRAMES frames at its own substep count S and at 2S, under
# heaptrack, and the difference in allocation calls is divided by the extra substeps. A solver
# that allocates nothing per substep prints 0 (a scene whose topology changes, `tear`, or
# whose threads meet every substep, moving mesh colliders, prints what that costs).
#
# Usage: benches/allocations.sh [BINARY]   (default target/release/xpbd-sim)
# Environment: SCENES (names in scenes/, default all but dam_break), FRAMES (default 4),
# THREADS (default 2), RESULTS (default /tmp/allocations: heaptrack files and frames).
# Needs heaptrack (Debian: apt-get install heaptrack).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "${1:-target/release/xpbd-sim}")
frames=${FRAMES:-4}
threads=${THREADS:-2}
results=${RESULTS:-/tmp/allocations}
mkdir -p "$results"
if [ -z "${SCENES:-}" ]; then
    SCENES=$(ls scenes/*.toml | xargs -n1 basename | sed 's/\.toml$//' | grep -v '^dam_break$')
fi

allocations() { # scene substeps
    local trace="$results/$1.$2"
    heaptrack -o "$trace" "$binary" run "scenes/$1.toml" --out "$results/frames-$1-$2" \
        --quiet --no-output --threads "$threads" --frames "$frames" \
        --set "simulation.substeps=$2" >/dev/null 2>&1
    heaptrack_print "$trace.zst" 2>/dev/null | awk '/^calls to allocation functions:/ {print $5}'
}

printf '| scene | substeps S | allocations at S | at 2S | per extra substep |\n'
printf '| --- | --- | --- | --- | --- |\n'
for scene in $SCENES; do
    substeps=$(awk -F= '/^substeps/ {gsub(/[ \t]|#.*/, "", $2); print $2; exit}' "scenes/$scene.toml")
    substeps=${substeps:-10}
    at_s=$(allocations "$scene" "$substeps")
    at_2s=$(allocations "$scene" $((2 * substeps)))
    per=$(awk -v a="$at_s" -v b="$at_2s" -v n=$((frames * substeps)) 'BEGIN {printf "%.2f", (b - a) / n}')
    printf '| %s | %s | %s | %s | %s |\n' "$scene" "$substeps" "$at_s" "$at_2s" "$per"
done
