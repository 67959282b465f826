//! The side test of edge pairs ([`super::edge_edge`]) written once over [`Real`] and run two
//! ways: for one pair in `f64`, and for the listed pairs of a substep eight at a time, in the
//! lanes of the constraint kernels ([`crate::constraints::lanes`], on
//! [`SimdPath::chosen`](crate::constraints::batch::SimdPath::chosen)).
//!
//! On the self-colliding pile about 4.3 M edge pairs pass the box test over the run, and the
//! side test at the substep's start and, for most, at its end rejected all but 0.32 M of them:
//! 55 % nearly parallel, the rest with a closest point outside an edge. One pair at a time,
//! those rejections were branches on data and 11 % of the pile's instructions
//! (docs/benchmarks.md, "Issue 13: the edge side test in lanes"). In lanes every pair takes
//! every step, and a mask says which have a side.
//!
//! **Same bits.** Only `+ − × ÷ √` and comparisons, each exactly rounded per lane
//! ([`crate::constraints::lanes`]), in the order of the scalar formulas: `closest_parameters`'
//! `s` and `t` and glam's `DVec3::normalize` (`m · (1/|m|)`). The parameters are computed only
//! as far as the interior case needs them: every other branch of
//! [`super::edge_edge::closest_parameters`] ends with `s` or `t` at 0 or 1, which is not
//! interior, so "interior" is the mask of the branch that divides (tested against the full
//! function below).

use super::bvh::boxes_overlap;
use super::edge_edge::{EdgeContact, MIN_SINE, TINY};
use crate::constraints::batch::lane_passes;
use crate::constraints::lane_io::{ParticleLanes, Scalar};
use crate::constraints::lanes::{Real, Vec3, LANES};
use glam::DVec3;

/// Where the side of edge `p2–q2` that edge `p1–q1` is on (the sign of `(p − q) · m̂`, see
/// [`super::edge_edge`]) is known: their closest points are inside both, they are not nearly
/// parallel and they do not touch; and that side (±1; NaN where a coordinate is). The names
/// are those of [`super::edge_edge::closest_parameters`] (Ericson's).
#[inline(always)]
fn interior_side<S: Real>([p1, q1, p2, q2]: [Vec3<S>; 4]) -> (S::Mask, S) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let m = d1.cross(d2);
    let (a, e) = (d1.length_squared(), d2.length_squared());
    let not_parallel = m.length_squared().gt(S::splat(MIN_SINE * MIN_SINE) * a * e);
    let (f, c, b) = (d2.dot(r), d1.dot(r), d1.dot(d2));
    let denominator = a * e - b * b;
    let s = (b * f - c * e) / denominator;
    let t = (b * s + f) / e;
    let (zero, one) = (S::splat(0.0), S::splat(1.0));
    // No closures here: a closure does not inherit the `#[target_feature]` of the function
    // it is inlined into, and its vector operations become calls.
    let known = not_parallel
        & a.gt(S::splat(TINY))
        & e.gt(S::splat(TINY))
        & denominator.gt(zero)
        & (s.gt(zero) & s.lt(one))
        & (t.gt(zero) & t.lt(one));
    let height = r.dot(m.scale(one / m.length()));
    let touching = height.le(zero) & zero.le(height);
    let sign = S::select(height.is_sign_negative(), -one, one);
    (
        known & !touching,
        S::select(height.le(height), sign, height),
    )
}

/// [`interior_side`] of the pairs in lanes at `x_prev` or, where unknown there, at `x`.
///
/// # Safety
/// Every particle of `ends` is in bounds of `x` and `x_prev`.
#[inline(always)]
unsafe fn sides<S: Real, IO: ParticleLanes<S>>(
    ends: &[[u32; LANES]; 4],
    x: &[DVec3],
    x_prev: &[DVec3],
) -> (S::Mask, S) {
    // SAFETY: the caller's promise.
    let (before, side_before) = interior_side(unsafe { gather_ends::<S, IO>(ends, x_prev) });
    // SAFETY: as above.
    let (now, side_now) = interior_side(unsafe { gather_ends::<S, IO>(ends, x) });
    (before | now, S::select(before, side_before, side_now))
}

/// The four particles of each lane in `positions`: an edge pair's ends, or a particle and a
/// triangle's corners. Written out: through `[T; N]::map`'s closure the gathers lose the
/// `#[target_feature]` of the function around them and become calls.
///
/// # Safety
/// Every particle of `ends` is in bounds of `positions`.
#[inline(always)]
pub(super) unsafe fn gather_ends<S: Real, IO: ParticleLanes<S>>(
    ends: &[[u32; LANES]; 4],
    positions: &[DVec3],
) -> [Vec3<S>; 4] {
    // SAFETY: the caller's promise.
    unsafe {
        [
            IO::gather(positions, &ends[0]),
            IO::gather(positions, &ends[1]),
            IO::gather(positions, &ends[2]),
            IO::gather(positions, &ends[3]),
        ]
    }
}

