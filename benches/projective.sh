#!/usr/bin/env bash
# Projective Dynamics vs XPBD: accuracy reached per wall-clock second.
#
# Usage: [BIN=target/release/xpbd-sim] [ROUNDS=3] [ONLY=text] benches/projective.sh
# Workloads (scenes written to a temp dir, deleted at exit; raw rows kept in $OUT/runs.tsv):
#   cloth-128-stiff  scenes/bench/cloth-128.toml pinned along its whole z = -0.5 edge, stretch
#                    compliance 1e-7, isometric bending 1.0, velocity_damping 2, 24 frames
#   tets-48k         scenes/bench/tets-48k.toml (stretch 1e-6, tets 1e-8), 24 frames
#   cloth-256        scenes/bench/cloth-256.toml, projective, 2 frames: factor memory only
# Each round runs every configuration once, XPBD and PD alternating, so slow spells on a
# shared machine land on both. Accuracy is the last frame's max_edge_strain and residual_max
# (max |C|, comparable across solvers); the runs are deterministic, so only time varies.
# Wall times on a shared machine are noisy: cpu_s (user + sys of the run, GNU time) is given too.
# Needs bash, python3 and /usr/bin/time.
set -euo pipefail

BIN=$(realpath "${BIN:-target/release/xpbd-sim}")
ROUNDS=${ROUNDS:-3}
ONLY=${ONLY:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$(mktemp -d /tmp/projective-bench.XXXXXX)}
mkdir -p "$OUT"
SCENES=$(mktemp -d)
trap 'rm -rf "$SCENES"' EXIT

sed -e 's/^frames = .*/frames = 24/' \
    -e 's/^pin = .*/pin_region = { min = [-0.6, 0.99, -0.502], max = [0.6, 1.01, -0.498] }/' \
    -e 's/^stretch = .*/stretch = { compliance = 1e-7 }/' \
    -e 's/^bending = .*/bending = { compliance = 1.0, model = "isometric" }/' \
    -e 's/^iterations = 1$/iterations = 1\nvelocity_damping = 2.0/' \
    "$REPO/scenes/bench/cloth-128.toml" > "$SCENES/cloth-128-stiff.toml"

# workload|scene|frames|solver|substeps|iterations|rho   (XPBD and PD alternate)
CONFIGS=()
for w in "cloth-128-stiff|$SCENES/cloth-128-stiff.toml" "tets-48k|$REPO/scenes/bench/tets-48k.toml"; do
    xpbd=(10 20 40 80 160)
    pd=("5 5 0" "5 5 0.9" "5 10 0" "5 10 0.9" "10 10 0" "10 10 0.9" "20 5 0" "20 5 0.9")
    # tets-48k: PD costs ~4x an XPBD iteration there; (20,5) is left out to keep it short
    # (40,1): one PD iteration per substep, about XPBD 160's cost there
    [[ $w == tets* ]] && pd=("${pd[@]:0:6}" "40 1 0")
    for i in "${!pd[@]}"; do
        read -r s k rho <<< "${pd[$i]}"
        [ "$i" -lt "${#xpbd[@]}" ] && CONFIGS+=("$w|24|xpbd|${xpbd[$i]}|1|0")
        CONFIGS+=("$w|24|projective|$s|$k|$rho")
    done
done
CONFIGS+=("cloth-256|$REPO/scenes/bench/cloth-256.toml|2|projective|20|1|0")

