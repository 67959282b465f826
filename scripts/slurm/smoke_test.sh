#!/usr/bin/env bash
# Smoke test for the cluster started by start_cluster.sh: array job, scancel of
# one array task, scontrol requeue of that task, SIGTERM delivery.
# Prints timings; exits non-zero on failure (77 if no cluster is reachable).
set -uo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
log()  { printf '[smoke] %s\n' "$*" >&2; }
fail() { log "FAIL: $*"; for j in ${J2:-} ${J3:-}; do scancel "$j" 2>/dev/null; done; exit 1; }
now()  { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds
wait_for() { local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge "$end" ] && return 1; sleep 0.2; done; }

timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' || { log "SKIP: no slurmctld"; exit 77; }
D=$(mktemp -d /tmp/slurm-smoke.XXXXXX); chmod 755 "$D"
log "work dir $D"

# --- 1. four-task array job -------------------------------------------------
t0=$(now)
J1=$(sbatch --parsable --array=0-3 --cpus-per-task=1 --output="$D/a_%a.out" \
        --wrap 'echo task=$SLURM_ARRAY_TASK_ID; sleep 5') || fail "sbatch"
queue_empty() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
wait_for 120 queue_empty "$J1" || fail "array job $J1 did not finish in 120 s"
for i in 0 1 2 3; do grep -qx "task=$i" "$D/a_$i.out" || fail "missing/bad $D/a_$i.out"; done
log "array job $J1 (4 x sleep 5 on $(sinfo -h -o %c) CPUs): finished in $(since "$t0") s"
for i in 0 1 2 3; do
    st=$(scontrol show job "${J1}_$i" 2>/dev/null | grep -o 'JobState=[A-Z]*')
    [ "$st" = JobState=COMPLETED ] || fail "${J1}_$i: $st"
done

# --- 2. scancel one running array task, check SIGTERM ----------------------
cat >"$D/long.sh" <<'JOB'
#!/bin/bash
f=DIR/sig_$SLURM_ARRAY_TASK_ID
echo "start restart=${SLURM_RESTART_COUNT:-0} $(date +%s.%N)" >>"$f"
echo "stdout run restart=${SLURM_RESTART_COUNT:-0}"
trap 'echo "TERM $(date +%s.%N)" >>"$f"; exit 143' TERM
for _ in $(seq 1 300); do sleep 1 & wait $!; done
JOB
sed -i "s|DIR|$D|" "$D/long.sh"
J2=$(sbatch --parsable --array=0-1 --cpus-per-task=1 --output="$D/b_%a.out" "$D/long.sh") || fail "sbatch long"
is_running() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ]; }
wait_for 30 is_running "${J2}_1" || fail "${J2}_1 not running"
sleep 1
t1=$(now)
scancel "${J2}_1" || fail "scancel ${J2}_1"
gone() { ! squeue -h -j "$1" -t R,CG 2>/dev/null | grep -q .; }
wait_for 60 gone "${J2}_1" || fail "${J2}_1 still in squeue 60 s after scancel"
log "scancel ${J2}_1: job left squeue after $(since "$t1") s"
grep -q '^TERM' "$D/sig_1" && log "task got SIGTERM (trap ran)" || fail "no SIGTERM seen"
st=$(scontrol show job "${J2}_1" | grep -o 'JobState=[A-Z]*')
[ "$st" = JobState=CANCELLED ] || fail "${J2}_1: $st after scancel"
is_running "${J2}_0" || fail "${J2}_0 was disturbed by scancel of ${J2}_1"

# --- 3. requeue the cancelled task -------------------------------------------
t2=$(now)
scontrol requeue "${J2}_1" || fail "scontrol requeue ${J2}_1"
wait_for 90 is_running "${J2}_1" || fail "${J2}_1 not running again after requeue"
log "scontrol requeue ${J2}_1: running again after $(since "$t2") s"
[ "$(grep -c '^start' "$D/sig_1")" = 2 ] || fail "task did not start twice"
grep -q 'start restart=1' "$D/sig_1" || fail "SLURM_RESTART_COUNT not 1 on rerun"
scontrol show job "${J2}_1" | grep -q 'Restarts=1' || fail "Restarts != 1"
log "output file after requeue: $(tr '\n' '|' <"$D/b_1.out")"

scancel "$J2"; wait_for 60 queue_empty "$J2"

# --- 4. a task that ignores SIGTERM is SIGKILLed after KillWait ------------
cat >"$D/stubborn.sh" <<'JOB'
#!/bin/bash
f=DIR/stubborn
trap 'echo "TERM $(date +%s.%N)" >>"$f"' TERM
echo "start $(date +%s.%N)" >>"$f"
for _ in $(seq 1 300); do sleep 1 & wait $!; done
echo "end $(date +%s.%N)" >>"$f"
JOB
sed -i "s|DIR|$D|" "$D/stubborn.sh"
J3=$(sbatch --parsable --array=0 --cpus-per-task=1 --output=/dev/null "$D/stubborn.sh") || fail "sbatch stubborn"
wait_for 30 is_running "${J3}_0" || fail "${J3}_0 not running"
sleep 1
t3=$(now)
scancel "${J3}_0"
wait_for 120 gone "${J3}_0" || fail "${J3}_0 not killed"
kw=$(scontrol show config | awk '/^KillWait/ {print $3}')
log "task ignoring SIGTERM: killed after $(since "$t3") s (KillWait=$kw)"
grep -q '^TERM' "$D/stubborn" || fail "stubborn task saw no SIGTERM"
grep -q '^end' "$D/stubborn" && fail "stubborn task ran to completion"

rm -rf "$D"
log "OK"
