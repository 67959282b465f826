//! Point–triangle contacts: a particle against the triangles of a cloth (its own, for self
//! collision, or another object's). Particle spheres alone leave gaps wherever the spacing
//! exceeds their diameter, and a falling cloth slips through them (PHYSICS.md: r = 8 mm on a
//! 34 mm grid gave hundreds of crossing triangle pairs); a triangle has no gaps.
//!
//! The sheet is `2r` thick, r on each side (`collision.thickness`), so a particle (radius r)
//! keeps its centre `2r` from the triangle's plane on the side it came from:
//! `C = s n · (p − q) − 2r ≥ 0`, with `n` the triangle's unit normal, `q = Σ b_k x_k` the
//! point under `p` (barycentric `b`) and `s = ±1` the side: the side the particle came from,
//! taken at `x_prev` when it projected inside the triangle there or came within `2 · 2r` of
//! it (so a particle that crosses within a substep, the continuous case, is put back on its
//! own side, also when it slips over the shared edge of two triangles), or else now, when it
//! projects inside now; otherwise there is no contact this substep. Only over or near the
//! triangle does a change of side mean a crossing: far beside it the particle may pass the
//! triangle's plane freely, which is also why a side is not carried from one substep to the
//! next (see [`super::edge_edge`] for what that did). Measured on a 0.6 m x 3 m strip
//! folding onto itself at 20 substeps: with the side taken only over the triangle, particles
//! slipped through at shared edges (18 crossing pairs for 20 frames). The contact acts only while `p` projects inside
//! the triangle: beside it, the neighbouring triangle is the one under the particle.
//!
//! It is solved as a [`Stencil`] with coefficients `[1, −b_0, −b_1, −b_2]`: exactly, conserving
//! momentum, with Coulomb friction on the slip of `p` against the point under it.

use super::bvh::closest_on_triangle;
use super::bvh::{bounds, boxes_overlap, swept_bounds};
use super::stencil::{Mobility, Stencil};
use super::triangle_sides;
use crate::constraints::Positions;
use glam::DVec3;

/// The smallest `|n|²` (`n = (b − a) × (c − a)`, twice the area) of a triangle that has a
/// side: below it the normal is rounding.
pub const MIN_NORMAL_SQUARED: f64 = 1e-30;

/// A particle near a triangle, and the side of the triangle it belongs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriangleContact {
    pub particle: u32,
    /// Index into the triangle list the contacts were found with.
    pub triangle: u32,
    /// `+1` above the triangle (along `(b − a) × (c − a)`), `−1` below.
    pub side: f64,
}

/// The box triangle `abc` sweeps over a substep (`x_prev` → `x`), grown by the contact
/// distance: a particle whose own swept box misses it cannot touch the triangle in the
/// substep.
/// Always inlined: left to itself, LLVM moved it out of line whenever the search stage
/// around it grew (docs/benchmarks.md, "Issue 13: a four-wide tree for the pair searches").
#[inline(always)]
pub fn swept_box(
    triangle: [u32; 3],
    x: &[DVec3],
    x_prev: &[DVec3],
    distance: f64,
) -> (DVec3, DVec3) {
    swept_bounds(triangle, x, x_prev, distance)
}

/// The contact of particle `p` with triangle `t` (an index into `triangles`, not holding `p`;
/// its swept box from [`swept_box`] in `boxes`) in the substep `x_prev` → `x`, if there is
/// one: when the particle's swept box overlaps the triangle's and its side is known (see the
/// module notes). `distance` is 2r. One pair at a time; the solver tests its sorted lists
/// with [`triangle_sides::contacts`], eight pairs at a time, which gives the contacts this
/// gives.
pub fn contact(
    [p, t]: [u32; 2],
    triangles: &[[u32; 3]],
    boxes: &[(DVec3, DVec3)],
    x: &[DVec3],
    x_prev: &[DVec3],
    distance: f64,
) -> Option<TriangleContact> {
    let (p1, p0) = (x[p as usize], x_prev[p as usize]);
    if !boxes_overlap(bounds([p0, p1], 0.0), boxes[t as usize]) {
        return None;
    }
    triangle_sides::sided_contact([p, t], triangles, x, x_prev, distance)
}

/// Barycentric weights of the projection of `p` onto the plane of `abc` (unnormalised
/// normal `n`).
pub(super) fn plane_weights(p: DVec3, [a, b, c]: [DVec3; 3], n: DVec3) -> [f64; 3] {
    let area = n.length_squared();
    let wb = (p - a).cross(c - a).dot(n) / area;
    let wc = (b - a).cross(p - a).dot(n) / area;
    [1.0 - wb - wc, wb, wc]
}

/// Projects one contact (see the module notes); `distance` is 2r. Returns whether it
/// touched.
pub fn resolve_triangle_contact<P: Positions + ?Sized>(
    contact: TriangleContact,
    triangles: &[[u32; 3]],
    x: &mut P,
    x_prev: &[DVec3],
    mobility: &Mobility,
    distance: f64,
    friction: f64,
) -> bool {
    let p = contact.particle as usize;
    let [a, b, c] = triangles[contact.triangle as usize].map(|k| k as usize);
    let abc = [a, b, c].map(|k| x.position(k));
    let normal = (abc[1] - abc[0]).cross(abc[2] - abc[0]);
    if normal.length_squared() < MIN_NORMAL_SQUARED {
        return false;
    }
    let weights = plane_weights(x.position(p), abc, normal);
    if weights.iter().any(|&w| w < 0.0) {
        return false;
    }
    let stencil = Stencil {
        particles: [p, a, b, c],
        coefficients: [1.0, -weights[0], -weights[1], -weights[2]],
    };
    let n = normal.normalize() * contact.side;
    stencil.resolve(n, distance, x, x_prev, mobility, friction)
}

