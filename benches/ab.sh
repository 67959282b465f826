#!/usr/bin/env bash
# Interleaved A/B timing of several xpbd-sim binaries on a set of workloads
# (docs/benchmarks.md: "Issue 11: what each addition costs", "Issue 13").
#
# Usage: benches/ab.sh LABEL=BINARY [LABEL=BINARY ...]
#   e.g. SET=issue13 benches/ab.sh A=/tmp/xpbd-A B=/tmp/xpbd-B C=target/release/xpbd-sim
# Environment: SET (issue11, the default: contact-heavy scenes; issue13: the solver throughput
# workloads; pile: the pile with and without self collision and two cloths lying on each other
# (bench/stacked-81), at 1 and 2 threads; meshes: the
# scenes with moving mesh colliders; scenes: every shipped scene but the dam break at 1 and 2
# threads), WRITE=1 (write the files, as a user's run does, instead of --no-output; compare
# the elapsed seconds then, which include the writing), ROUNDS (default 5),
# RESULTS (default /tmp/ab-$SET),
# SCENES (default: this
# checkout's scenes/; use one committed copy for all binaries), ONLY (run only the workloads
# whose name contains this text), SUMMARY_ONLY=1 (redo the table from $RESULTS/runs.tsv).
#
# For every round and workload it runs each binary once, in the order given (A, B, C, D, A, B,
# ...), so slow spells on a shared machine land on all binaries alike. Each run:
#   /usr/bin/time -v BIN run SCENE --out /tmp/bench-out-LABEL --quiet --no-output --threads N
# A failed run is kept in the raw rows with its exit code and left out of the medians.
# Raw rows go to $RESULTS/runs.tsv; medians and fastest runs, with ratios to the first label
# and to the label before it, to $RESULTS/summary.md. Where a workload runs at 1 and 2 threads
# (NAME-t1 and NAME-t2, as in SET=pile), the summary adds each binary's 2-thread speed-up
# round by round (the two runs of a round are minutes apart at most, so a slow spell of the
# machine moves both) and their median: the figure to compare with the issue's 1.7.
# Needs bash, jq, awk and GNU time.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SET=${SET:-issue11}
RESULTS=${RESULTS:-/tmp/ab-$SET}
SCENES=${SCENES:-$(cd "$(dirname "$0")/.." && pwd)/scenes}
ONLY=${ONLY:-}

