#!/usr/bin/env bash
# Issue 17, on a real Slurm: a 4-task wedge submitted with `xpbd-sim wedge --submit slurm` to
# a one-node cluster on localhost (start_cluster.sh), each task's frame files compared byte
# for byte with the same `run` typed by hand; then one task cancelled mid-run with scancel,
# requeued with `scontrol requeue`, and checked to resume from its checkpoint to the same
# bytes. Usage: scripts/slurm/wedge_test.sh [path/to/xpbd-sim]. Exit 0 passed (or skipped
# where the machine cannot run the daemons: start_cluster.sh's exit 77), 1 failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-target/release/xpbd-sim}")
started=$(date +%s)

fail() { echo "wedge_test: FAILED: $*" >&2; exit 1; }
elapsed() { echo $(( $(date +%s) - started )); }

"$here/start_cluster.sh"
code=$?
if [ "$code" = 77 ]; then
    echo "wedge_test: skipped: this machine cannot run the Slurm daemons (see above)"
    exit 0
fi
[ "$code" = 0 ] || fail "the Slurm cluster did not start"
trap '"$here/stop_cluster.sh" >/dev/null 2>&1' EXIT

work=$(mktemp -d /tmp/wedge-slurm.XXXXXX)
cat > "$work/scene.toml" <<'EOF'
[simulation]
fps = 24.0
frames = 24
substeps = 20
iterations = 1

[output]
formats = ["obj"]
checkpoint_every = 4

[[object]]
name = "cloth"
grid = { size = [1.0, 1.0], resolution = [24, 24] }
translate = [0.0, 1.0, 0.0]
density = 0.2
stretch = { compliance = 0.0 }
bending = { compliance = 10.0 }

[[collider]]
name = "ball"
shape = "sphere"
center = [0.0, 0.4, 0.0]
radius = 0.4
friction = 0.3
EOF

# Waits until job $1 has left the queue (at most $2 seconds).
wait_for_job() {
    local deadline=$(( $(date +%s) + $2 ))
    while [ -n "$(squeue -h -j "$1" 2>/dev/null)" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || { squeue; fail "job $1 still queued after $2 s"; }
        sleep 0.5
    done
}

# The same run by hand: hand_run DIR KEY=VALUE...
hand_run() {
    local out=$1; shift
    local sets=()
    for pair in "$@"; do sets+=(--set "$pair"); done
    "$bin" run "$work/scene.toml" --out "$out" "${sets[@]}" --quiet || fail "hand run $out"
}

# Frame files of $1 and $2 are the same bytes (the stats logs hold wall times and differ).
same_frames() {
    local a b count=0
    for a in "$1"/*.obj; do
        b="$2/$(basename "$a")"
        cmp -s "$a" "$b" || fail "$a differs from $b"
        count=$((count + 1))
    done
    [ "$count" -gt 0 ] || fail "no frames in $1"
    [ "$count" = "$(ls "$2"/*.obj | wc -l)" ] || fail "$1 and $2 hold different frame counts"
}

echo "== 4-task wedge on Slurm"
"$bin" wedge "$work/scene.toml" --out "$work/w" --submit slurm --cpus 1 --time 00:05:00 \
    --vary object.cloth.bending.compliance=1,50 --vary collider.ball.friction=0.2,0.5 \
    > "$work/submit.txt" || fail "wedge --submit slurm"
cat "$work/submit.txt"
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$work/submit.txt")
[ -n "$job" ] || fail "no job id printed"
wait_for_job "$job" 120
"$bin" wedge status "$work/w" || fail "wedge status"
[ "$("$bin" wedge status "$work/w" --csv | grep -c ',done,')" = 4 ] || fail "not every task is done"
for b in 1 50; do
    for f in 0.2 0.5; do
        task=$(ls "$work/w" | grep -- "-bending.compliance=$b-ball.friction=$f\$") || fail "no task for $b $f"
        hand_run "$work/hand/$task" "object.cloth.bending.compliance=$b" "collider.ball.friction=$f"
        same_frames "$work/w/$task" "$work/hand/$task"
    done
done
echo "every task's frames are the bytes of the run typed by hand ($(elapsed) s)"

echo "== a task cancelled mid-run, requeued, resumes to the same bytes"
long=(--set simulation.frames=480 --set collider.ball.friction=0.2)
"$bin" wedge "$work/scene.toml" --out "$work/r" --submit slurm --cpus 1 --time 00:05:00 \
    "${long[@]}" --vary object.cloth.bending.compliance=1 > "$work/submit2.txt" \
    || fail "wedge --submit slurm (one task)"
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$work/submit2.txt")
task=$(sed -n 's/.*"name": "\(w000-[^"]*\)".*/\1/p' "$work/r/wedge.json")
[ -n "$task" ] || fail "no task in $work/r/wedge.json"
deadline=$(( $(date +%s) + 60 ))
until ls "$work/r/$task/checkpoints/"*.ckpt >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "no checkpoint within 60 s"
    sleep 0.1
done
scancel "${job}_0" || fail "scancel"
wait_for_job "$job" 60
grep -q '"status":"interrupted"' "$work/r/$task/stats.jsonl" \
    || fail "the cancelled task did not stop at a checkpoint: $(tail -1 "$work/r/$task/stats.jsonl")"
frames_before=$(grep -c '"type":"frame"' "$work/r/$task/stats.jsonl")
[ "$frames_before" -lt 480 ] || fail "the task finished before it was cancelled"
echo "cancelled after $frames_before frames; requeueing"
scontrol requeue "${job}_0" || fail "scontrol requeue"
sleep 1
wait_for_job "$job" 120
grep -q '"type":"resume"' "$work/r/$task/stats.jsonl" || fail "the requeued task did not resume"
[ "$("$bin" wedge status "$work/r" --csv | grep -c ',done,')" = 1 ] || fail "the requeued task is not done"
hand_run "$work/hand/long" simulation.frames=480 collider.ball.friction=0.2 object.cloth.bending.compliance=1
same_frames "$work/r/$task" "$work/hand/long"
echo "the requeued task resumed to the bytes of an uninterrupted run"
echo "wedge_test: passed in $(elapsed) s"
rm -rf "$work"