echo "# $BIN, $ROUNDS rounds, raw rows in $OUT/runs.tsv"
echo "# load before: $(uptime)"
printf 'workload\tsolver\tsubsteps\titerations\trho\tround\trc\tsim_s\tcpu_s\tstrain\tres_stretch\tres_tets\tkinetic\tpeak_mib\tfactor_mib\tnnz\n' > "$OUT/runs.tsv"
for round in $(seq 1 "$ROUNDS"); do
    for c in "${CONFIGS[@]}"; do
        IFS='|' read -r name scene frames solver s k rho <<< "$c"
        [[ -n $ONLY && $name != *$ONLY* ]] && continue
        [[ $name == cloth-256 && $round -gt 1 ]] && continue
        args=(--set "simulation.solver=$solver" --set "simulation.substeps=$s" --set "simulation.iterations=$k")
        [ "$rho" != 0 ] && args+=(--set "simulation.projective.chebyshev_rho=$rho")
        # every table nonzero: a projective compliance of 0 is a weak "maximum weight"
        [ "$name" = cloth-256 ] && args+=(--set object.0.stretch.compliance=1e-7)
        rm -rf "$OUT/run"
        rc=0
        /usr/bin/time -f '%U %S' -o "$OUT/time" "$BIN" run "$scene" --out "$OUT/run" --quiet --no-output --threads 2 --frames "$frames" \
            "${args[@]}" 2> "$OUT/stderr" || rc=$?
        [ $rc = 0 ] || { echo "FAILED rc=$rc: $name $solver $s x $k rho $rho" >&2; cat "$OUT/stderr" >&2; }
        python3 - "$OUT/run/stats.jsonl" "$OUT/time" "$name" "$solver" "$s" "$k" "$rho" "$round" "$rc" >> "$OUT/runs.tsv" <<'EOF'
import json, sys
path, tpath, *key = sys.argv[1:]
cpu = sum(map(float, open(tpath).read().split()[-2:]))
try:
    lines = [json.loads(l) for l in open(path)]
    f = [l for l in lines if l["type"] == "frame"][-1]
    s = lines[-1] if lines[-1]["type"] == "summary" else {"wall_seconds": {}}
    pd = f.get("projective", {})
    r = f["residual_max"]
    vals = [s["wall_seconds"].get("simulation", "nan"), cpu, f["max_edge_strain"], r.get("stretch", "nan"),
            r.get("tets", "nan"), f["kinetic_energy"], s.get("peak_memory_bytes", 0) / 2**20,
            pd.get("factor_bytes", 0) / 2**20, pd.get("matrix_nonzeros", "")]
except (OSError, ValueError, IndexError, KeyError):
    vals = ["nan", cpu] + ["nan"] * 6 + [""]
print("\t".join(map(str, key + vals)))
EOF
    done
done
echo "# load after:  $(uptime)"

python3 - "$OUT/runs.tsv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
groups = {}
for r in rows:
    groups.setdefault(tuple(r[k] for k in ("workload", "solver", "substeps", "iterations", "rho")), []).append(r)
g = lambda x, fmt: "-" if x in ("nan", "") else fmt % float(x)
print("| workload | solver | substeps | iters | rho | sim s (median) | cpu s (median) | runs | max_edge_strain | res_max stretch | res_max tets | peak MiB | factor MiB | nnz |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for key, rs in groups.items():
    ok = [r for r in rs if r["rc"] == "0"]
    med = statistics.median(float(r["sim_s"]) for r in ok) if ok else float("nan")
    last = (ok or rs)[-1]
    if len({(r["strain"], r["res_stretch"]) for r in ok}) > 1:
        last["strain"] += " (differs between rounds!)"
    fails = "" if len(ok) == len(rs) else " FAILED rc=" + ",".join(r["rc"] for r in rs if r["rc"] != "0")
    cpu = statistics.median(float(r["cpu_s"]) for r in ok) if ok else float("nan")
    print(f"| {' | '.join(key)} | {med:.3f} | {cpu:.2f} | {len(ok)}/{len(rs)}{fails} | {g(last['strain'], '%.3g') if 'differs' not in last['strain'] else last['strain']} "
          f"| {g(last['res_stretch'], '%.3g')} | {g(last['res_tets'], '%.3g')} | {g(last['peak_mib'], '%.1f')} "
          f"| {g(last['factor_mib'], '%.2f') if key[1] == 'projective' else '-'} | {last['nnz'] or '-'} |")
EOF
