#!/usr/bin/env python3
"""Checks xpbd-sim caches with Blender's own importers (not in CI). Runs in either

    blender -b -P scripts/blender_check.py -- CACHE_DIR OUT_DIR      # Debian blender 3.4
    python3 scripts/blender_check.py CACHE_DIR OUT_DIR               # pip install bpy (5.x)

CACHE_DIR is a work folder. The caches it reads are made there with target/release/xpbd-sim
(or $XPBD_SIM) when missing:

    CACHE_DIR/skirt/  scenes/skirt.toml, OBJ + PLY      (frame $SKIRT_FRAME, default 36)
    CACHE_DIR/jelly/  scenes/jelly.toml, OBJ + PLY      (frame 48)
    CACHE_DIR/cube/   a flat-shaded (`s off`) cube, written by this script into
                      CACHE_DIR/cube_scene/, OBJ + PLY  (frame 6)

What it checks, in Blender's data after import (OBJ with `wm.obj_import`, and with the legacy
`import_scene.obj` where the version has it; PLY with `wm.ply_import` or `import_mesh.ply`):

- skirt: the cache frame keeps the input's UV seam: every face corner's UV equals the one
  scenes/meshes/skirt.obj gives that corner (read from the file and as Blender imports the
  input), 33 UV columns, no face spanning more than one column in u; its normals are the
  file's `vn`. The PLY is imported too: Blender's PLY importers read one UV per vertex
  (`s t`) and skip the per-face `texcoord` list, so the seam is expected to be lost there
  (reported as KNOWN, not FAIL); its positions and faces must equal the OBJ's.
- jelly: OBJ and PLY of one frame import with equal vertex and face counts and positions, and
  no vertex that no face uses.
- cube: the `s off` cube's 24 split normals arrive in Blender as custom split normals (or
  flat faces): every corner's normal is its face's normal and the file's `vn`.

It renders the input skirt, the cache frame's OBJ and its PLY side by side (left to right),
seen from the seam's side (+X in the file, +X in Blender), with a generated checker image on
the UVs (Workbench, no GPU needed), to OUT_DIR/skirt_blender_VERSION.png, and prints a
PASS/FAIL summary. Exit status 1 when anything FAILs.
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import bpy
from mathutils import Matrix, Vector

ROOT = Path(__file__).resolve().parent.parent
VERSION = bpy.app.version
VERSION_TEXT = ".".join(str(n) for n in VERSION)
RESULTS = []  # (status, name, detail)

# Y-up file → Blender Z-up, as "Forward −Z, Up Y" does: (x, y, z) → (x, −z, y).
Y_UP_TO_Z_UP = Matrix(((1, 0, 0, 0), (0, 0, -1, 0), (0, 1, 0, 0), (0, 0, 0, 1)))


def record(status, name, detail):
    RESULTS.append((status, name, detail))
    print(f"[{status}] {name}: {detail}")


def check(name, ok, detail):
    record("PASS" if ok else "FAIL", name, detail)
    return ok


# ---------------------------------------------------------------- caches


def simulator():
    exe = os.environ.get("XPBD_SIM") or str(ROOT / "target/release/xpbd-sim")
    if not Path(exe).exists():
        sys.exit(f"{exe} not found: build with `cargo build --release` or set XPBD_SIM")
    return exe


def run_scene(scene, out):
    cmd = [simulator(), "run", str(scene), "--out", str(out), "--format", "obj",
           "--format", "ply", "--quiet"]
    print("running", " ".join(cmd))
    subprocess.run(cmd, check=True)


CUBE_OBJ = ("v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nv 0 1 0\nv 1 1 0\nv 1 1 1\nv 0 1 1\n"
            "s off\nf 1 2 3 4\nf 5 8 7 6\nf 1 5 6 2\nf 2 6 7 3\nf 3 7 8 4\nf 4 8 5 1\n")
# The integration test's scene: pinned at one corner and spun, so the faces turn.
CUBE_TOML = """[simulation]
frames = 6
substeps = 10

