#!/usr/bin/env python3
"""A peer for the self-collision ratio: scenes/pile.toml's cloth in Blender's cloth solver.

Issue 13's target for self collision is a ratio: the pile with self collision at most twice
the same pile without it. This script asks what a solver cloth TDs already use pays for its
self collision on the same cloth, in one sitting with xpbd-sim (not in CI):

    blender -b -t T -P benches/blender_pile.py -- [--rounds R] [--threads T]  # blender 3.4
    python3 benches/blender_pile.py [--rounds R] [--threads T]               # pip install bpy

`--threads` is xpbd-sim's `--threads` and Blender's render threads; give Blender's `-t` the
same. Blender's cloth still ran some work on a second thread at `-t 1` (user time 1.8 times
the wall time), so for one thread each run it under `taskset -c 0`.

The cloth, as scenes/pile.toml builds it (Blender is Z-up, so xpbd-sim's Y is Blender's Z):
a 1 m x 2 m grid of 24 x 48 particles, stood up with its long side vertical, its lowest
point 2.5 cm above a ground plane, leaning 15 degrees so that it folds to one side; 72
frames at 24 fps, 20 steps per frame (Blender's "quality"), collision distance 6 mm against
the ground and, when on, 6 mm between its own faces (xpbd-sim's `thickness`). Blender's cloth
is a different solver (an implicit mass-spring model with its own collision response), so
only the ratio and the order of magnitude compare. Its vertex mass, stiffness and air drag
are Blender's defaults: with the pile's own 0.35 g per vertex, Blender's default springs are
so stiff for the mass that the cloth hardly bends, and its drag (a force per vertex, not per
kilogram) holds the cloth in the air. With the defaults it collapses into folds on the
ground by frame 40, as xpbd-sim's pile does.

Rounds alternate (Blender with, without; xpbd-sim with, without) so a slow spell on a shared
machine lands on all four. Prints each time, the medians and both ratios. xpbd-sim is
`target/release/xpbd-sim` of this checkout (or $XPBD_SIM), run with `--no-output --quiet`.
Blender's time is the 72 `frame_set` calls, its cloth cache freed before each run.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import time

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAMES = 72
SIZE = (1.0, 2.0)
RESOLUTION = (24, 48)
THICKNESS = 0.006


def arguments():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args(argv)


def grid_mesh():
    """The 24 x 48 grid in the XZ plane (its long side along Z), centred at the origin."""
    (w, h), (nx, nz) = SIZE, RESOLUTION
    verts = [
        ((i / (nx - 1) - 0.5) * w, 0.0, (j / (nz - 1) - 0.5) * h)
        for j in range(nz)
        for i in range(nx)
    ]
    faces = [
        (j * nx + i, j * nx + i + 1, (j + 1) * nx + i + 1, (j + 1) * nx + i)
        for j in range(nz - 1)
        for i in range(nx - 1)
    ]
    mesh = bpy.data.meshes.new("pile")
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    return mesh


def build_scene(threads):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, FRAMES + 1
    scene.render.threads_mode = "FIXED"
    scene.render.threads = threads

    ground = bpy.data.objects.new("ground", bpy.data.meshes.new("ground"))
    ground.data.from_pydata([(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0)], [], [(0, 1, 2, 3)])
    scene.collection.objects.link(ground)
    ground.modifiers.new("collision", "COLLISION")
    ground.collision.thickness_outer = 0.0
    ground.collision.cloth_friction = 5.0

    cloth = bpy.data.objects.new("cloth", grid_mesh())
    scene.collection.objects.link(cloth)
    # Leaning 15 degrees about the viewing axis (Y), lowest point 2.5 cm above the ground.
    cloth.rotation_euler = (0.0, math.radians(15.0), 0.0)
    bpy.context.view_layer.update()
    lowest = min((cloth.matrix_world @ v.co).z for v in cloth.data.vertices)
    cloth.location.z = 0.025 - lowest

    modifier = cloth.modifiers.new("cloth", "CLOTH")
    settings, collision = modifier.settings, modifier.collision_settings
    settings.quality = 20
    collision.use_collision = True
    collision.distance_min = THICKNESS
    collision.self_distance_min = THICKNESS
    modifier.point_cache.frame_start, modifier.point_cache.frame_end = 1, FRAMES + 1
    return scene, cloth, modifier


def blender_run(scene, cloth, modifier, self_collision):
    modifier.collision_settings.use_self_collision = self_collision
    bpy.ops.ptcache.free_bake_all()
    scene.frame_set(1)
    start = time.perf_counter()
    for frame in range(2, FRAMES + 2):
        scene.frame_set(frame)
    seconds = time.perf_counter() - start
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = cloth.evaluated_get(depsgraph)
    low = min((evaluated.matrix_world @ v.co).z for v in evaluated.data.vertices)
    return seconds, low


def xpbd_run(threads, self_collision):
    binary = os.environ.get("XPBD_SIM", os.path.join(ROOT, "target", "release", "xpbd-sim"))
    command = [binary, "run", os.path.join(ROOT, "scenes", "pile.toml"), "--no-output",
               "--quiet", "--threads", str(threads)]
    if not self_collision:
        command += ["--set", "object.cloth.self_collision=false"]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    args = arguments()
    scene, cloth, modifier = build_scene(args.threads)
    print(f"Blender {bpy.app.version_string}, {args.threads} thread(s), load "
          f"{os.getloadavg()[0]:.2f}")
    times = {key: [] for key in ("blender with", "blender without", "xpbd with", "xpbd without")}
    for round_ in range(args.rounds):
        for self_collision in (True, False):
            seconds, low = blender_run(scene, cloth, modifier, self_collision)
            key = "blender with" if self_collision else "blender without"
            times[key].append(seconds)
            print(f"round {round_ + 1} {key}: {seconds:.3f} s (lowest vertex at {low:.4f} m)")
        for self_collision in (True, False):
            seconds = xpbd_run(args.threads, self_collision)
            key = "xpbd with" if self_collision else "xpbd without"
            times[key].append(seconds)
            print(f"round {round_ + 1} {key}: {seconds:.3f} s")
    medians = {key: statistics.median(values) for key, values in times.items()}
    for key, value in medians.items():
        print(f"median {key}: {value:.3f} s")
    print(f"self-collision ratio: Blender {medians['blender with'] / medians['blender without']:.2f}x, "
          f"xpbd-sim {medians['xpbd with'] / medians['xpbd without']:.2f}x; "
          f"with self collision xpbd-sim is "
          f"{medians['blender with'] / medians['xpbd with']:.1f}x faster than Blender")
    print(f"load after {os.getloadavg()[0]:.2f}")


main()
