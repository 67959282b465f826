#!/usr/bin/env python3
"""How much of the pile's self-collision work a normal-cone test could skip: a study, not a
benchmark (docs/benchmarks.md, "Issue 13: what normal cones could skip on the pile").

A patch of cloth whose triangle normals all lie within a cone of half-angle under 90 degrees
around one axis is a height field over the plane across that axis; if its outline, seen
along that axis, does not cross itself either, no two of its elements can pass through
each other, and its pairs need no contact tests (Volino and Magnenat-Thalmann 1994; Provot
1997; Schvartzman et al. 2010 make the outline test cheap). This script measures the best
such a test could do on a cache of a grid cloth with UVs (the pile's): per frame, the
element pairs whose boxes overlap as the solver's per-substep box test grows them (edges by
D/2 each, triangles by D, points bare; pairs sharing a particle left out), and the share of
them inside one flat patch, or inside two neighbouring patches whose union is flat. Patches
are squares of P x P grid quads, found from the UVs. The outline test is not made (so the
shares are an upper bound), and the frames' end positions stand for the substeps.

Usage: python3 benches/flat_patches.py CACHE_DIR [--patch P] [--angle DEGREES]
  e.g. xpbd-sim run scenes/pile.toml --out /tmp/pile && \
       python3 benches/flat_patches.py /tmp/pile --patch 2
Needs numpy. CACHE_DIR/…NNNN.obj are read in name order (the OBJ files of one object).
"""
import argparse
import glob

import numpy as np

D = 0.012  # the pile's contact distance 2r


def read_obj(path):
    v, vt, f = [], [], []
    with open(path) as lines:
        for line in lines:
            s = line.split()
            if not s:
                continue
            if s[0] == "v":
                v.append([float(x) for x in s[1:4]])
            elif s[0] == "vt":
                vt.append([float(x) for x in s[1:3]])
            elif s[0] == "f":
                f.append([int(x.split("/")[0]) - 1 for x in s[1:4]])
    return np.array(v), np.array(vt), np.array(f)