[[object]]
name = "cube"
mesh = "cube.obj"
scale = 0.3
translate = [0.0, 1.0, 0.0]
density = 1.0
velocity = [0.0, 0.0, 1.0]
pin = [0]
stretch = { compliance = 1e-3 }
"""


def file(stem, ext):
    return stem.parent / f"{stem.name}.{ext}"


def make_caches(cache):
    skirt_frame = int(os.environ.get("SKIRT_FRAME", "36"))
    paths = {
        "skirt": cache / "skirt" / f"skirt.{skirt_frame:04}",
        "jelly": cache / "jelly" / "jelly.0048",
        "cube": cache / "cube" / "cube.0006",
    }
    if not file(paths["skirt"], "ply").exists():
        run_scene(ROOT / "scenes/skirt.toml", cache / "skirt")
    if not file(paths["jelly"], "ply").exists():
        run_scene(ROOT / "scenes/jelly.toml", cache / "jelly")
    if not file(paths["cube"], "ply").exists():
        scene_dir = cache / "cube_scene"
        scene_dir.mkdir(parents=True, exist_ok=True)
        (scene_dir / "cube.obj").write_text(CUBE_OBJ)
        (scene_dir / "cube.toml").write_text(CUBE_TOML)
        run_scene(scene_dir / "cube.toml", cache / "cube")
    return paths


# ---------------------------------------------------------------- reading files ourselves


def parse_obj(path):
    """v, vt, vn lists and faces as lists of (v, vt, vn) 0-based (None when absent)."""
    v, vt, vn, faces = [], [], [], []
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "v":
            v.append(tuple(float(x) for x in parts[1:4]))
        elif parts[0] == "vt":
            vt.append(tuple(float(x) for x in parts[1:3]))
        elif parts[0] == "vn":
            vn.append(tuple(float(x) for x in parts[1:4]))
        elif parts[0] == "f":
            face = []
            for corner in parts[1:]:
                idx = (corner.split("/") + ["", ""])[:3]
                face.append(tuple(int(i) - 1 if i else None for i in idx))
            faces.append(face)
    return v, vt, vn, faces


def to_blender(p):
    x, y, z = p
    return Vector((x, -z, y))


# ---------------------------------------------------------------- importing


def new_objects(action):
    before = set(bpy.data.objects)
    action()
    made = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
    if len(made) != 1:
        raise RuntimeError(f"expected one mesh object, got {len(made)}")
    return made[0]


def import_obj_new(path):
    return new_objects(lambda: bpy.ops.wm.obj_import(
        filepath=str(path), forward_axis="NEGATIVE_Z", up_axis="Y"))


def import_obj_legacy(path):
    import addon_utils
    addon_utils.enable("io_scene_obj", default_set=True)
    return new_objects(lambda: bpy.ops.import_scene.obj(
        filepath=str(path), axis_forward="-Z", axis_up="Y", split_mode="OFF"))


def import_ply(path):
    if hasattr(bpy.ops.wm, "ply_import") and VERSION >= (3, 6, 0):
        return new_objects(lambda: bpy.ops.wm.ply_import(
            filepath=str(path), forward_axis="NEGATIVE_Z", up_axis="Y"))
    # 3.4's Python add-on has no axis options: it reads the file's axes as they are.
    import addon_utils
    addon_utils.enable("io_mesh_ply", default_set=True)
    obj = new_objects(lambda: bpy.ops.import_mesh.ply(filepath=str(path)))
    obj.data.transform(Y_UP_TO_Z_UP)
    return obj


def obj_importers():
    importers = [("wm.obj_import", import_obj_new)]
    if VERSION < (4, 0, 0):
        importers.append(("import_scene.obj (legacy)", import_obj_legacy))
    return importers


def ply_importer_name():
    return "wm.ply_import" if VERSION >= (3, 6, 0) else "import_mesh.ply"


# ---------------------------------------------------------------- mesh data


def corner_normals(mesh):
    if hasattr(mesh, "corner_normals"):  # 4.1+
        return [Vector(n.vector) for n in mesh.corner_normals]
    mesh.calc_normals_split()
    return [Vector(loop.normal) for loop in mesh.loops]


def normals_info(mesh):
    smooth = sum(p.use_smooth for p in mesh.polygons)
    info = f"has_custom_normals={mesh.has_custom_normals}, {smooth}/{len(mesh.polygons)} faces smooth"
    if hasattr(mesh, "use_auto_smooth"):
        info += f", use_auto_smooth={mesh.use_auto_smooth}"
    if hasattr(mesh, "normals_domain"):
        info += f", normals_domain={mesh.normals_domain}"
    return info


def corner_uvs(mesh):
    layer = mesh.uv_layers.active
    return None if layer is None else [tuple(d.uv) for d in layer.data]


def match_corners(obj, v, faces):
    """For each Blender polygon, the indices of the file face's corners in Blender's loop
    order (Blender may start a polygon at another corner); None when the positions differ."""
    mesh, world = obj.data, obj.matrix_world  # the importers put the axis turn here
    if len(mesh.polygons) != len(faces):
        return None
    order = []
    for poly, face in zip(mesh.polygons, faces):
        cos = [world @ mesh.vertices[mesh.loops[i].vertex_index].co for i in poly.loop_indices]
        want = [to_blender(v[c[0]]) for c in face]
        if len(cos) != len(want):
            return None
        for shift in range(len(want)):
            if all((cos[k] - want[(k + shift) % len(want)]).length < 1e-5 for k in range(len(want))):
                order.append([(k + shift) % len(want) for k in range(len(want))])
                break
        else:
            return None
    return order


def uv_checks(label, obj, v, faces, input_uvs, reference_uvs, expect_seam=True):
    """The seam checks on one imported mesh: `v`, `faces` from its file, `input_uvs` the input
    file's UV of every face corner, `reference_uvs` Blender's corner UVs of the input."""
    mesh = obj.data
    uvs = corner_uvs(mesh)
    if uvs is None:
        return check(f"{label}: UV layer", False, "no UV layer")
    order = match_corners(obj, v, faces)
    if order is None:
        return check(f"{label}: faces", False, "Blender's polygons do not match the file's faces")
    file_diff = 0.0
    span = 0.0
    worst_face = None
    for poly, corners in zip(mesh.polygons, order):
        us = [uvs[i][0] for i in poly.loop_indices]
        if max(us) - min(us) > span:
            span, worst_face = max(us) - min(us), poly.index
        for i, k in zip(poly.loop_indices, corners):
            want = input_uvs[poly.index][k]
            file_diff = max(file_diff, abs(uvs[i][0] - want[0]), abs(uvs[i][1] - want[1]))
    columns = len({round(u, 5) for u, _ in uvs})
    ref_diff = max(max(abs(a[0] - b[0]), abs(a[1] - b[1])) for a, b in zip(uvs, reference_uvs)) \
        if len(reference_uvs) == len(uvs) else float("inf")
    detail = (f"{len(mesh.vertices)} vertices, {len(mesh.polygons)} faces, {columns} UV columns, "
              f"widest face u-span {span:.4f} (face {worst_face}, 0-based), corner UVs vs "
              f"input file {file_diff:.2e}, vs Blender's import of the input {ref_diff:.2e}")
    ok = columns == 33 and span < 1.5 / 32 and file_diff < 1e-6 and ref_diff < 1e-6
    if expect_seam:
        return check(f"{label}: UV seam kept", ok, detail)
    record("PASS" if ok else "KNOWN", f"{label}: UV seam (PLY: per-vertex s t only)", detail)
    return True


def normal_checks(label, obj, v, vn, faces):
    """Every corner's normal in Blender against the file's vn of that corner."""
    mesh, turn = obj.data, obj.matrix_world.to_3x3()
    order = match_corners(obj, v, faces)
    if order is None or not vn:
        return check(f"{label}: normals", False, "faces do not match or no vn")
    normals = corner_normals(mesh)
    worst = 1.0
    where = None
    for poly, corners in zip(mesh.polygons, order):
        for i, c in zip(poly.loop_indices, (faces[poly.index][k] for k in corners)):
            dot = (turn @ normals[i]).normalized().dot(to_blender(vn[c[2]]).normalized())
            if dot < worst:
                worst, where = dot, (poly.index, i)
    angle = math.degrees(math.acos(max(-1.0, min(1.0, worst))))
    return check(f"{label}: corner normals = file vn", angle < 0.5,
                 f"worst {angle:.3f}° (face {where[0] if where else '-'}); {normals_info(mesh)}")


# ---------------------------------------------------------------- the checks


def check_skirt(paths, importers):
    input_path = ROOT / "scenes/meshes/skirt.obj"
    iv, ivt, _, ifaces = parse_obj(input_path)
    cv, cvt, cvn, cfaces = parse_obj(file(paths["skirt"], "obj"))
    check("skirt OBJ file: corners' v/vt = input's",
          [[c[:2] for c in f] for f in cfaces] == [[c[:2] for c in f] for f in ifaces]
          and cvt == ivt, f"{len(cv)} v, {len(cvt)} vt, {len(cvn)} vn, {len(cfaces)} f")
    input_uvs = [[ivt[c[1]] for c in face] for face in ifaces]
    meshes = {}
    for name, importer in importers:
        reference = importer(input_path)
        ref_uvs = corner_uvs(reference.data) or []
        uv_checks(f"skirt input, {name}", reference, iv, ifaces, input_uvs, ref_uvs)
        cached = importer(file(paths["skirt"], "obj"))
        uv_checks(f"skirt cache OBJ, {name}", cached, cv, cfaces, input_uvs, ref_uvs)
        normal_checks(f"skirt cache OBJ, {name}", cached, cv, cvn, cfaces)
        meshes[name] = (reference, cached, ref_uvs)
    reference, cached, ref_uvs = meshes["wm.obj_import"]
    ply = import_ply(file(paths["skirt"], "ply"))
    pname = f"skirt cache PLY, {ply_importer_name()}"
    same = same_surface(cached, ply)
    check(f"{pname}: same vertices and faces as the OBJ", same[0], same[1])
    uv_checks(pname, ply, cv, cfaces, input_uvs, ref_uvs, expect_seam=False)
    record("INFO", f"{pname}: normals", normals_info(ply.data))
    # Only the first importer's objects are rendered.
    for name, (r, c, _) in meshes.items():
        if name != "wm.obj_import":
            bpy.data.objects.remove(r)
            bpy.data.objects.remove(c)
    return reference, cached, ply


def same_surface(obj_a, obj_b, tolerance=1e-6):
    a, b = obj_a.data, obj_b.data
    if len(a.vertices) != len(b.vertices) or len(a.polygons) != len(b.polygons):
        return False, (f"{len(a.vertices)} vs {len(b.vertices)} vertices, "
                       f"{len(a.polygons)} vs {len(b.polygons)} faces")
    gap = max((obj_a.matrix_world @ p.co - obj_b.matrix_world @ q.co).length
              for p, q in zip(a.vertices, b.vertices))
    faces_a = [tuple(p.vertices) for p in a.polygons]
    faces_b = [tuple(p.vertices) for p in b.polygons]
    same_faces = sorted(tuple(sorted(f)) for f in faces_a) == sorted(tuple(sorted(f)) for f in faces_b)
    return gap < tolerance and same_faces, (
        f"{len(a.vertices)} vertices, {len(a.polygons)} faces each; positions differ by "
        f"{gap:.2e}; same faces: {same_faces}")


def loose_vertices(mesh):
    used = {i for p in mesh.polygons for i in p.vertices}
    return len(mesh.vertices) - len(used)


def check_jelly(paths, importers):
    v, _, _, faces = parse_obj(file(paths["jelly"], "obj"))
    ply = import_ply(file(paths["jelly"], "ply"))
    for name, importer in importers:
        obj = importer(file(paths["jelly"], "obj"))
        same = same_surface(obj, ply)
        check(f"jelly OBJ ({name}) vs PLY ({ply_importer_name()})", same[0], same[1])
        check(f"jelly OBJ ({name}): file's vertices kept, none loose",
              len(obj.data.vertices) == len(v) and loose_vertices(obj.data) == 0,
              f"file {len(v)} v, Blender {len(obj.data.vertices)}, "
              f"{loose_vertices(obj.data)} loose")
        bpy.data.objects.remove(obj)
    check("jelly PLY: no loose vertices", loose_vertices(ply.data) == 0,
          f"{loose_vertices(ply.data)} loose of {len(ply.data.vertices)}")
    bpy.data.objects.remove(ply)


def check_cube(paths, importers):
    v, _, vn, faces = parse_obj(file(paths["cube"], "obj"))
    for name, importer in importers:
        obj = importer(file(paths["cube"], "obj"))
        mesh = obj.data
        normal_checks(f"cube `s off` OBJ, {name}", obj, v, vn, faces)
        normals = corner_normals(mesh)
        worst = min(normals[i].dot(p.normal) for p in mesh.polygons for i in p.loop_indices)
        check(f"cube `s off` OBJ, {name}: shaded flat (corner normal = face normal)",
              worst > 0.9998 and len(mesh.vertices) == 8,
              f"{len(mesh.vertices)} vertices, {len(vn)} vn in the file, worst corner-to-face "
              f"angle {math.degrees(math.acos(min(1.0, worst))):.3f}°; {normals_info(mesh)}")
        bpy.data.objects.remove(obj)
    ply = import_ply(file(paths["cube"], "ply"))
    normals = corner_normals(ply.data)
    worst = min(normals[i].dot(p.normal) for p in ply.data.polygons for i in p.loop_indices)
    record("INFO", f"cube PLY, {ply_importer_name()}",
           f"{len(ply.data.vertices)} vertices; worst corner-to-face angle "
           f"{math.degrees(math.acos(min(1.0, worst))):.1f}° (the file has one smooth normal per "
           f"vertex; 0° means flat faces, the file's normals unused); {normals_info(ply.data)}")
    bpy.data.objects.remove(ply)


# ---------------------------------------------------------------- render


def checker_image(size=512, cells=16):
    """Yellow/blue checker; the cells of the first u column (u < 1/16) are red/blue, so the
    seam's side u = 0 is told from u = 1."""
    image = bpy.data.images.new("checker", size, size)
    pixels = [0.0] * (size * size * 4)
    for y in range(size):
        for x in range(size):
            cx, cy = x * cells // size, y * cells // size
            if (cx + cy) % 2:
                rgb = (0.05, 0.1, 0.6)
            elif cx == 0:
                rgb = (0.8, 0.05, 0.05)
            else:
                rgb = (0.9, 0.75, 0.1)
            k = 4 * (y * size + x)
            pixels[k:k + 4] = (*rgb, 1.0)
    image.pixels.foreach_set(pixels)
    image.pack()
    return image