/// The contact of edges `pair` (indices into `edges`) once their boxes overlap: the side, if
/// known at the substep's start or else at its end (see [`super::edge_edge`]).
pub fn sided_contact(
    pair: [u32; 2],
    edges: &[[u32; 2]],
    x: &[DVec3],
    x_prev: &[DVec3],
) -> Option<EdgeContact> {
    let ([a, b], [c, d]) = (edges[pair[0] as usize], edges[pair[1] as usize]);
    let ends = [[a; LANES], [b; LANES], [c; LANES], [d; LANES]];
    assert!(in_bounds(&ends, x, x_prev), "edge pair {pair:?}");
    // SAFETY: every particle was checked just above.
    let (known, side) = unsafe { sides::<f64, Scalar>(&ends, x, x_prev) };
    known.then_some(EdgeContact { edges: pair, side })
}

lane_passes! {
    /// Appends the contacts of `listed` (pairs of indices into `edges`, their swept boxes in
    /// `boxes`) to `out`, in their order: the pairs whose boxes overlap and whose side is
    /// known, as [`sided_contact`] gives them one at a time.
    pub fn contacts(
        listed: &[[u32; 2]],
        edges: &[[u32; 2]],
        boxes: &[(DVec3, DVec3)],
        x: &[DVec3],
        x_prev: &[DVec3],
        out: &mut Vec<EdgeContact>,
    );
    /// [`contacts`] on `path`; also panics if a pair or particle is out of bounds.
    fn contacts_on / contacts_avx2 / contacts_avx512 = contacts_with;
}

/// Whether every particle of `particles` (four per lane: an edge pair's ends, or a particle
/// and a triangle's corners) is in bounds of `x` and `x_prev`: checked once per batch,
/// before its gathers, which do not check.
#[inline(always)]
pub(super) fn in_bounds(particles: &[[u32; LANES]; 4], x: &[DVec3], x_prev: &[DVec3]) -> bool {
    let mut largest = 0;
    for lanes in particles {
        for &p in lanes {
            largest = largest.max(p);
        }
    }
    (largest as usize) < x.len().min(x_prev.len())
}

/// The lanes whose bit is set in `known` among the first `held`, ascending: the pairs of a
/// batch that have a side (a short batch's lanes past `held` repeat its first pair).
#[inline(always)]
pub(super) fn known_lanes(known: u32, held: usize) -> impl Iterator<Item = usize> {
    let mut bits = known & ((1 << held) - 1);
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let l = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            l
        })
    })
}

/// [`contacts`] in lanes of `S`: the box test pair by pair, and the pairs that pass it
/// collected into batches of [`LANES`] for the side test (a short last batch repeats its
/// first pair in the lanes past its end, which are not read).
#[inline(always)]
fn contacts_with<S: Real, IO: ParticleLanes<S>>(
    listed: &[[u32; 2]],
    edges: &[[u32; 2]],
    boxes: &[(DVec3, DVec3)],
    x: &[DVec3],
    x_prev: &[DVec3],
    out: &mut Vec<EdgeContact>,
) {
    let mut batch = [[0u32; 2]; LANES];
    let mut held = 0;
    for &pair in listed {
        if boxes_overlap(boxes[pair[0] as usize], boxes[pair[1] as usize]) {
            batch[held] = pair;
            held += 1;
            if held == LANES {
                push_sided::<S, IO>(&batch, held, edges, x, x_prev, out);
                held = 0;
            }
        }
    }
    if held > 0 {
        let first = batch[0];
        batch[held..].fill(first);
        push_sided::<S, IO>(&batch, held, edges, x, x_prev, out);
    }
}

