#!/usr/bin/env python3
"""External anchor for xpbd-sim's solver throughput: the cloth-256 workload in Taichi.

What it measures
    The same cloth as scenes/bench/cloth-256.toml (docs/benchmarks.md), solved by a coloured
    Gauss-Seidel XPBD solver written in Taichi (CPU backend, 2 threads, f64), and by
    xpbd-sim itself, in one sitting, rounds interleaved (Taichi, xpbd-sim, Taichi, ...) so a
    slow spell on a shared machine lands on both. It prints, per round and as medians,
    millions of constraint projections per second for each and the ratio xpbd-sim / Taichi.
    A ratio above 1 means xpbd-sim is faster.

The workload (as xpbd-sim builds it: src/mesh/primitives.rs, src/generate.rs,
src/scene/build.rs, src/solver/colouring.rs, src/solver/step/mod.rs)
    * an N x N particle grid of 1 m x 1 m in the XZ plane at y = 1 m, particle (i, j) =
      j*N + i; each quad (a, b, c, d) split along a-c into triangles (a, c, b), (a, d, c);
    * masses lumped by area (density 0.2 kg/m^2, area/3 per triangle corner); vertices 0 and
      N-1 pinned (inverse mass 0);
    * stretch: a distance constraint (compliance 0) on every unique triangle edge (grid edges
      and the a-c diagonal), in sorted (min, max) order;
    * bending: a dihedral constraint (compliance 100, rest angle from the flat rest state, so
      0) on every edge shared by two triangles, stencil [e0, e1, o0, o1], signed
      atan2 angle of src/constraints/dihedral.rs with its Bridson gradient;
    * both kinds coloured greedily in build order (lowest free colour of 64, pinned particles
      ignored), then sorted by colour;
    * gravity -9.81, 24 fps, 20 substeps x 1 iteration, lambda reset every substep, and per
      iteration a symmetric sweep: stretch colours forward, bending colours forward, bending
      colours backward, stretch colours backward. Each constraint is projected twice per
      substep, and both sides count it twice: projections = 2 x constraints x substeps x frames.

Differences from xpbd-sim (small)
    * Taichi's atan2 is libm's; xpbd-sim uses its own polynomial (within 1 ulp of pi).
    * xpbd-sim's `wall_seconds.simulation` also holds its per-frame diagnostics (energies,
      residuals, strain) and its per-substep divergence check; the Taichi solver has neither.
    * xpbd-sim's `--frames F` writes F frames of which the first is the initial state, so it is
      run with `--frames F+1` to simulate the same F frames as Taichi.
    * Taichi's JIT compile is left out: one warm-up frame runs before the timed frames (the
      state is then reset, so both simulate frames 1..F from rest).

The Taichi solver runs a whole substep as one kernel launch (the colour loops unrolled at
compile time, each colour a parallel loop of its own, run in order). This costs ~20 s of JIT
compile in the first warm-up frame and saves ~0.03 ms per launch against one launch per colour
(`--per-colour-launch`, ~880 launches a frame at N=256; same results bit for bit; compiled
kernels are kept in Taichi's cache, ~/.cache/taichi, so later runs start at once).

Sanity check: the `max edge strain` printed at the end. The workload does not converge, so it
is large (docs/benchmarks.md), but both solvers should agree: to 6 digits for the first ~12
frames, then drifting apart slowly as rounding differences (atan2, fused multiply-adds) grow
(measured at N=256: 296.8 against 297.9 after 24 frames).

How to run (not run in CI; needs `pip install taichi` and a release build of xpbd-sim):
    cargo build --release
    python3 benches/taichi_anchor.py                          # N=256, 24 frames, 3 rounds
    python3 benches/taichi_anchor.py --n 128 --frames 12 --rounds 1
Options: --n N  --frames F  --rounds R  --xpbd-sim PATH (default target/release/xpbd-sim),
--f32 (Taichi in f32), --per-colour-launch. Exits 2 if taichi is missing.
Run from anywhere; paths are resolved against this checkout. Keep the machine otherwise idle:
both solvers use 2 threads, and the load average is printed before and after.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENE = os.path.join(REPO, "scenes", "bench", "cloth-256.toml")
OUT_DIR = "/tmp/taichi-anchor-out"

FPS = 24.0
SUBSTEPS = 20
GRAVITY = -9.81
DENSITY = 0.2
STRETCH_COMPLIANCE = 0.0
BENDING_COMPLIANCE = 100.0
COLOURS = 64

try:
    import taichi as ti
except ImportError:
    print(
        "taichi is not installed: `python3 -m pip install taichi` "
        "(wheels exist for CPython 3.8-3.12 on x86-64 Linux, macOS and Windows)",
        file=sys.stderr,
    )
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Set-up in numpy: the grid, masses, constraints and colouring, exactly as xpbd-sim builds them.


def grid(n):
    """Rest positions (y = 1 m) and triangles of the N x N sheet (primitives::grid)."""
    u = np.arange(n) / (n - 1)
    x = np.zeros((n * n, 3))
    jj, ii = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    x[:, 0] = (u[ii.ravel()] - 0.5) * 1.0
    x[:, 1] = 1.0
    x[:, 2] = (u[jj.ravel()] - 0.5) * 1.0
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="xy")
    i, j = i.ravel(), j.ravel()  # j-major, i fastest: the order of the Rust loops
    a, b, c, d = j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i
    tris = np.empty((2 * len(a), 3), dtype=np.int64)
    tris[0::2] = np.stack([a, c, b], axis=1)
    tris[1::2] = np.stack([a, d, c], axis=1)
    return x, tris


def lumped_inverse_masses(x, tris, pinned):
    area = 0.5 * np.linalg.norm(
        np.cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]]), axis=1
    )
    mass = np.zeros(len(x))
    for k in range(3):
        np.add.at(mass, tris[:, k], area / 3.0)
    mass *= DENSITY
    w = 1.0 / mass
    w[pinned] = 0.0
    return w


def unique_edges(tris):
    """Mesh::unique_edges: sorted (min, max) pairs of the triangle edges."""
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    e.sort(axis=1)
    return np.unique(e, axis=0)


def hinges(tris):
    """generate::hinges: [e0, e1, o0, o1] per edge shared by exactly two triangles."""
    t = tris
    # (undirected edge, directed start, opposite) for (a,b,c), (b,c,a), (c,a,b).
    e0 = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    e1 = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    o = np.concatenate([t[:, 2], t[:, 0], t[:, 1]])
    lo, hi = np.minimum(e0, e1), np.maximum(e0, e1)
    order = np.lexsort((o, e0, hi, lo))  # sort by (lo, hi, start, opposite) like the Rust tuple
    lo, hi, e0, o = lo[order], hi[order], e0[order], o[order]
    key = lo * (hi.max() + 1) + hi
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    counts = np.diff(np.r_[starts, len(key)])
    first = starts[counts == 2]
    if np.any(counts > 2):
        raise SystemExit("non-manifold grid?")
    start_a, o0, o1 = e0[first], o[first], o[first + 1]
    other = np.where(start_a == lo[first], hi[first], lo[first])
    return np.stack([start_a, other, o0, o1], axis=1)


def dihedral_rest_angles(x, st):
    p = [x[st[:, k]] for k in range(4)]
    e = p[1] - p[0]
    na = np.cross(e, p[2] - p[0])
    nb = np.cross(p[3] - p[1], e)
    inv_len = 1.0 / np.linalg.norm(e, axis=1)
    return np.arctan2(np.einsum("ij,ij->i", np.cross(na, nb), e) * inv_len,
                      np.einsum("ij,ij->i", na, nb))


def colour(particles, w):
    """ConstraintBlock::new: greedy lowest free colour in build order, pinned particles
    ignored; returns the permutation sorting by colour (stable) and the colour offsets."""
    used = [0] * len(w)
    moves = w != 0.0
    colour_of = np.empty(len(particles), dtype=np.int64)
    rows = particles.tolist()
    mv = moves.tolist()
    for k, row in enumerate(rows):
        taken = 0
        for i in row:
            if mv[i]:
                taken |= used[i]
        free = ~taken & ((1 << COLOURS) - 1)
        c = (free & -free).bit_length() - 1 if free else COLOURS
        if c < COLOURS:
            bit = 1 << c
            for i in row:
                if mv[i]:
                    used[i] |= bit
        colour_of[k] = c
    if np.any(colour_of >= COLOURS):
        raise SystemExit("a constraint fits none of the 64 colours (overflow group not modelled)")
    order = np.argsort(colour_of, kind="stable")
    counts = np.bincount(colour_of, minlength=colour_of.max() + 1)
    offsets = np.r_[0, np.cumsum(counts)].tolist()
    return order, offsets


# ---------------------------------------------------------------------------------------------
# The Taichi solver.


class TaichiCloth:
    def __init__(self, n, real, per_colour_launch=False):
        self.n = n
        self.per_colour_launch = per_colour_launch
        x0, tris = grid(n)
        w = lumped_inverse_masses(x0, tris, [0, n - 1])
        edges = unique_edges(tris)
        stencils = hinges(tris)
        rest_len = np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=1)
        rest_ang = dihedral_rest_angles(x0, stencils)
        s_order, self.s_off = colour(edges, w)
        b_order, self.b_off = colour(stencils, w)
        self.edges, self.rest_len = edges, rest_len  # build order, for the strain check
        self.n_stretch, self.n_bending = len(edges), len(stencils)
        self.x0 = x0

        np_real = np.float64 if real == ti.f64 else np.float32
        P, S, B = len(x0), len(edges), len(stencils)
        self.x = ti.Vector.field(3, real, P)
        self.x_prev = ti.Vector.field(3, real, P)
        self.v = ti.Vector.field(3, real, P)
        self.w = ti.field(real, P)
        self.s_idx = ti.Vector.field(2, ti.i32, S)
        self.s_rest = ti.field(real, S)
        self.s_lam = ti.field(real, S)
        self.b_idx = ti.Vector.field(4, ti.i32, B)
        self.b_rest = ti.field(real, B)
        self.b_lam = ti.field(real, B)
        self.w.from_numpy(w.astype(np_real))
        self.s_idx.from_numpy(edges[s_order].astype(np.int32))
        self.s_rest.from_numpy(rest_len[s_order].astype(np_real))
        self.b_idx.from_numpy(stencils[b_order].astype(np.int32))
        self.b_rest.from_numpy(rest_ang[b_order].astype(np_real))
        self.np_real = np_real
        self._build_kernels(real)
        self.reset()

    def reset(self):
        self.x.from_numpy(self.x0.astype(self.np_real))
        self.v.from_numpy(np.zeros_like(self.x0, dtype=self.np_real))

    def _build_kernels(self, real):
        x, x_prev, v, w = self.x, self.x_prev, self.v, self.w
        s_idx, s_rest, s_lam = self.s_idx, self.s_rest, self.s_lam
        b_idx, b_rest, b_lam = self.b_idx, self.b_rest, self.b_lam
        PI, TAU = np.pi, 2.0 * np.pi

        @ti.kernel
        def predict(h: real):
            for i in x:
                x_prev[i] = x[i]
                if w[i] > 0.0:
                    v[i][1] += GRAVITY * h
                    x[i] += v[i] * h

        @ti.kernel
        def update_velocities(h: real):
            for i in x:
                v[i] = (x[i] - x_prev[i]) / h  # velocity_damping = 0

        @ti.func
        def project_stretch(k, alpha_tilde, reset: ti.template()):
            if ti.static(reset):
                s_lam[k] = 0.0
            a, b = s_idx[k][0], s_idx[k][1]
            wa, wb = w[a], w[b]
            d = x[a] - x[b]
            length = d.norm()
            if length >= 1e-12:
                nrm = d / length
                c = length - s_rest[k]
                wgs = (wa + wb) * nrm.norm_sqr()
                denom = wgs + alpha_tilde
                if wgs > 0.0 and denom > 2.2250738585072014e-308:
                    dl = (-c - alpha_tilde * s_lam[k]) / denom
                    s_lam[k] += dl
                    if wa != 0.0:
                        x[a] += nrm * (wa * dl)
                    if wb != 0.0:
                        x[b] -= nrm * (wb * dl)

        @ti.func
        def project_bending(k, alpha_tilde, reset: ti.template()):
            if ti.static(reset):
                b_lam[k] = 0.0
            i0, i1, i2, i3 = b_idx[k][0], b_idx[k][1], b_idx[k][2], b_idx[k][3]
            e0, e1, o0, o1 = x[i0], x[i1], x[i2], x[i3]
            e = e1 - e0
            e_sq = e.norm_sqr()
            n_a = e.cross(o0 - e0)
            n_b = (o1 - e1).cross(e)
            na_sq, nb_sq = n_a.norm_sqr(), n_b.norm_sqr()
            tiny = 1e-24 * ti.max(e_sq * e_sq, 2.2250738585072014e-308)
            if not (e_sq < 1e-24 or na_sq <= tiny or nb_sq <= tiny):
                inv_el = 1.0 / ti.sqrt(e_sq)
                el = e_sq * inv_el
                theta = ti.atan2(n_a.cross(n_b).dot(e) * inv_el, n_a.dot(n_b))
                inv_prod = 1.0 / (na_sq * nb_sq)
                u_a = n_a * (nb_sq * inv_prod)
                u_b = n_b * (na_sq * inv_prod)
                d_a, d_b = (o0 - e0).dot(e), (o1 - e0).dot(e)
                g0 = -(u_a * (d_a - e_sq) + u_b * (d_b - e_sq)) * inv_el
                g1 = (u_a * d_a + u_b * d_b) * inv_el
                g2 = u_a * (-el)
                g3 = u_b * (-el)
                w0, w1, w2, w3 = w[i0], w[i1], w[i2], w[i3]
                wgs = (w0 * g0.norm_sqr() + w1 * g1.norm_sqr()
                       + w2 * g2.norm_sqr() + w3 * g3.norm_sqr())
                c = theta - b_rest[k]
                if not (c > -PI and c <= PI):  # wrap into (-pi, pi]
                    c = c - TAU * ti.floor((c + PI) * (1.0 / TAU))
                    if c <= -PI:
                        c += TAU
                denom = wgs + alpha_tilde
                if wgs > 0.0 and denom > 2.2250738585072014e-308:
                    dl = (-c - alpha_tilde * b_lam[k]) / denom
                    b_lam[k] += dl
                    if w0 != 0.0:
                        x[i0] += g0 * (w0 * dl)
                    if w1 != 0.0:
                        x[i1] += g1 * (w1 * dl)
                    if w2 != 0.0:
                        x[i2] += g2 * (w2 * dl)
                    if w3 != 0.0:
                        x[i3] += g3 * (w3 * dl)

        # One launch per colour (--per-colour-launch) ...
        @ti.kernel
        def stretch(start: ti.i32, end: ti.i32, alpha_tilde: real, reset: ti.template()):
            for k in range(start, end):
                project_stretch(k, alpha_tilde, reset)

        @ti.kernel
        def bending(start: ti.i32, end: ti.i32, alpha_tilde: real, reset: ti.template()):
            for k in range(start, end):
                project_bending(k, alpha_tilde, reset)

        # ... or the whole substep in one launch (the default): the colour loops are unrolled
        # at compile time, and every loop at the kernel's top level is a parallel task of its
        # own, run in order.
        s_off, b_off = self.s_off, self.b_off
        ns, nb = len(s_off) - 1, len(b_off) - 1

        @ti.kernel
        def substep(h: real, at_s: real, at_b: real):
            for i in x:
                x_prev[i] = x[i]
                if w[i] > 0.0:
                    v[i][1] += GRAVITY * h
                    x[i] += v[i] * h
            for c in ti.static(range(ns)):
                for k in range(s_off[c], s_off[c + 1]):
                    project_stretch(k, at_s, True)
            for c in ti.static(range(nb)):
                for k in range(b_off[c], b_off[c + 1]):
                    project_bending(k, at_b, True)
            for c in ti.static(range(nb - 1, -1, -1)):
                for k in range(b_off[c], b_off[c + 1]):
                    project_bending(k, at_b, False)
            for c in ti.static(range(ns - 1, -1, -1)):
                for k in range(s_off[c], s_off[c + 1]):
                    project_stretch(k, at_s, False)
            for i in x:
                v[i] = (x[i] - x_prev[i]) / h

        self._substep = substep
        self._predict, self._update = predict, update_velocities
        self._stretch, self._bending = stretch, bending

    def step_frame(self):
        h = 1.0 / (FPS * SUBSTEPS)
        at_s = STRETCH_COMPLIANCE / (h * h)
        at_b = BENDING_COMPLIANCE / (h * h)
        if not self.per_colour_launch:
            for _ in range(SUBSTEPS):
                self._substep(h, at_s, at_b)
            return
        s_ranges = list(zip(self.s_off[:-1], self.s_off[1:]))
        b_ranges = list(zip(self.b_off[:-1], self.b_off[1:]))
        for _ in range(SUBSTEPS):
            self._predict(h)
            # Forward: stretch then bending, resetting lambda on first touch (iterations = 1).
            for a, b in s_ranges:
                self._stretch(a, b, at_s, True)
            for a, b in b_ranges:
                self._bending(a, b, at_b, True)
            # Backward: bending colours reversed, then stretch colours reversed.
            for a, b in reversed(b_ranges):
                self._bending(a, b, at_b, False)
            for a, b in reversed(s_ranges):
                self._stretch(a, b, at_s, False)
            self._update(h)

    def projections_per_frame(self):
        return 2 * (self.n_stretch + self.n_bending) * SUBSTEPS

    def max_edge_strain(self):
        x = self.x.to_numpy().astype(np.float64)
        e = self.edges
        length = np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1)
        return float(np.max(np.abs(length / self.rest_len - 1.0)))


# ---------------------------------------------------------------------------------------------
# Runs.


def run_taichi(cloth, frames):
    cloth.reset()
    cloth.step_frame()  # warm-up: JIT compile (first round) and caches
    ti.sync()
    cloth.reset()
    ti.sync()
    start = time.perf_counter()
    for _ in range(frames):
        cloth.step_frame()
    ti.sync()
    seconds = time.perf_counter() - start
    return cloth.projections_per_frame() * frames / seconds, seconds


def scene_for(n, tmpdir):
    if n == 256:
        return SCENE
    with open(SCENE) as f:
        text = f.read()
    text, k1 = re.subn(r"resolution = \[256, 256\]", f"resolution = [{n}, {n}]", text)
    text, k2 = re.subn(r"pin = \[0, 255\]", f"pin = [0, {n - 1}]", text)
    if k1 != 1 or k2 != 1:
        raise SystemExit(f"{SCENE} no longer has the expected grid/pin lines")
    path = os.path.join(tmpdir, f"cloth-{n}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run_xpbd(binary, scene, frames):
    # `--frames F+1`: frame 1 is the initial state, so F+1 frames simulate F steps.
    cmd = [binary, "run", scene, "--no-output", "--quiet", "--threads", "2",
           "--frames", str(frames + 1), "--out", OUT_DIR]
    subprocess.run(cmd, check=True)
    with open(os.path.join(OUT_DIR, "stats.jsonl")) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    summary = lines[-1]
    if summary.get("status") != "ok":
        raise SystemExit(f"xpbd-sim run failed: {summary}")
    strain = [r["max_edge_strain"] for r in lines if r.get("type") == "frame"][-1]
    return (summary["constraint_projections_per_second"],
            summary["wall_seconds"]["simulation"], strain, cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=256, help="particles per side (default 256)")
    ap.add_argument("--frames", type=int, default=24, help="timed frames per run (default 24)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--xpbd-sim", default=os.path.join(REPO, "target", "release", "xpbd-sim"),
                    help="the binary to time (default target/release/xpbd-sim)")
    ap.add_argument("--f32", action="store_true", help="Taichi in f32 instead of f64")
    ap.add_argument("--per-colour-launch", action="store_true",
                    help="one Taichi kernel launch per colour instead of one per substep")
    args = ap.parse_args()
    if not os.access(args.xpbd_sim, os.X_OK):
        raise SystemExit(f"{args.xpbd_sim} not found: cargo build --release")

    load_before = os.getloadavg()
    real = ti.f32 if args.f32 else ti.f64
    ti.init(arch=ti.cpu, cpu_max_num_threads=2, default_fp=real, log_level=ti.WARN)
    t0 = time.perf_counter()
    cloth = TaichiCloth(args.n, real, args.per_colour_launch)
    print(f"taichi {'.'.join(map(str, ti.__version__))}, python {sys.version.split()[0]}, "
          f"{'f32' if args.f32 else 'f64'}, 2 CPU threads, one launch per "
          f"{'colour' if args.per_colour_launch else 'substep'}")
    print(f"grid {args.n}x{args.n}: {cloth.n_stretch} stretch in {len(cloth.s_off) - 1} "
          f"colours, {cloth.n_bending} bending in {len(cloth.b_off) - 1} colours "
          f"(set-up {time.perf_counter() - t0:.1f} s); {args.frames} frames x {SUBSTEPS} "
          f"substeps x 1 iteration, symmetric sweep")
    print(f"load average before: {' '.join(f'{l:.2f}' for l in load_before)}")

    taichi_rates, xpbd_rates = [], []
    with tempfile.TemporaryDirectory() as tmp:
        scene = scene_for(args.n, tmp)
        for r in range(args.rounds):
            t_rate, t_sec = run_taichi(cloth, args.frames)
            x_rate, x_sec, x_strain, cmd = run_xpbd(args.xpbd_sim, scene, args.frames)
            if r == 0:
                print("xpbd-sim: " + " ".join(cmd))
            taichi_rates.append(t_rate)
            xpbd_rates.append(x_rate)
            print(f"round {r + 1}: taichi {t_rate / 1e6:7.2f} M proj/s ({t_sec:6.2f} s)   "
                  f"xpbd-sim {x_rate / 1e6:7.2f} M proj/s ({x_sec:6.2f} s)   "
                  f"ratio {x_rate / t_rate:5.2f}")

    t_med, x_med = statistics.median(taichi_rates), statistics.median(xpbd_rates)
    print(f"median:  taichi {t_med / 1e6:7.2f} M proj/s   xpbd-sim {x_med / 1e6:7.2f} M proj/s"
          f"   ratio xpbd-sim/taichi {x_med / t_med:5.2f}")
    print(f"max edge strain after {args.frames} frames: taichi {cloth.max_edge_strain():.6g}, "
          f"xpbd-sim {x_strain:.6g}")
    print(f"load average after: {' '.join(f'{l:.2f}' for l in os.getloadavg())}")


if __name__ == "__main__":
    main()