def textured(obj, image):
    material = bpy.data.materials.new("checker")
    if VERSION < (5, 0, 0):  # 5.0 materials always have nodes (and deprecate the flag)
        material.use_nodes = True
    nodes = material.node_tree.nodes
    texture = nodes.new("ShaderNodeTexImage")
    texture.image = image
    texture.interpolation = "Closest"
    bsdf = nodes.get("Principled BSDF")
    material.node_tree.links.new(texture.outputs["Color"], bsdf.inputs["Base Color"])
    nodes.active = texture
    obj.data.materials.clear()
    obj.data.materials.append(material)


def render(objects, path):
    scene = bpy.context.scene
    image = checker_image()
    # Side by side along Blender's Y (screen right when looking along −X), each centred on
    # its own bounding box in X and Y; heights kept.
    width = 0.7
    for k, obj in enumerate(objects):
        textured(obj, image)
        corners = [obj.matrix_world @ Vector(c) for c in obj.bound_box]
        cx = sum(c.x for c in corners) / 8
        cy = sum(c.y for c in corners) / 8
        obj.location.x -= cx
        obj.location.y += (k - (len(objects) - 1) / 2) * width - cy
    bpy.context.view_layer.update()  # matrix_world after the moves
    # Orthographic, from +X (the seam), 15° above the horizon so the hem's opening shows.
    camera_data = bpy.data.cameras.new("camera")
    camera_data.type = "ORTHO"
    camera = bpy.data.objects.new("camera", camera_data)
    scene.collection.objects.link(camera)
    elevation = math.radians(15.0)
    camera.rotation_euler = (math.pi / 2 - elevation, 0.0, math.pi / 2)
    turn = camera.rotation_euler.to_matrix()
    right, up, back = turn.col[0], turn.col[1], turn.col[2]
    points = [o.matrix_world @ Vector(c) for o in objects for c in o.bound_box]
    xs = [p.dot(right) for p in points]
    ys = [p.dot(up) for p in points]
    margin = 0.05
    camera.location = (right * (min(xs) + max(xs)) / 2 + up * (min(ys) + max(ys)) / 2
                       + back * 5.0)
    camera_data.ortho_scale = max(xs) - min(xs) + 2 * margin
    scene.camera = camera
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "TEXTURE"
    scene.display.shading.show_backface_culling = False
    scene.view_settings.view_transform = "Standard"
    scene.display.shading.show_specular_highlight = False
    scene.render.resolution_x = 1200
    scene.render.resolution_y = int(1200 * (max(ys) - min(ys) + 2 * margin) / camera_data.ortho_scale)
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False
    if scene.world is None:
        scene.world = bpy.data.worlds.new("world")
    scene.world.color = (0.3, 0.3, 0.3)  # Workbench's background
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.render.image_settings.compression = 90
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    ok = Path(path).exists() and Path(path).stat().st_size > 0
    check("render", ok, f"{path} ({'left to right: ' + ', '.join(o.name for o in objects)})")


# ---------------------------------------------------------------- main


def main():
    args = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    cache, out = Path(args[0]).resolve(), Path(args[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}")
    paths = make_caches(cache)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    importers = obj_importers()
    reference, cached, ply = check_skirt(paths, importers)
    check_jelly(paths, importers)
    check_cube(paths, importers)
    reference.name, cached.name, ply.name = "input skirt.obj", "cache OBJ", "cache PLY"
    render([reference, cached, ply], out / f"skirt_blender_{VERSION_TEXT}.png")
    failed = [r for r in RESULTS if r[0] == "FAIL"]
    print(f"\nSUMMARY (Blender {bpy.app.version_string}):")
    for status, name, _ in RESULTS:
        print(f"  {status:5} {name}")
    print(f"{'FAIL' if failed else 'PASS'}: {len(failed)} failed, "
          f"{sum(r[0] == 'PASS' for r in RESULTS)} passed, "
          f"{sum(r[0] == 'KNOWN' for r in RESULTS)} known limitations")
    return 1 if failed else 0


if __name__ == "__main__":
    status = main()
    if status:
        # Under `blender -P`, sys.exit inside the script does not set Blender's exit status
        # on every version; os._exit does.
        sys.stdout.flush()
        os._exit(status)