/// Appends the contacts of the first `held` pairs of `batch` whose side is known.
///
/// # Panics
/// If a pair or particle is out of bounds.
#[inline(always)]
fn push_sided<S: Real, IO: ParticleLanes<S>>(
    batch: &[[u32; 2]; LANES],
    held: usize,
    edges: &[[u32; 2]],
    x: &[DVec3],
    x_prev: &[DVec3],
    out: &mut Vec<EdgeContact>,
) {
    let mut ends = [[0u32; LANES]; 4];
    for (l, &[i, j]) in batch.iter().enumerate() {
        let ([a, b], [c, d]) = (edges[i as usize], edges[j as usize]);
        (ends[0][l], ends[1][l], ends[2][l], ends[3][l]) = (a, b, c, d);
    }
    assert!(in_bounds(&ends, x, x_prev), "edge pairs {batch:?}");
    // SAFETY: every particle was checked just above.
    let (known, side) = unsafe { sides::<S, IO>(&ends, x, x_prev) };
    for l in known_lanes(S::mask_bits(known), held) {
        out.push(EdgeContact {
            edges: batch[l],
            side: side.lane(l),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::edge_edge::{closest_parameters, swept_box};
    use super::*;
    use crate::collision::test_numbers::Numbers;
    use crate::constraints::batch::SimdPath;

    /// The side as the module notes of [`super::super::edge_edge`] define it, from the full
    /// closest-point function: what the lanes' shortcut must give bit for bit.
    fn reference_side(e: [DVec3; 2], f: [DVec3; 2]) -> Option<f64> {
        let m = (e[1] - e[0]).cross(f[1] - f[0]);
        let (ee, ff) = (
            (e[1] - e[0]).length_squared(),
            (f[1] - f[0]).length_squared(),
        );
        if m.length_squared() <= MIN_SINE * MIN_SINE * ee * ff {
            return None;
        }
        let (s, t) = closest_parameters(e[0], e[1], f[0], f[1]);
        let interior = |u: f64| u > 0.0 && u < 1.0;
        if !(interior(s) && interior(t)) {
            return None;
        }
        let height = (e[0] - f[0]).dot(m.normalize());
        (height != 0.0).then(|| height.signum())
    }

    /// Positions of 4 particles per pair: random, or built to hit the cases the branches of
    /// the scalar test separate (parallel, a point for an edge, touching, ends outside).
    fn cases(count: usize) -> Vec<DVec3> {
        let mut n = Numbers(0x9e37_79b9_7f4a_7c15);
        let mut v = || DVec3::new(n.next(), n.next(), n.next()) - 0.5;
        let mut x = Vec::new();
        for k in 0..count {
            let (a, b, c, d) = (v(), v(), v(), v());
            let ends = match k % 6 {
                0 => [a, b, c, d],
                1 => [a, b, c, c + (b - a) * 0.7], // parallel
                2 => [a, a, c, d],                 // a point
                3 => [a, b, a + (b - a) * 0.5, d], // touching at c
                4 => [a, b, c, c + (b - a).cross(d) * 0.01], // short, across
                _ => [a * 1e-13, b * 1e-13, c, d], // below TINY
            };
            x.extend(ends);
        }
        x
    }

    /// The interior-only parameters give the full function's sides, bit for bit.
    #[test]
    fn the_side_shortcut_is_the_full_closest_point_test() {
        let x = cases(3000);
        let mut known = 0;
        for q in x.chunks(4) {
            let lanes = [q[0], q[1], q[2], q[3]].map(Vec3::from);
            let (mask, side) = interior_side::<f64>(lanes);
            let expected = reference_side([q[0], q[1]], [q[2], q[3]]);
            assert_eq!(
                mask.then_some(side.to_bits()),
                expected.map(f64::to_bits),
                "{q:?}"
            );
            known += usize::from(mask);
        }
        assert!(
            known > 100,
            "{known} of 3000 sides known: too few to test the lanes"
        );
    }

    /// Every path finds the contacts one pair at a time finds, in the same order, for lists
    /// whose length is not a multiple of the lanes.
    #[test]
    fn every_path_gives_the_contacts_of_one_pair_at_a_time() {
        let x_prev = cases(500);
        let x: Vec<DVec3> = (x_prev.iter().enumerate())
            .map(|(k, &p)| p + DVec3::new(0.01, -0.02, 0.015) * (k % 5) as f64)
            .collect();
        let n = x.len() as u32;
        let edges: Vec<[u32; 2]> = (0..n).step_by(2).map(|k| [k, k + 1]).collect();
        let boxes: Vec<_> = (edges.iter())
            .map(|&e| swept_box(e, &x, &x_prev, 0.2))
            .collect();
        let listed: Vec<[u32; 2]> = (0..edges.len() as u32 - 3)
            .flat_map(|i| [[i, i + 1], [i, i + 3]])
            .chain([[0, 2]])
            .collect();
        let one_at_a_time = |listed: &[[u32; 2]]| -> Vec<EdgeContact> {
            (listed.iter())
                .filter(|&&[i, j]| boxes_overlap(boxes[i as usize], boxes[j as usize]))
                .filter_map(|&pair| sided_contact(pair, &edges, &x, &x_prev))
                .collect()
        };
        let all = one_at_a_time(&listed).len();
        assert!(all > 20, "{all} contacts: too few to test anything");
        let bits = |c: &[EdgeContact]| -> Vec<_> {
            c.iter().map(|c| (c.edges, c.side.to_bits())).collect()
        };
        // Every length up to a few batches (short last batches of every size, starting
        // with a pair that has a side or not), and the whole list.
        let lengths = (1..=40).chain([listed.len()]);
        for (path, length) in SimdPath::available()
            .into_iter()
            .flat_map(|p| lengths.clone().map(move |n| (p, n)))
        {
            let mut found = Vec::new();
            let listed = &listed[..length];
            contacts_on(path, listed, &edges, &boxes, &x, &x_prev, &mut found);
            let expected = one_at_a_time(listed);
            assert_eq!(bits(&found), bits(&expected), "{} {length}", path.name());
        }
    }
}
