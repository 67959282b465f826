#!/usr/bin/env bash
# Interleaved per-function CPU profiles of two xpbd-sim binaries on one scene
# (docs/benchmarks.md, "Issue 13: tree nodes in f32, a stackless walk, no libm floor").
#
# Usage: benches/perf_ab.sh A_BINARY B_BINARY [SCENE [-- EXTRA RUN ARGUMENTS]]
#   e.g. ROUNDS=4 benches/perf_ab.sh /tmp/xpbd-before target/release/xpbd-sim scenes/pile.toml
# Environment: ROUNDS (default 4), THREADS (default 1), TOP (rows printed, default 20),
# RESULTS (default /tmp/perf-ab).
#
# Whole-run wall clock on a shared machine spreads by more than a change of a few per cent,
# and the builds place their hot loops differently, which moves functions whose code did not
# change. This records `perf record -e cpu-clock` of A and B in turn (A, B, A, B, ...) and
# prints, per function, the samples of each summed over the rounds and their difference,
# largest differences first: the functions a change touched against the ones it did not,
# which are the control. Needs perf (Debian's linux-perf) and python3.
set -euo pipefail

[ $# -ge 2 ] || { sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2; }
a=$(realpath "$1"); b=$(realpath "$2"); shift 2
scene=${1:-$(cd "$(dirname "$0")/.." && pwd)/scenes/pile.toml}
[ $# -ge 1 ] && shift
[ "${1:-}" = "--" ] && shift
ROUNDS=${ROUNDS:-4}
THREADS=${THREADS:-1}
TOP=${TOP:-20}
RESULTS=${RESULTS:-/tmp/perf-ab}
mkdir -p "$RESULTS"

echo "load before: $(uptime)"
for round in $(seq 1 "$ROUNDS"); do
    for label in A B; do
        bin=$a; [ "$label" = B ] && bin=$b
        perf record -q -e cpu-clock -F 4000 -o "$RESULTS/$label.$round.data" -- \
            "$bin" run "$scene" --out "$RESULTS/out-$label" --quiet --no-output \
            --threads "$THREADS" "$@" >/dev/null 2>&1
    done
done
echo "load after:  $(uptime)"

python3 - "$RESULTS" "$ROUNDS" "$TOP" <<'EOF'
import collections, re, subprocess, sys

results, rounds, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def samples(label):
    total = collections.Counter()
    for r in range(1, rounds + 1):
        report = subprocess.run(
            ["perf", "report", "-i", f"{results}/{label}.{r}.data", "--no-children",
             "--stdio", "--sort", "sym", "-F", "sample,sym"],
            capture_output=True, text=True, check=True).stdout
        for line in report.splitlines():
            m = re.match(r"\s+(\d+)\s+\[\.\]\s+(.+)$", line)
            if m:
                total[m.group(2).strip()] += int(m.group(1))
    return total

a, b = samples("A"), samples("B")
print(f"samples over {rounds} rounds: A {sum(a.values())}, B {sum(b.values())}, "
      f"B/A {sum(b.values()) / max(1, sum(a.values())):.3f}")
print(f"{'A':>8} {'B':>8} {'B-A':>7} {'B/A':>6}  function")
for name in sorted(set(a) | set(b), key=lambda k: -abs(a[k] - b[k]))[:top]:
    ratio = f"{b[name] / a[name]:.2f}" if a[name] else "-"
    print(f"{a[name]:>8} {b[name]:>8} {b[name] - a[name]:>7} {ratio:>6}  {name[:100]}")
EOF
