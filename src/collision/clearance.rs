//! How far each particle was from each mesh collider, kept from one query to the next, so a
//! particle that stays clear of a mesh is answered without walking its tree.
//!
//! The collider contacts ask, for every particle and mesh collider, at the start of every
//! substep and in every iteration, for the nearest triangle within a short reach
//! ([`PosedCollider::distance`]). On `scenes/dancer.toml` that was 6.9 M queries and 11 % of
//! the instructions, and most found nothing: a particle of the dress inside the body's box
//! but centimetres from its surface walks several nodes of the tree before every slot is
//! out of reach. Such a walk also proves how far the mesh is: no triangle is nearer than the
//! least distance it set aside ([`WideBvh::closest_or_clearance`]). Kept with where the
//! particle was and how far the mesh had travelled then, that distance bounds every later
//! query: since then the particle moved by `|p − at|` and no point of the mesh by more than
//! the mesh's travel since ([`MeshPose::travel`], the sum of the largest vertex step between
//! consecutive poses; a point of a triangle moves by a mix of its corners' steps). So while
//!
//! `clearance − |p − at| − (travel − travel_then) > reach`
//!
//! nothing is within reach and the answer is `None` without a walk: the answer the walk
//! would give, so the contacts, and every bit of the run, are the same
//! (docs/benchmarks.md, "Issue 13: mesh colliders out of reach without a walk"). A query
//! that finds a triangle learns nothing for the next one.
//!
//! [`WideBvh::closest_or_clearance`]: super::wide_bvh::WideBvh::closest_or_clearance

use super::{MeshPose, PosedCollider};
use glam::DVec3;

/// What rounding may take from the bound, relative to the lengths in it: the clearance comes
/// from `f32` boxes rounded outward (never too far), and the few `f64` operations after it
/// round by 2⁻⁵² each; a millionth keeps every skip safe by far and costs nothing in reach.
const SLACK: f64 = 1e-6;

/// A particle's distance from one mesh collider, as last measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clearance {
    /// Where the particle was.
    at: DVec3,
    /// No point of the mesh was nearer to `at` (0 when unknown).
    distance: f64,
    /// The mesh's [`MeshPose::travel`] then.
    travel: f64,
}

impl Clearance {
    /// Nothing known.
    pub const UNKNOWN: Clearance = Clearance {
        at: DVec3::ZERO,
        distance: 0.0,
        travel: 0.0,
    };

    /// Whether the mesh is surely farther than `reach` from `p` now.
    fn out_of_reach(&self, p: DVec3, reach: f64, pose: &MeshPose) -> bool {
        let moved = self.at.distance(p) + (pose.travel - self.travel);
        let slack = SLACK * (1.0 + self.distance + moved + reach);
        self.distance - moved - slack > reach
    }
}

impl PosedCollider<'_> {
    /// [`Self::distance`], skipping a mesh's walk when `clearance` (this particle's, with this
    /// collider, kept by the caller; `None` where nothing is kept) shows the mesh out of
    /// reach, and updating it from each walk that finds nothing (see the module notes).
    pub fn distance_near(
        &self,
        p: DVec3,
        reach: f64,
        clearance: Option<&mut Clearance>,
    ) -> Option<(f64, DVec3, DVec3)> {
        let (Some(pose), Some(mesh), Some(clearance)) =
            (self.mesh, self.collider.mesh.as_ref(), clearance)
        else {
            return self.distance(p, reach);
        };
        if clearance.out_of_reach(p, reach, pose) {
            return None;
        }
        let tree = &pose.triangle_boxes.tree;
        match tree.closest_or_clearance(&pose.end, &mesh.triangles, p, reach) {
            Ok(hit) => {
                *clearance = Clearance::UNKNOWN;
                Some(self.mesh_contact(pose, mesh, p, hit))
            }
            Err(distance_sq) => {
                *clearance = Clearance {
                    at: p,
                    distance: distance_sq.sqrt(),
                    travel: pose.travel,
                };
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::test_numbers::Numbers;
    use crate::collision::tests::mesh_collider;
    use crate::collision::Collider;

    /// A box's surface, 1 m across, that moves and swells over 24 frames at 24 fps.
    fn moving_box() -> Collider {
        let surface = crate::mesh::primitives::box_surface([1.0, 1.0, 1.0], [3, 3, 3]);
        let mut collider = mesh_collider(surface.positions.clone(), surface.triangles());
        let frames = &mut collider.mesh.as_mut().expect("a mesh").frames;
        for f in 1..24 {
            let (shift, scale) = (DVec3::new(0.02 * f as f64, 0.0, 0.0), 1.0 + 0.01 * f as f64);
            frames.push(
                surface
                    .positions
                    .iter()
                    .map(|&p| p * scale + shift)
                    .collect(),
            );
        }
        collider
    }

    /// Particles wandering about a moving mesh get, query by query, exactly the answers of a
    /// fresh walk, and skip walks while they stay clear. (Leaving out either the particle's
    /// motion or the mesh's travel from the bound fails this.)
    #[test]
    fn answers_as_a_fresh_walk_and_skips_while_clear() {
        let collider = moving_box();
        let mut pose = MeshPose::new(&collider, 0.0).expect("a mesh collider");
        let mut numbers = Numbers(7);
        let reaches = [0.02, 0.05, 0.1, 0.2];
        let mut clearances = [Clearance::UNKNOWN; 4];
        let mut particles = [DVec3::new(0.0, 0.9, 0.0); 4];
        let (mut skipped, mut found, mut queries) = (0, 0, 0);
        for step in 0..2000 {
            let time = step as f64 / 240.0 % 0.9;
            pose.update(&collider, time, time + 1.0 / 240.0);
            let posed = PosedCollider {
                mesh: Some(&pose),
                ..collider.posed(time, time + 1.0 / 240.0)
            };
            for ((p, clearance), reach) in particles.iter_mut().zip(&mut clearances).zip(reaches) {
                // A random walk about the box, passing its surface now and then.
                let to = |n: &mut Numbers| 0.06 * (n.next() - 0.5);
                *p += DVec3::new(to(&mut numbers), to(&mut numbers), to(&mut numbers));
                *p = (*p - DVec3::new(0.2, 0.0, 0.0)).clamp_length(0.2, 1.2)
                    + DVec3::new(0.2, 0.0, 0.0);
                skipped += usize::from(clearance.out_of_reach(*p, reach, &pose));
                let near = posed.distance_near(*p, reach, Some(clearance));
                assert_eq!(near, posed.distance(*p, reach), "step {step} reach {reach}");
                found += usize::from(near.is_some());
                queries += 1;
            }
        }
        assert!(
            skipped > queries / 4,
            "{skipped} of {queries} queries skipped"
        );
        assert!(
            found > queries / 20,
            "{found} of {queries} queries near the mesh"
        );
    }
}
