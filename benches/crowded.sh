#!/usr/bin/env bash
# A run beside busy programs: how much adapting the thread count to the free cores gives
# (docs/benchmarks.md, "Issue 13: frames on fewer threads while the cores are busy").
#
# Usage: benches/crowded.sh [BINARY]   (default target/release/xpbd-sim)
# Environment: BUSY (busy programs started beside the runs, `yes > /dev/null` each; default
# 1), ROUNDS (default 3), THREADS (default 2), SCENES (default "pile dancer", names in
# scenes/), ARGS (default --no-output).
#
# Each round runs, in turn, the scene at $THREADS threads adapting (the default), at $THREADS
# threads with `simulation.adapt_threads=false`, and at 1 thread, so a slow spell of the
# machine lands on all three alike. Prints each variant's runs, its median, its ratio to the
# fixed count's median, and how many frames the adapting runs simulated on fewer threads
# (while the cores were busy / because fewer ran faster / timing fewer).
# Needs bash, awk and jq.
set -euo pipefail

BIN=$(realpath "${1:-target/release/xpbd-sim}")
BUSY=${BUSY:-1}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
SCENES=${SCENES:-pile dancer}
ARGS=${ARGS:---no-output}
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mktemp -d)

busy=()
trap 'kill ${busy[@]+"${busy[@]}"} 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 1 "$BUSY"); do
    yes > /dev/null &
    busy+=($!)
done
sleep 0.5

millis() { date +%s%3N; }
for scene in $SCENES; do
    for variant in adapting fixed one; do : > "$OUT/$variant"; done
    for _ in $(seq 1 "$ROUNDS"); do
        for variant in adapting fixed one; do
            case $variant in
            adapting) extra=(--threads "$THREADS") ;;
            fixed) extra=(--threads "$THREADS" --set simulation.adapt_threads=false) ;;
            one) extra=(--threads 1) ;;
            esac
            rm -rf "$OUT/run"
            start=$(millis)
            # shellcheck disable=SC2086
            "$BIN" run "$HERE/scenes/$scene.toml" --out "$OUT/run" --quiet $ARGS "${extra[@]}"
            echo "$(($(millis) - start))" >> "$OUT/$variant"
            if [ $variant = adapting ]; then
                jq -r 'select(.type == "summary") | "\(.frames_on_fewer_threads
                    - .frames_on_fewer_threads_for_speed - .frames_timing_fewer_threads)/\(
                    .frames_on_fewer_threads_for_speed)/\(.frames_timing_fewer_threads)"' \
                    "$OUT/run/stats.jsonl" >> "$OUT/fewer"
            fi
        done
    done
    median() {
        sort -n "$1" |
            awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
    }
    fixed=$(median "$OUT/fixed")
    echo "== $scene, $BUSY busy program(s), $THREADS threads, $ROUNDS rounds (ms)"
    for variant in adapting fixed one; do
        runs=$(tr '\n' ' ' < "$OUT/$variant")
        m=$(median "$OUT/$variant")
        awk -v v="$variant" -v r="$runs" -v m="$m" -v f="$fixed" \
            'BEGIN {printf "%-9s %s| median %s, %.2f× the fixed count\n", v, r, m, m / f}'
    done
    echo "frames on fewer threads (adapting; busy/faster/timing): $(tr '\n' ' ' < "$OUT/fewer")"
    rm -f "$OUT/fewer"
done
