#!/bin/bash
# Usage: benches/formats.sh SCENE FRAMES ROUNDS FORMAT... (e.g. scenes/bench/cloth-256.toml 40 2 ply usd usda mdd)
# Needs target/release/xpbd-sim (cargo build --release). Rounds interleave the formats.
# Interleaved: per format, the writer thread's busy seconds per frame (stats summary "writing").
scene=$1; frames=$2; rounds=$3; shift 3
for r in $(seq $rounds); do
  for f in "$@"; do
    rm -rf /tmp/fb_$f
    "$(dirname "$0")/../target/release/xpbd-sim" run $scene --frames $frames --format $f --out /tmp/fb_$f --quiet --set output.checkpoint_every=10
    python3 - "$f" "$frames" <<'PY'
import json,sys
f,frames=sys.argv[1],int(sys.argv[2])
s=json.loads(open(f'/tmp/fb_{f}/stats.jsonl').read().strip().split('\n')[-1])
w=s['wall_seconds']
print(f"{f:5} writing {1000*w['writing']/frames:7.2f} ms/frame  waiting {1000*w['waiting_for_writer']/frames:6.2f} ms/frame  peak {s.get('peak_memory_bytes',0)/2**20:7.1f} MiB")
PY
  done
done
