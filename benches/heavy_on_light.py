#!/usr/bin/env python3
"""Water in cloth held only by pins, at several contact mass ratios (docs/scene-format.md,
"Fluids"; docs/physics.md, "Heavy on light").

Writes five scenes to a temporary directory, runs each with `--set
collision.max_mass_ratio=R` for R in 1e9 (true masses), 25, 10, 4 and 1, and prints a
Markdown table of the cloth's largest edge strain over the run, or the frame the run diverged
at.

Usage: python3 benches/heavy_on_light.py [--bin target/release/xpbd-sim]
"""
import argparse
import json
import subprocess
import tempfile
from pathlib import Path

RATIOS = ["1e9", "25", "10", "4", "1"]


def scene(n, pins, water, substeps=20, iterations=2, thickness=0.0125):
    """A 0.6 m self-colliding cloth of n x n particles at y = 0.3 with `pins`, and water
    `(min, max, spacing)` above it; 36 frames."""
    (lo, hi, spacing) = water
    return f"""[simulation]
fps = 24.0
frames = 36
substeps = {substeps}
iterations = {iterations}
[output]
formats = []
[collision]
thickness = {thickness}
[[object]]
name = "cloth"
grid = {{ size = [0.6, 0.6], resolution = [{n}, {n}] }}
translate = [0.0, 0.3, 0.0]
density = 0.5
stretch = {{ compliance = 0.0 }}
self_collision = true
bending = {{ compliance = 10.0 }}
pin = [{", ".join(map(str, pins))}]
[[object]]
name = "water"
fluid = {{ box = {{ min = {lo}, max = {hi} }}, spacing = {spacing}, viscosity = 0.01 }}
density = 1000.0
[[collider]]
name = "ground"
shape = "plane"
"""


def border(n):
    return [k for k in range(n * n) if k // n in (0, n - 1) or k % n in (0, n - 1)]


def corners(n):
    return [0, n - 1, n * (n - 1), n * n - 1]


def two_edges(n):
    return [k for k in range(n * n) if k // n in (0, n - 1)]


WATER = ([-0.1, 0.35, -0.1], [0.1, 0.45, 0.1], 0.025)
SCENES = [
    ("trampoline 25 × 25, pinned all round, 20 × 2", scene(25, border(25), WATER)),
    ("the same pinned at its 4 corners", scene(25, corners(25), WATER)),
    ("the same pinned along two opposite edges", scene(25, two_edges(25), WATER)),
    (
        "41 × 41 pinned all round, 40 × 1, 1 728 particles of 12.5 mm",
        scene(
            41,
            border(41),
            ([-0.075, 0.33, -0.075], [0.075, 0.43, 0.075], 0.0125),
            substeps=40,
            iterations=1,
            thickness=0.00625,
        ),
    ),
    (
        "25 × 25 all round, 5 cm water particles (430 times a cloth particle)",
        scene(25, border(25), ([-0.15, 0.35, -0.15], [0.15, 0.5, 0.15], 0.05)),
    ),
]


def outcome(binary, path, ratio, out):
    run = subprocess.run(
        [binary, "run", str(path), "--out", str(out), "--quiet",
         "--set", f"collision.max_mass_ratio={ratio}"],
        capture_output=True,
        text=True,
    )
    stats = out / "stats.jsonl"
    if not stats.exists():
        return f"failed (exit {run.returncode}): {run.stderr.strip()[:100]}"
    records = [json.loads(line) for line in stats.open()]
    frames = [r for r in records if r.get("type") == "frame"]
    summary = [r for r in records if r.get("type") == "summary"]
    if run.returncode == 1 and summary and summary[0]["status"] == "diverged":
        return f"diverges, frame {len(frames) + 1}"
    if run.returncode != 0 or not frames:
        return f"failed (exit {run.returncode})"
    strain = max(r["objects"]["cloth"]["max_edge_strain"] for r in frames)
    return f"{100 * strain:.0f} %"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default="target/release/xpbd-sim")
    args = parser.parse_args()
    binary = str(Path(args.bin).resolve())
    print("| scene | " + " | ".join(f"ratio {r}" for r in RATIOS) + " |")
    print("| --- |" + " --- |" * len(RATIOS))
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, text) in enumerate(SCENES):
            path = Path(tmp) / f"scene{k}.toml"
            path.write_text(text)
            cells = [outcome(binary, path, r, Path(tmp) / f"out{k}_{r}") for r in RATIOS]
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
