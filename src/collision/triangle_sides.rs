//! The side test of point–triangle pairs ([`super::point_triangle`]) written once over
//! [`Real`] and run two ways, as [`super::edge_sides`] runs the edge pairs': for one pair in
//! `f64`, and for the listed pairs of a substep eight at a time, in the lanes of the
//! constraint kernels ([`crate::constraints::lanes`], on [`SimdPath::chosen`](crate::constraints::batch::SimdPath::chosen)).
//!
//! On the self-colliding pile about 0.8 M point–triangle pairs pass the box test over the
//! run and 0.08 M of them become contacts: one pair at a time, the side test at the
//! substep's start and, for 92 % of them, again at its end took 0.43 G of the pile's 8.1 G
//! instructions, most of it branches on data in the closest point's Voronoi regions
//! (docs/benchmarks.md, "Issue 13: the point–triangle side test in lanes"). In lanes every
//! pair takes every step, and a mask says which have a side.
//!
//! **Same bits.** Only `+ − × ÷ √` and comparisons, each exactly rounded per lane
//! ([`crate::constraints::lanes`]), in the order of the scalar formulas: glam's `cross`, `dot`
//! and `length`, [`super::point_triangle::plane_weights`] and [`closest_on_triangle`]
//! (Ericson's). The closest point is computed for all seven regions of the triangle and
//! picked by masks, the last pick being the region the scalar function returns first, so
//! each lane is the scalar point (tested bit for bit below).
//!
//! [`closest_on_triangle`]: super::bvh::closest_on_triangle

use super::bvh::{bounds, boxes_overlap};
use super::edge_sides::{gather_ends, in_bounds, known_lanes};
use super::point_triangle::{TriangleContact, MIN_NORMAL_SQUARED};
use crate::constraints::batch::lane_passes;
use crate::constraints::lane_io::{ParticleLanes, Scalar};
use crate::constraints::lanes::{Real, Vec3, LANES};
use glam::DVec3;

/// `yes` where `mask` is set, else `no`, per lane.
#[inline(always)]
fn pick<S: Real>(mask: S::Mask, yes: Vec3<S>, no: Vec3<S>) -> Vec3<S> {
    Vec3::new(
        S::select(mask, yes.x, no.x),
        S::select(mask, yes.y, no.y),
        S::select(mask, yes.z, no.z),
    )
}

/// The distance from `p` to triangle `abc`: [`closest_on_triangle`]'s point, every region
/// computed and the scalar function's picked (see the module notes).
///
/// [`closest_on_triangle`]: super::bvh::closest_on_triangle
#[inline(always)]
fn distance_to_triangle<S: Real>(p: Vec3<S>, [a, b, c]: [Vec3<S>; 3]) -> S {
    let zero = S::splat(0.0);
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    let vc = d1 * d4 - d3 * d2;
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    let vb = d5 * d2 - d1 * d6;
    let va = d3 * d6 - d5 * d4;
    let (d43, d56) = (d4 - d3, d5 - d6);
    // The regions in the scalar function's order; `x ≥ y` written `y ≤ x` (both false on
    // NaN, as the scalar comparison).
    let at_a = d1.le(zero) & d2.le(zero);
    let at_b = zero.le(d3) & d4.le(d3);
    let on_ab = vc.le(zero) & zero.le(d1) & d3.le(zero);
    let at_c = zero.le(d6) & d5.le(d6);
    let on_ac = vb.le(zero) & zero.le(d2) & d6.le(zero);
    let on_bc = va.le(zero) & zero.le(d43) & zero.le(d56);
    let denominator = S::splat(1.0) / (va + vb + vc);
    let inside = a + ab.scale(vb * denominator) + ac.scale(vc * denominator);
    // Picked last to first, so the first region that holds is the one left.
    let mut closest = pick(on_bc, b + (c - b).scale(d43 / (d43 + d56)), inside);
    closest = pick(on_ac, a + ac.scale(d2 / (d2 - d6)), closest);
    closest = pick(at_c, c, closest);
    closest = pick(on_ab, a + ab.scale(d1 / (d1 - d3)), closest);
    closest = pick(at_b, b, closest);
    closest = pick(at_a, a, closest);
    (closest - p).length()
}

