#!/usr/bin/env python3
"""Plays xpbd-sim's whole-run caches in Blender (issue 14; not in CI). Runs in either

    blender -b -P scripts/blender_caches.py -- WORK_DIR      # Debian blender 3.4
    python3 scripts/blender_caches.py WORK_DIR               # pip install bpy (5.x)

It makes WORK_DIR/skirt/ with target/release/xpbd-sim (or $XPBD_SIM): scenes/skirt.toml for 12
frames as OBJ, USD (usdc and usda), MDD and PC2. Then, in Blender:

- USD: imports the .usdc and the .usda (`wm.usd_import`) and, at frames 1, 6 and 12, compares
  every evaluated vertex in world space with the frame's OBJ (Y-up file axes turned to Blender's
  Z-up: (x, y, z) -> (x, -z, y)); reports the worst distance, whether the mesh has a `velocity`
  attribute (what Blender's motion blur and Cycles read) and its UV map count.
- MDD and PC2: imports the frame-1 OBJ (`wm.obj_import`, or the legacy importer in 3.4) and
  adds a Mesh Cache modifier with the .mdd / .pc2 (frame time mode, starting at frame 1, the
  modifier's default axes: the OBJ importer turns the object, not its vertices, so the cache's
  file-axis positions are already in the mesh's own space), and compares the same frames.

Prints one line per check and `FAIL` where a distance exceeds 1e-5 m; exits 1 on any FAIL.
"""

import os
import subprocess
import sys

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 1e-5
FRAMES = (1, 6, 12)


def arguments():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    if len(argv) != 1:
        sys.exit(__doc__)
    return os.path.abspath(argv[0])


def make_cache(work):
    out = os.path.join(work, "skirt")
    if not os.path.exists(os.path.join(out, "skirt.usdc")):
        binary = os.environ.get("XPBD_SIM", os.path.join(ROOT, "target/release/xpbd-sim"))
        formats = []
        for f in ("obj", "usd", "usda", "mdd", "pc2"):
            formats += ["--format", f]
        subprocess.run([binary, "run", os.path.join(ROOT, "scenes/skirt.toml"), "--out", out,
                        "--frames", "12", "--quiet"] + formats, check=True)
    return out


def obj_positions(path):
    """The `v` lines of an OBJ in Blender's axes."""
    points = []
    with open(path) as f:
        for line in f:
            if line.startswith("v "):
                x, y, z = (float(c) for c in line.split()[1:4])
                points.append((x, -z, y))
    return points


def clear():
    bpy.ops.wm.read_factory_settings(use_empty=True)


def evaluated(obj):
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(depsgraph).to_mesh()
    world = obj.matrix_world
    return [tuple(world @ v.co) for v in mesh.vertices], mesh


def worst_distance(got, expected):
    if len(got) != len(expected):
        return float("inf")
    return max(max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(got, expected))


def report(label, worst, extra=""):
    status = "ok" if worst <= TOLERANCE else "FAIL"
    print(f"{status:4} {label}: worst {worst:.3g} m {extra}")
    return status == "ok"


def check_usd(cache, name):
    clear()
    bpy.ops.wm.usd_import(filepath=os.path.join(cache, name))
    obj = next(o for o in bpy.data.objects if o.type == "MESH" and o.name.startswith("skirt"))
    ok = True
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        got, mesh = evaluated(obj)
        expected = obj_positions(os.path.join(cache, f"skirt.{frame:04}.obj"))
        attributes = sorted(a.name for a in mesh.attributes)
        extra = f"(velocity attribute: {'velocity' in attributes}, uv maps: {len(mesh.uv_layers)})"
        ok &= report(f"{name} frame {frame}", worst_distance(got, expected), extra)
    return ok


def import_obj(path):
    if hasattr(bpy.ops.wm, "obj_import"):
        bpy.ops.wm.obj_import(filepath=path)
    else:
        bpy.ops.import_scene.obj(filepath=path, split_mode="OFF")
    return bpy.context.selected_objects[0]


def check_point_cache(cache, extension):
    clear()
    obj = import_obj(os.path.join(cache, "skirt.0001.obj"))
    modifier = obj.modifiers.new("cache", "MESH_CACHE")
    modifier.cache_format = extension.upper()
    modifier.filepath = os.path.join(cache, f"skirt.{extension}")
    modifier.time_mode = "FRAME"
    modifier.play_mode = "SCENE"
    modifier.frame_start = 1.0
    ok = True
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        got, _ = evaluated(obj)
        expected = obj_positions(os.path.join(cache, f"skirt.{frame:04}.obj"))
        ok &= report(f"{extension} on the frame-1 OBJ, frame {frame}", worst_distance(got, expected))
    return ok


def main():
    work = arguments()
    cache = make_cache(work)
    print(f"Blender {bpy.app.version_string}, cache {cache}")
    ok = True
    for name in ("skirt.usdc", "skirt.usda"):
        if hasattr(bpy.ops.wm, "usd_import") and "usd_import" in dir(bpy.ops.wm):
            ok &= check_usd(cache, name)
        else:
            print(f"SKIP {name}: this Blender was built without USD (no wm.usd_import)")
    for extension in ("mdd", "pc2"):
        ok &= check_point_cache(cache, extension)
    sys.exit(0 if ok else 1)


main()