/// Distance from `p` to triangle `abc` (for rest-shape tests).
pub fn distance_to_triangle(p: DVec3, [a, b, c]: [DVec3; 3]) -> f64 {
    closest_on_triangle(p, a, b, c).0.distance(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit right triangle in the z = 0 plane (normal +z) and a particle above it.
    fn setup(above: DVec3) -> (Vec<DVec3>, [[u32; 3]; 1]) {
        (vec![DVec3::ZERO, DVec3::X, DVec3::Y, above], [[0, 1, 2]])
    }

    /// The contacts of every particle not of the triangle, as the solver finds them.
    fn contacts_of(x: &[DVec3], x_prev: &[DVec3], triangles: &[[u32; 3]]) -> Vec<TriangleContact> {
        let boxes = [swept_box(triangles[0], x, x_prev, 0.02)];
        (0..x.len() as u32)
            .filter(|p| !triangles[0].contains(p))
            .filter_map(|p| contact([p, 0], triangles, &boxes, x, x_prev, 0.02))
            .collect()
    }

    /// The pass over sorted lists finds, in order, what one pair at a time finds: runs of
    /// pairs sharing a particle, each particle's box reused along its run only.
    #[test]
    fn contacts_of_sorted_lists_are_those_of_each_pair() {
        let mut x_prev = vec![DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::new(1.0, 1.0, 0.0)];
        let triangles = [[0, 1, 2], [1, 3, 2]];
        for k in 0..36 {
            let (u, v) = (f64::from(k % 6) / 5.0, f64::from(k / 6) / 5.0);
            // Every fourth far above the triangles: over them, but their boxes miss.
            let z = if k % 4 == 3 {
                0.5
            } else {
                0.004 * f64::from(k % 3) - 0.004
            };
            x_prev.push(DVec3::new(u, v, z));
        }
        let x: Vec<DVec3> = (x_prev.iter().enumerate())
            .map(|(k, &p)| p + DVec3::new(0.0, 0.0, if k % 2 == 0 { 0.006 } else { -0.002 }))
            .collect();
        let boxes = triangles.map(|t| swept_box(t, &x, &x_prev, 0.01));
        let listed: Vec<[u32; 2]> = (4..x.len() as u32).flat_map(|p| [[p, 0], [p, 1]]).collect();
        let one_at_a_time: Vec<TriangleContact> = (listed.iter())
            .filter_map(|&pair| contact(pair, &triangles, &boxes, &x, &x_prev, 0.01))
            .collect();
        let mut found = Vec::new();
        triangle_sides::contacts(&listed, &triangles, &boxes, &x, &x_prev, 0.01, &mut found);
        assert_eq!(found, one_at_a_time);
        assert!(
            found.len() > 10,
            "{} contacts: too few to test anything",
            found.len()
        );
    }

    #[test]
    fn a_particle_that_crossed_in_the_substep_goes_back_to_its_side() {
        let (x_prev, triangles) = setup(DVec3::new(0.2, 0.2, 0.05));
        let mut x = x_prev.clone();
        x[3].z = -0.03; // went through in one substep
        let contacts = contacts_of(&x, &x_prev, &triangles);
        assert_eq!(contacts.len(), 1);
        assert_eq!(contacts[0].side, 1.0, "it came from above");
        let inv_mass = [0.0, 0.0, 0.0, 1.0]; // a pinned triangle
        assert!(resolve_triangle_contact(
            contacts[0],
            &triangles,
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.02,
            0.0
        ));
        assert!((x[3].z - 0.02).abs() < 1e-15, "{}", x[3]);
    }

    #[test]
    fn the_correction_reaches_the_thickness_at_the_point_under_the_particle() {
        let (x_prev, triangles) = setup(DVec3::new(0.25, 0.3, 0.03));
        let mut x = x_prev.clone();
        x[3].z = 0.005;
        let inv_mass = [1.0, 2.0, 0.5, 1.5];
        let contacts = contacts_of(&x, &x_prev, &triangles);
        assert!(resolve_triangle_contact(
            contacts[0],
            &triangles,
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.02,
            0.0
        ));
        // The point under the particle had weights (0.45, 0.25, 0.3); only heights changed.
        let under = x[0] * 0.45 + x[1] * 0.25 + x[2] * 0.3;
        assert!((x[3].z - under.z - 0.02).abs() < 1e-15, "{x:?}");
        assert!(
            x[..3].iter().all(|p| p.z < 0.0),
            "the triangle is pushed down"
        );
    }

    #[test]
    fn a_particle_beside_the_triangle_at_both_ends_of_the_substep_is_no_contact() {
        // It passes the triangle's plane beside it: no crossing, no side, no contact.
        let (x_prev, triangles) = setup(DVec3::new(1.0, 1.0, 0.01));
        let mut x = x_prev.clone();
        x[3].z = -0.01;
        assert!(contacts_of(&x, &x_prev, &triangles).is_empty());
    }

    #[test]
    fn static_friction_holds_a_particle_sliding_slower_than_mu_times_depth() {
        let (x_prev, triangles) = setup(DVec3::new(0.2, 0.2, 0.02));
        let mut x = x_prev.clone();
        x[3] += DVec3::new(0.001, 0.0, -0.01); // slides 1 mm while pressing 10 mm in
        let inv_mass = [0.0, 0.0, 0.0, 1.0];
        let contact = TriangleContact {
            particle: 3,
            triangle: 0,
            side: 1.0,
        };
        resolve_triangle_contact(
            contact,
            &triangles,
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.02,
            0.5,
        );
        assert!((x[3] - x_prev[3]).length() < 1e-15, "{}", x[3]);
    }
}