/// Where the side of triangle `abc` that `p` is on is known: `p` projects inside the
/// triangle or comes within `reach` of it, is not in its plane, and the triangle has an
/// area; and that side (+1 along `(b − a) × (c − a)`, −1 below; NaN where a coordinate is).
#[inline(always)]
fn side_over<S: Real>(abc: [Vec3<S>; 3], p: Vec3<S>, reach: S) -> (S::Mask, S) {
    let [a, b, c] = abc;
    let (zero, one) = (S::splat(0.0), S::splat(1.0));
    let normal = (b - a).cross(c - a);
    let height = normal.dot(p - a);
    // `plane_weights`.
    let area = normal.length_squared();
    let wb = (p - a).cross(c - a).dot(normal) / area;
    let wc = (b - a).cross(p - a).dot(normal) / area;
    let wa = one - wb - wc;
    let inside = zero.le(wa) & zero.le(wb) & zero.le(wc);
    let over = inside | distance_to_triangle(p, abc).le(reach);
    let in_plane = height.le(zero) & zero.le(height);
    let sign = S::select(height.is_sign_negative(), -one, one);
    (
        over & !in_plane & S::splat(MIN_NORMAL_SQUARED).le(area),
        S::select(height.le(height), sign, height),
    )
}

/// [`side_over`] of the lanes' particles (`particles[0]`) and triangles (corners
/// `particles[1..4]`) at `x_prev`, within `2 · distance`, or, where unknown there, at `x`,
/// projecting inside (see [`super::point_triangle`]).
///
/// # Safety
/// Every particle of `particles` is in bounds of `x` and `x_prev`.
#[inline(always)]
unsafe fn sides<S: Real, IO: ParticleLanes<S>>(
    particles: &[[u32; LANES]; 4],
    x: &[DVec3],
    x_prev: &[DVec3],
    distance: f64,
) -> (S::Mask, S) {
    // SAFETY: the caller's promise.
    let [p, a, b, c] = unsafe { gather_ends::<S, IO>(particles, x_prev) };
    let (before, side_before) = side_over([a, b, c], p, S::splat(2.0 * distance));
    // SAFETY: as above.
    let [p, a, b, c] = unsafe { gather_ends::<S, IO>(particles, x) };
    let (now, side_now) = side_over([a, b, c], p, S::splat(0.0));
    (before | now, S::select(before, side_before, side_now))
}

/// The contact of particle `p` with triangle `t` (an index into `triangles`) once their
/// boxes overlap: the side, if known (see [`super::point_triangle`]). `distance` is 2r.
pub fn sided_contact(
    [p, t]: [u32; 2],
    triangles: &[[u32; 3]],
    x: &[DVec3],
    x_prev: &[DVec3],
    distance: f64,
) -> Option<TriangleContact> {
    let [a, b, c] = triangles[t as usize];
    let particles = [[p; LANES], [a; LANES], [b; LANES], [c; LANES]];
    assert!(
        in_bounds(&particles, x, x_prev),
        "point–triangle pair {p} {t}"
    );
    // SAFETY: every particle was checked just above.
    let (known, side) = unsafe { sides::<f64, Scalar>(&particles, x, x_prev, distance) };
    known.then_some(TriangleContact {
        particle: p,
        triangle: t,
        side,
    })
}

lane_passes! {
    /// Appends the contacts of `listed` (`[particle, triangle]` pairs, sorted; the
    /// triangles' swept boxes in `boxes`) to `out`, in their order: the pairs whose boxes
    /// overlap and whose side is known, as [`super::point_triangle::contact`] gives them one
    /// at a time.
    pub fn contacts(
        listed: &[[u32; 2]],
        triangles: &[[u32; 3]],
        boxes: &[(DVec3, DVec3)],
        x: &[DVec3],
        x_prev: &[DVec3],
        distance: f64,
        out: &mut Vec<TriangleContact>,
    );
    /// [`contacts`] on `path`; also panics if a pair or particle is out of bounds.
    // The path and the seven of `contacts`, which the solver passes as it holds them.
    #[allow(clippy::too_many_arguments)]
    fn contacts_on / contacts_avx2 / contacts_avx512 = contacts_with;
}