class Patches:
    """Squares of `size` x `size` grid quads, from the UVs of a grid's vertices."""

    def __init__(self, uv, triangles, edges, size):
        quads = np.round(1.0 / np.diff(np.unique(uv[:, 0]))[0]), np.round(
            1.0 / np.diff(np.unique(uv[:, 1]))[0]
        )
        scale = np.array(quads) / size
        self.rows = int(np.ceil(quads[1] / size))
        self.cols = int(np.ceil(quads[0] / size))
        self.count = self.cols * self.rows
        # An element's patch is the one holding its centre in UV; a vertex on a patch border
        # goes to the lower one.
        self.of_triangle = self.cell(uv[triangles].mean(1) * scale)
        self.of_edge = self.cell(uv[edges].mean(1) * scale)
        self.of_vertex = self.cell(np.clip(uv * scale - 1e-9, 0, None))

    def cell(self, grid_uv):
        c = np.minimum(np.floor(grid_uv).astype(int), [self.cols - 1, self.rows - 1])
        return c[:, 0] * self.rows + c[:, 1]

    def neighbours(self, a, b):
        ca = np.stack([a // self.rows, a % self.rows], 1)
        cb = np.stack([b // self.rows, b % self.rows], 1)
        return (np.abs(ca - cb).max(1) == 1)


def half_angles(normals, groups, group_count):
    """Per group, the half-angle (degrees) of the cone around the groups' summed normals."""
    axis = np.zeros((group_count, 3))
    np.add.at(axis, groups, normals)
    length = np.linalg.norm(axis, axis=1, keepdims=True)
    axis = np.divide(axis, length, out=np.zeros_like(axis), where=length > 0)
    unit = normals / np.linalg.norm(normals, axis=1, keepdims=True)
    cosine = np.einsum("ij,ij->i", unit, axis[groups])
    angle = np.full(group_count, 180.0)
    np.minimum.at(angle, groups, 0.0)  # groups with triangles start at 0
    np.maximum.at(angle, groups, np.degrees(np.arccos(np.clip(cosine, -1, 1))))
    return angle


def union_flat(normals, patches, a, b, flat):
    """Whether the union of patches a[k] and b[k] is within `flat` degrees, per k."""
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], 1), axis=0)
    result = {}
    for p, q in pairs:
        inside = (patches.of_triangle == p) | (patches.of_triangle == q)
        angle = half_angles(normals[inside], np.zeros(inside.sum(), int), 1)[0]
        result[(p, q)] = angle < flat
    return np.array([result[(min(p, q), max(p, q))] for p, q in zip(a, b)], bool)


def flat_shares(a, b, angle, normals, patches, flat):
    """Per pair of elements in patches a[k] and b[k]: in one flat patch; in one or two
    neighbouring patches that are flat together."""
    same_flat = (a == b) & (angle[b] < flat)
    near = patches.neighbours(a, b)
    near_flat = np.zeros(len(a), bool)
    near_flat[near] = union_flat(normals, patches, a[near], b[near], flat)
    return same_flat, same_flat | near_flat


def frame_counts(x, triangles, edges, patches, flat):
    normals = np.cross(x[triangles[:, 1]] - x[triangles[:, 0]], x[triangles[:, 2]] - x[triangles[:, 0]])
    angle = half_angles(normals, patches.of_triangle, patches.count)
    # Edge pairs whose boxes, grown by D/2 each, overlap; no shared particle.
    lo = np.minimum(x[edges[:, 0]], x[edges[:, 1]]) - D / 2
    hi = np.maximum(x[edges[:, 0]], x[edges[:, 1]]) + D / 2
    overlap = np.all((lo[:, None] <= hi[None]) & (lo[None] <= hi[:, None]), axis=2)
    shared = (edges[:, None, :, None] == edges[None, :, None, :]).any((2, 3))
    i, j = np.nonzero(np.triu(overlap & ~shared, 1))
    pi, pj = patches.of_edge[i], patches.of_edge[j]
    same_flat, either_flat = flat_shares(pi, pj, angle, normals, patches, flat)
    # Point-triangle pairs: triangle boxes grown by D, points bare; not the triangle's own.
    tlo, thi = x[triangles].min(1) - D, x[triangles].max(1) + D
    inside = np.all((x[:, None] >= tlo[None]) & (x[:, None] <= thi[None]), axis=2)
    inside &= ~(triangles[None] == np.arange(len(x))[:, None, None]).any(2)
    p, t = np.nonzero(inside)
    pp, pt = patches.of_vertex[p], patches.of_triangle[t]
    pt_same_flat, pt_either_flat = flat_shares(pp, pt, angle, normals, patches, flat)
    return np.array([
        len(i), (pi == pj).sum(), same_flat.sum(), either_flat.sum(),
        len(p), pt_same_flat.sum(), pt_either_flat.sum(),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cache", help="directory of one object's OBJ frames")
    parser.add_argument("--patch", type=int, default=2, help="patch side in grid quads")
    parser.add_argument("--angle", type=float, default=30.0, help="flat: cone half-angle under this")
    parser.add_argument("--ranges", default="1-12,13-24,25-36,37-48,49-72")
    args = parser.parse_args()
    files = sorted(glob.glob(f"{args.cache}/*.obj"))
    _, uv, triangles = read_obj(files[0])
    edges = np.unique(np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    patches = Patches(uv, triangles, edges, args.patch)
    ranges = [tuple(int(v) for v in r.split("-")) for r in args.ranges.split(",")]
    totals = {r: np.zeros(7) for r in ranges}
    frames = {r: 0 for r in ranges}
    for number, path in enumerate(files, start=1):
        r = next((r for r in ranges if r[0] <= number <= r[1]), None)
        if r is None:
            continue
        x, _, _ = read_obj(path)
        totals[r] += frame_counts(x, triangles, edges, patches, args.angle)
        frames[r] += 1
    print(f"{args.patch} x {args.patch} quads a patch, {patches.count} patches, flat under {args.angle:g} degrees")
    print("| frames | edge pairs a frame, boxes overlap | in one patch | in one flat patch "
          "| in one or two neighbouring patches, flat | point-triangle pairs a frame "
          "| in one flat patch | in one or two, flat |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r, t in totals.items():
        if frames[r] == 0:
            continue
        e, pt = max(t[0], 1), max(t[4], 1)
        print(f"| {r[0]}–{r[1]} | {t[0] / frames[r]:.0f} | {t[1] / e:.0%} | {t[2] / e:.0%} "
              f"| {t[3] / e:.0%} | {t[4] / frames[r]:.0f} | {t[5] / pt:.0%} | {t[6] / pt:.0%} |")


if __name__ == "__main__":
    main()