[ $# -ge 1 ] || { sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2; }
labels=(); bins=()
# Every binary is run from a copy made now, all copies alike: byte-identical binaries ran
# 2-5 % apart at 1 thread on this machine when one file had been there for an hour and the
# other was just copied, whichever ran first (docs/benchmarks.md, "Issue 13: the skin
# measured on every thread, meshes posed on theirs").
mkdir -p "$RESULTS/bin"
for arg in "$@"; do
    label="${arg%%=*}"
    cp "$(realpath "${arg#*=}")" "$RESULTS/bin/$label"
    labels+=("$label"); bins+=("$RESULTS/bin/$label")
done

# name | threads | scene (relative to $SCENES) | extra arguments
case "$SET" in
issue11) WORKLOADS=(
    "skirt|2|skirt.toml|"
    "body|2|body.toml|"
    "drape-128|2|bench/drape-128.toml|"
    "drape-128-t1|1|bench/drape-128.toml|"
    "pile|2|pile.toml|"
    "cloth-128-f24|2|bench/cloth-128.toml|--frames 24"
) ;;
issue13) WORKLOADS=(
    "cloth-256-t1|1|bench/cloth-256.toml|--frames 24"
    "cloth-256-t2|2|bench/cloth-256.toml|--frames 24"
    "tets-48k-t2|2|bench/tets-48k.toml|--frames 24"
    "skirt|2|skirt.toml|"
    "pile|2|pile.toml|"
) ;;
pile) WORKLOADS=(
    "pile-t1|1|pile.toml|"
    "pile-t2|2|pile.toml|"
    "pile-noself-t1|1|pile.toml|--set object.cloth.self_collision=false"
    "pile-noself-t2|2|pile.toml|--set object.cloth.self_collision=false"
    "stacked-81-t1|1|bench/stacked-81.toml|"
    "stacked-81-t2|2|bench/stacked-81.toml|"
) ;;
meshes) WORKLOADS=(
    "skirt-t1|1|skirt.toml|"
    "skirt-t2|2|skirt.toml|"
    "body-t2|2|body.toml|"
    "dancer-t1|1|dancer.toml|"
    "dancer-t2|2|dancer.toml|"
) ;;
scenes) WORKLOADS=()
    for scene in "$SCENES"/*.toml; do
        name=$(basename "$scene" .toml)
        [ "$name" = dam_break ] && continue
        WORKLOADS+=("$name-t1|1|$name.toml|" "$name-t2|2|$name.toml|")
    done ;;
*) echo "unknown SET=$SET (issue11, issue13, pile, meshes or scenes)" >&2; exit 2 ;;
esac

output=(--no-output)
[ -n "${WRITE:-}" ] && output=()
mkdir -p "$RESULTS"
runs="$RESULTS/runs.tsv"
if [ -z "${SUMMARY_ONLY:-}" ]; then
printf 'workload\tround\tlabel\tsim_s\telapsed_s\tcpu_s\tmax_rss_kb\tmax_edge_strain\tmax_speed\texit\tproj_per_s\n' > "$runs"
echo "load before: $(uptime)" | tee "$RESULTS/load.txt"

for round in $(seq 1 "$ROUNDS"); do
    for w in "${WORKLOADS[@]}"; do
        IFS='|' read -r name threads scene extra <<< "$w"
        [[ -z "$ONLY" || "$name" == *"$ONLY"* ]] || continue
        for i in "${!labels[@]}"; do
            label=${labels[$i]}; out=/tmp/bench-out-$label
            rm -rf "$out"
            status=0
            # shellcheck disable=SC2086
            /usr/bin/time -v -o "$RESULTS/time.txt" "${bins[$i]}" run "$SCENES/$scene" \
                --out "$out" --quiet ${output[@]+"${output[@]}"} --threads "$threads" $extra ||
                status=$?
            elapsed=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
                for (k = 1; k <= n; k++) s = s * 60 + p[k]; print s }' "$RESULTS/time.txt")
            cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$RESULTS/time.txt")
            rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$RESULTS/time.txt")
            sim=NA; strain=NA; speed=NA; proj=NA
            [ "$status" = 0 ] && read -r sim strain speed proj < <(jq -rs '
                ([.[] | select(.type == "summary")] | last) as $summary
                | [.[] | select(.type == "frame")] as $f
                | "\($summary.wall_seconds.simulation) \([$f[].max_edge_strain] | max) \([$f[].max_speed] | max) \($summary.constraint_projections_per_second)"' \
                "$out/stats.jsonl")
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$label" "$sim" \
                "$elapsed" "$cpu" "$rss" "$strain" "$speed" "$status" "$proj" | tee -a "$runs"
        done
    done
done
echo "load after: $(uptime)" | tee -a "$RESULTS/load.txt"
fi

# Medians per workload and label; ratios of the median simulation seconds to the first label.
awk -F'\t' -v first="${labels[0]}" -v all="${labels[*]}" '
    function least(list,   a, n, i, m) {
        n = split(list, a, " "); m = a[1]
        for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]
        return m
    }
    function median(list,   a, n, t, i, j) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    NR == 1 || $10 != 0 { next }   # header, failed runs
    {
        k = $1 SUBSEP $3
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
        if (!($1 in wseen)) { wseen[$1] = 1; works[++nw] = $1 }
        sim[k] = sim[k] " " $4; el[k] = el[k] " " $5; cpu[k] = cpu[k] " " $6; rss[k] = rss[k] " " $7; proj[k] = proj[k] " " $11
        strain[k] = $8; speed[k] = $9; n[k]++
    }
    END {
        nl = split(all, lab, " "); for (i = 2; i <= nl; i++) prev[lab[i]] = lab[i - 1]
        print "| workload | binary | runs | sim s (median) | vs " first " | vs previous | sim s (min) | min vs " first " | elapsed s | CPU s | max RSS MiB | max edge strain | max speed m/s | M proj/s (median) |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= nk; i++) {
            split(order[i], p, SUBSEP); base = median(sim[p[1] SUBSEP first])
            m = median(sim[order[i]])
            vp = (p[2] in prev) ? sprintf("%.3f", m / median(sim[p[1] SUBSEP prev[p[2]]])) : "-"
            lo = least(sim[order[i]])
            printf "| %s | %s | %d | %.3f | %.3f | %s | %.3f | %.3f | %.3f | %.2f | %.1f | %.4g | %.4g | %.1f |\n", p[1], p[2], n[order[i]],
                m, m / base, vp, lo, lo / least(sim[p[1] SUBSEP first]), median(el[order[i]]), median(cpu[order[i]]), median(rss[order[i]]) / 1024, strain[order[i]], speed[order[i]], median(proj[order[i]]) / 1e6
        }
    }' "$runs" | tee "$RESULTS/summary.md"

# 2-thread speed-ups, round by round, where NAME-t1 and NAME-t2 both ran.
awk -F'\t' '
    NR == 1 || $10 != 0 || $1 !~ /-t[12]$/ { next }
    {
        base = substr($1, 1, length($1) - 3); t = substr($1, length($1))
        k = base SUBSEP $3
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
        sim[k, $2, t] = $4; rounds[k, $2] = 1
    }
    END {
        for (i = 1; i <= nk; i++) {
            n = 0; delete r
            for (kr in rounds) {
                split(kr, q, SUBSEP)
                if (q[1] SUBSEP q[2] != order[i]) continue
                if (((order[i], q[3], 1) in sim) && ((order[i], q[3], 2) in sim))
                    r[++n] = sim[order[i], q[3], 1] / sim[order[i], q[3], 2]
            }
            if (n == 0) continue
            if (!header++) { print ""; print "| workload | binary | rounds | 2-thread speed-up, per round (sorted) | median |"; print "| --- | --- | --- | --- | --- |" }
            for (a = 2; a <= n; a++) { v = r[a]; for (b = a - 1; b >= 1 && r[b] > v; b--) r[b + 1] = r[b]; r[b + 1] = v }
            list = ""; for (a = 1; a <= n; a++) list = list sprintf("%s%.2f", a > 1 ? " " : "", r[a])
            med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
            split(order[i], p, SUBSEP)
            printf "| %s | %s | %d | %s | %.2f |\n", p[1], p[2], n, list, med
        }
    }' "$runs" | tee -a "$RESULTS/summary.md"