/// [`contacts`] in lanes of `S`: the box test pair by pair, with each particle's swept box
/// computed once for the run of pairs it heads (the sorted lists hold about four pairs per
/// particle), and the pairs that pass it collected into batches of [`LANES`] for the side
/// test (a short last batch repeats its first pair in the lanes past its end, which are not
/// read).
#[inline(always)]
fn contacts_with<S: Real, IO: ParticleLanes<S>>(
    listed: &[[u32; 2]],
    triangles: &[[u32; 3]],
    boxes: &[(DVec3, DVec3)],
    x: &[DVec3],
    x_prev: &[DVec3],
    distance: f64,
    out: &mut Vec<TriangleContact>,
) {
    let mut batch = [[0u32; 2]; LANES];
    let mut held = 0;
    let mut particle = None;
    for &[p, t] in listed {
        let swept = match particle {
            Some((q, swept)) if q == p => swept,
            _ => {
                let swept = bounds([x_prev[p as usize], x[p as usize]], 0.0);
                particle = Some((p, swept));
                swept
            }
        };
        if boxes_overlap(swept, boxes[t as usize]) {
            batch[held] = [p, t];
            held += 1;
            if held == LANES {
                push_sided::<S, IO>(&batch, held, triangles, x, x_prev, distance, out);
                held = 0;
            }
        }
    }
    if held > 0 {
        let first = batch[0];
        batch[held..].fill(first);
        push_sided::<S, IO>(&batch, held, triangles, x, x_prev, distance, out);
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
    triangles: &[[u32; 3]],
    x: &[DVec3],
    x_prev: &[DVec3],
    distance: f64,
    out: &mut Vec<TriangleContact>,
) {
    let mut particles = [[0u32; LANES]; 4];
    for (l, &[p, t]) in batch.iter().enumerate() {
        let [a, b, c] = triangles[t as usize];
        (
            particles[0][l],
            particles[1][l],
            particles[2][l],
            particles[3][l],
        ) = (p, a, b, c);
    }
    assert!(
        in_bounds(&particles, x, x_prev),
        "point–triangle pairs {batch:?}"
    );
    // SAFETY: every particle was checked just above.
    let (known, side) = unsafe { sides::<S, IO>(&particles, x, x_prev, distance) };
    for l in known_lanes(S::mask_bits(known), held) {
        out.push(TriangleContact {
            particle: batch[l][0],
            triangle: batch[l][1],
            side: side.lane(l),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::bvh::closest_on_triangle;
    use super::super::point_triangle::{contact, plane_weights, swept_box};
    use super::*;
    use crate::collision::test_numbers::Numbers;
    use crate::constraints::batch::SimdPath;

    /// The side as the scalar test took it before the lanes (`side_over` of
    /// [`super::super::point_triangle`], one branch per region): what the lanes must give
    /// bit for bit.
    fn reference_side(abc: [DVec3; 3], p: DVec3, reach: f64) -> Option<f64> {
        let normal = (abc[1] - abc[0]).cross(abc[2] - abc[0]);
        let height = normal.dot(p - abc[0]);
        let inside = plane_weights(p, abc, normal).iter().all(|&w| w >= 0.0);
        let close = closest_on_triangle(p, abc[0], abc[1], abc[2]).0.distance(p) <= reach;
        ((inside || close) && height != 0.0 && normal.length_squared() >= 1e-30)
            .then(|| height.signum())
    }

    /// Positions of 4 particles per pair (the particle, then the corners): random, or built
    /// to hit what the scalar test's branches separate: each of the seven regions of the
    /// closest point, the plane itself, corners and edges exactly, a triangle without area,
    /// a NaN coordinate.
    fn cases(count: usize) -> Vec<DVec3> {
        let mut n = Numbers(0x2545_f491_4f6c_dd1d);
        let mut v = || DVec3::new(n.next(), n.next(), n.next()) - 0.5;
        let mut x = Vec::new();
        for k in 0..count {
            let (a, b, c, r) = (v(), v(), v(), v());
            let normal = (b - a).cross(c - a);
            // Barycentric spots inside and beyond each corner and edge, lifted off the plane
            // by a little or not at all.
            let spot = [
                [0.2, 0.3, 0.5],
                [1.3, -0.1, -0.2],
                [-0.2, 1.4, -0.2],
                [-0.3, -0.1, 1.4],
                [0.6, 0.6, -0.2],
                [0.6, -0.3, 0.7],
                [-0.4, 0.7, 0.7],
            ][k % 7];
            let on_plane = a * spot[0] + b * spot[1] + c * spot[2];
            let lift = [0.0, 0.02, -0.3][k % 3];
            let p = match k % 11 {
                0..=6 => on_plane + normal * lift,
                7 => a,                              // on a corner
                8 => (b + c) * 0.5,                  // on an edge
                9 => r,                              // anywhere
                _ => DVec3::new(f64::NAN, r.y, r.z), // not a number
            };
            // Triangles without area too: there the regions' conditions overlap, and the
            // order they are taken in decides the closest point.
            let corners = match k % 17 {
                0 => [a, b, a + (b - a) * 0.3],
                1 => [a, b, a + (b - a) * 1.6],
                2 => [a, b, a + (b - a) * -0.4],
                3 => [a, a, c],
                4 => [a, b, b],
                5 => [c, b, c],
                6 => [a, a, a],
                7 => [a, a + DVec3::splat(1e-16), c], // below the smallest area
                _ => [a, b, c],
            };
            x.push(p);
            x.extend(corners);
        }
        x
    }

    /// The lanes' side, every region computed and picked, is the branching scalar test's,
    /// bit for bit, at both reaches the solver uses.
    #[test]
    fn the_lanes_side_is_the_branching_scalar_side() {
        let x = cases(7000);
        let (mut known, mut regions) = (0, [0; 7]);
        for q in x.chunks(4) {
            let (p, abc) = (q[0], [q[1], q[2], q[3]]);
            let closest = closest_on_triangle(p, abc[0], abc[1], abc[2]);
            let distance = distance_to_triangle::<f64>(p.into(), abc.map(Vec3::from));
            assert_eq!(distance.to_bits(), closest.0.distance(p).to_bits(), "{q:?}");
            let region = match closest.1.map(|w| w > 0.0) {
                [true, false, false] => 0,
                [false, true, false] => 1,
                [false, false, true] => 2,
                [true, true, false] => 3,
                [true, false, true] => 4,
                [false, true, true] => 5,
                _ => 6,
            };
            regions[region] += 1;
            for reach in [0.0, 0.05] {
                let (mask, side) = side_over::<f64>(abc.map(Vec3::from), p.into(), reach);
                assert_eq!(
                    mask.then_some(side.to_bits()),
                    reference_side(abc, p, reach).map(f64::to_bits),
                    "{q:?} within {reach}"
                );
                known += usize::from(mask);
            }
        }
        assert!(
            known > 500,
            "{known} sides known: too few to test the lanes"
        );
        assert!(
            regions.iter().all(|&count| count > 50),
            "every region of the closest point: {regions:?}"
        );
    }

    /// Every path finds the contacts one pair at a time finds, in the same order, for sorted
    /// lists whose length is not a multiple of the lanes.
    #[test]
    fn every_path_gives_the_contacts_of_one_pair_at_a_time() {
        let x_prev = cases(500);
        let x: Vec<DVec3> = (x_prev.iter().enumerate())
            .map(|(k, &p)| p + DVec3::new(0.01, -0.02, 0.015) * (k % 5) as f64)
            .map(|p| if p.is_nan() { DVec3::ZERO } else { p })
            .collect();
        let n = x.len() as u32;
        let triangles: Vec<[u32; 3]> = (0..n).step_by(4).map(|k| [k + 1, k + 2, k + 3]).collect();
        let distance = 0.1;
        let boxes: Vec<_> = (triangles.iter())
            .map(|&t| swept_box(t, &x, &x_prev, distance))
            .collect();
        // Each case's particle against its own triangle and two others: runs of three.
        let count = triangles.len() as u32;
        let listed: Vec<[u32; 2]> = (0..count)
            .flat_map(|k| [k, (k + 1) % count, (k + 7) % count].map(|t| [4 * k, t]))
            .collect();
        let mut listed = listed;
        for run in listed.chunks_mut(3) {
            run.sort_unstable();
        }
        let one_at_a_time = |listed: &[[u32; 2]]| -> Vec<TriangleContact> {
            (listed.iter())
                .filter_map(|&pair| contact(pair, &triangles, &boxes, &x, &x_prev, distance))
                .collect()
        };
        let all = one_at_a_time(&listed).len();
        assert!(all > 50, "{all} contacts: too few to test anything");
        let bits = |c: &[TriangleContact]| -> Vec<_> {
            (c.iter())
                .map(|c| (c.particle, c.triangle, c.side.to_bits()))
                .collect()
        };
        // Every length: the short last batch starts at every pair that passes the box test,
        // with a side or without.
        let lengths = 1..=listed.len();
        for (path, length) in SimdPath::available()
            .into_iter()
            .flat_map(|p| lengths.clone().map(move |n| (p, n)))
        {
            let mut found = Vec::new();
            let listed = &listed[..length];
            contacts_on(
                path, listed, &triangles, &boxes, &x, &x_prev, distance, &mut found,
            );
            let expected = one_at_a_time(listed);
            assert_eq!(bits(&found), bits(&expected), "{} {length}", path.name());
        }
    }
}
