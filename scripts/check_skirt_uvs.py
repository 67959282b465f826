#!/usr/bin/env python3
"""Checks a seamed, textured skirt frame with a real client (trimesh), not in CI.

    cargo run --release -- run scenes/skirt.toml --out /tmp/skirt --format obj --format ply
    pip install trimesh pillow
    python3 scripts/check_skirt_uvs.py /tmp/skirt 48 [out.png]

Loads frame N's OBJ and PLY with trimesh and the input scenes/meshes/skirt.obj, and checks:
the UV seam survives (33 UV columns; no face spans more than one column in u, as a lost seam
makes the faces beside it span the whole texture), both files agree with the input's UVs
face corner by face corner, and PLY and OBJ give the same surface. With a third argument it
renders the frame (seen from +X, at the seam; checker texture, z-buffered software raster) to a PNG.
"""

import sys
from pathlib import Path

import numpy as np
import trimesh

ROOT = Path(__file__).resolve().parent.parent


def corner_uvs(mesh):
    """UV of every face corner, shape (faces, 3, 2)."""
    return np.asarray(mesh.visual.uv)[mesh.faces]


def check(name, mesh, reference):
    uv = corner_uvs(mesh)
    columns = np.unique(np.round(np.asarray(mesh.visual.uv)[:, 0], 5)).size
    span = (uv[:, :, 0].max(axis=1) - uv[:, :, 0].min(axis=1)).max()
    same = np.abs(uv - corner_uvs(reference)).max()
    print(f"{name}: {len(mesh.vertices)} vertices, {len(mesh.faces)} triangles, "
          f"{columns} UV columns, widest face spans u = {span:.4f}, "
          f"corner UVs differ from the input's by {same:.2e}")
    assert columns == 33, "the seam is lost"
    assert span < 1.5 / 32, "a face spans more than one UV column: seam squeezed"
    assert same < 1e-6, "corner UVs are not the input's"


def render(mesh, path, size=512, checks=16):
    """View from +X, where the skirt's seam (u = 0 = 1) is, with a checker texture; a
    z-buffered software raster, so it needs no GPU or display."""
    from PIL import Image

    # Screen x = −z, screen y = y, depth = x (towards the camera).
    v = np.asarray(mesh.vertices)[:, [2, 1, 0]] * [-1.0, 1.0, 1.0]
    lo, hi = v[:, :2].min(axis=0), v[:, :2].max(axis=0)
    scale = (size - 20) / (hi - lo).max()
    xy = (v[:, :2] - lo) * scale + 10
    xy[:, 1] = size - xy[:, 1]
    image = np.full((size, size, 3), 40, np.uint8)
    depth = np.full((size, size), -np.inf)
    uv = np.asarray(mesh.visual.uv)
    for face in mesh.faces:
        p = xy[face]
        x0, y0 = np.floor(p.min(axis=0)).astype(int)
        x1, y1 = np.ceil(p.max(axis=0)).astype(int)
        xs, ys = np.meshgrid(np.arange(x0, x1 + 1), np.arange(y0, y1 + 1))
        d = (p[1, 1] - p[2, 1]) * (p[0, 0] - p[2, 0]) + (p[2, 0] - p[1, 0]) * (p[0, 1] - p[2, 1])
        if abs(d) < 1e-12:
            continue
        a = ((p[1, 1] - p[2, 1]) * (xs - p[2, 0]) + (p[2, 0] - p[1, 0]) * (ys - p[2, 1])) / d
        b = ((p[2, 1] - p[0, 1]) * (xs - p[2, 0]) + (p[0, 0] - p[2, 0]) * (ys - p[2, 1])) / d
        c = 1 - a - b
        inside = (a >= 0) & (b >= 0) & (c >= 0) & (xs >= 0) & (ys >= 0) & (xs < size) & (ys < size)
        z = a * v[face[0], 2] + b * v[face[1], 2] + c * v[face[2], 2]
        t = a[..., None] * uv[face[0]] + b[..., None] * uv[face[1]] + c[..., None] * uv[face[2]]
        cell = (np.floor(t[..., 0] * checks) + np.floor(t[..., 1] * checks)) % 2
        colour = np.where(cell[..., None] == 0, [230, 200, 60], [60, 90, 200])
        for yy, xx, zz, col in zip(ys[inside], xs[inside], z[inside], colour[inside]):
            if zz > depth[yy, xx]:
                depth[yy, xx] = zz
                image[yy, xx] = col
    Image.fromarray(image).save(path)
    print(f"rendered {path}")


def main():
    cache, frame = Path(sys.argv[1]), int(sys.argv[2])
    reference = trimesh.load(ROOT / "scenes/meshes/skirt.obj", process=False)
    obj = trimesh.load(cache / f"skirt.{frame:04}.obj", process=False)
    ply = trimesh.load(cache / f"skirt.{frame:04}.ply", process=False)
    check("OBJ", obj, reference)
    check("PLY", ply, reference)
    # Both files hold the same f32 values (OBJ as shortest round-trip text).
    f32 = lambda m: np.asarray(m.vertices, np.float32)[m.faces]  # noqa: E731
    gap = np.abs(f32(obj) - f32(ply)).max()
    print(f"OBJ and PLY corner positions (as f32) differ by {gap}")
    assert gap == 0.0
    if len(sys.argv) > 3:
        render(obj, sys.argv[3])
    print("ok")


if __name__ == "__main__":
    main()
