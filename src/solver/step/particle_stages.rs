//! The per-particle stages of a substep (the module notes of [`super`], steps 1 and 4): the
//! moving meshes posed, the prediction, the animated pins moved, and the velocity update with
//! restitution and the divergence check.

use super::divergence::{out_of_bounds, speed_squared_limit};
use super::{Frame, NO_CONTACT, REST_SPEED_WITHOUT_GRAVITY};
use glam::DVec3;
use std::sync::atomic::Ordering;

impl Frame<'_> {
    /// Poses every mesh collider for the substep from `start` to `start + h` seconds, the
    /// k-th mesh on thread `k mod threads`, while the threads with none wait at the barrier
    /// after it. Thread 0 posed them all while the others waited: on `scenes/dancer.toml`
    /// (a torso and legs) that was 0.65 G instructions, a twentieth of thread 0's work
    /// (docs/benchmarks.md, "Issue 13: the skin measured on every thread, meshes posed on
    /// theirs"). Each pose is computed as before, whoever computes it, so the bits do not
    /// change. Nobody reads the poses here: every thread cleared its posed colliders before
    /// the barrier that ended the last substep, and the stages after that barrier read no
    /// pose. Done inside the worker threads so that moving meshes do not make the threads
    /// meet (and allocate) between substeps.
    pub(super) fn pose_meshes(&self, t: usize, start: f64, h: f64) {
        let meshes = (self.colliders.iter().enumerate()).filter(|(_, c)| c.mesh.is_some());
        for (k, (c, collider)) in meshes.enumerate() {
            if k % self.threads != t {
                continue;
            }
            // SAFETY: pose `c` is this thread's alone in this stage (k mod threads), and no
            // reference to a pose lives (see above).
            if let Some(pose) = &mut unsafe { self.mesh_poses.range(c..c + 1) }[0] {
                pose.update(collider, start, start + h);
            }
        }
    }

    pub(super) fn predict(&self, range: std::ops::Range<usize>, h: f64) {
        let gravity = self.params.gravity;
        // SAFETY (all four): `range` is one of this thread's chunks of the particles
        // ([`Self::collider_chunks`]); no other thread touches it in this stage.
        let (x, x_prev, v) = unsafe {
            (
                self.x.range(range.clone()),
                self.x_prev.range(range.clone()),
                self.v.range(range.clone()),
            )
        };
        let contact_collider = unsafe { self.contact_collider.range(range.clone()) };
        let inv_mass = &self.inv_mass[range];
        for k in 0..x.len() {
            // Written here rather than by a `fill` of the range: that was a `memset` call per
            // chunk of 64 particles ([`Self::collider_chunks`]).
            contact_collider[k] = NO_CONTACT;
            x_prev[k] = x[k];
            if inv_mass[k] > 0.0 {
                v[k] += gravity * h;
                x[k] += v[k] * h;
            }
        }
    }

    /// Thread 0 puts the pinned particles of animated objects where their keys, or the
    /// collider they are pinned to, have them at `time` (the others wait: no thread touches
    /// these particles meanwhile). A particle pinned to a collider keeps its place relative to
    /// it: `pose(t) · pose(0)⁻¹ · rest`.
    pub(super) fn move_pins(&self, time: f64) {
        use crate::animation::Pose;
        let placement = |o: &crate::model::ObjectLayout| match (&o.animation, o.pinned_to) {
            (Some(a), _) => Some((a.pose(time, o.pivot), Pose::IDENTITY)),
            (None, Some(c)) => Some((self.colliders[c].pose(time), self.colliders[c].pose(0.0))),
            (None, None) => None,
        };
        // The pins come object by object: each object's placement is computed once, when its
        // first pin comes (no vector of placements per substep).
        let mut placed: Option<(usize, Option<(Pose, Pose)>)> = None;
        for &(i, object, rest) in self.animated_pins {
            let placement = match placed {
                Some((of, placement)) if of == object => placement,
                _ => {
                    let placement = placement(&self.objects[object]);
                    placed = Some((object, placement));
                    placement
                }
            };
            if let Some((now, at_start)) = placement {
                // SAFETY: thread 0 alone touches particles in this stage.
                unsafe { self.x.range(i..i + 1)[0] = now.apply(at_start.invert(rest)) };
            }
        }
        // Pins on a mesh surface follow their triangle (posed for this substep's end).
        // SAFETY: read between the barriers after `pose_meshes` and before the next one.
        let mesh_poses = unsafe { self.mesh_poses.as_slice() };
        for &(i, collider, attachment) in self.surface_pins {
            if let (Some(pose), Some(mesh)) =
                (&mesh_poses[collider], &self.colliders[collider].mesh)
            {
                // SAFETY: thread 0 alone touches particles in this stage.
                unsafe { self.x.range(i..i + 1)[0] = pose.attached_point(mesh, &attachment) };
            }
        }
    }

    pub(super) fn update_velocities(&self, range: std::ops::Range<usize>, h: f64) {
        let params = self.params;
        // `libm`, not the C library: the same bits on every CPU (docs/physics.md, "Across CPUs").
        let damping = libm::exp(-params.velocity_damping * h);
        let rest_speed = if params.gravity.length() > 0.0 {
            2.0 * params.gravity.length() * h
        } else {
            REST_SPEED_WITHOUT_GRAVITY
        };
        let speed_limit = speed_squared_limit(params.max_speed);
        let start = range.start;
        // SAFETY: this thread's share of the particles.
        let (x, x_prev, v, collider_of) = unsafe {
            (
                &*self.x.range(range.clone()),
                &*self.x_prev.range(range.clone()),
                self.v.range(range.clone()),
                &*self.contact_collider.range(range.clone()),
            )
        };
        // Without colliders nothing is touched and the normals are never read.
        let (normal_of, surface_of): (&[DVec3], &[DVec3]) = if self.colliders.is_empty() {
            (&[], &[])
        } else {
            // SAFETY: as above.
            unsafe {
                (
                    &*self.contact_normal.range(range.clone()),
                    &*self.contact_surface.range(range.clone()),
                )
            }
        };
        let inv_mass = &self.inv_mass[range];
        let mut first_bad = usize::MAX;
        for k in 0..x.len() {
            if inv_mass[k] == 0.0 {
                // Pinned: still, or carried by its object's keys or collider, which may carry
                // it out of bounds (a collider keyed 1e300 m away wrote `inf`): checked too.
                v[k] = (x[k] - x_prev[k]) / h;
                let lost = !x[k].is_finite() || !v[k].is_finite() || out_of_bounds(x[k]);
                if lost && first_bad == usize::MAX {
                    first_bad = start + k;
                }
                continue;
            }
            let mut velocity = (x[k] - x_prev[k]) / h * damping;
            if collider_of[k] != NO_CONTACT {
                let n = normal_of[k];
                // v still holds the predicted velocity (after the gravity kick); both are
                // taken relative to the collider's surface.
                let surface = surface_of[k] / h;
                let approach = (v[k] - surface).dot(n);
                if approach < 0.0 {
                    let e = self.colliders[collider_of[k] as usize].restitution;
                    let target = if -approach > rest_speed {
                        -e * approach
                    } else {
                        0.0
                    };
                    velocity += n * (target - (velocity - surface).dot(n));
                }
            }
            v[k] = velocity;
            let diverged = !x[k].is_finite()
                || !velocity.is_finite()
                || out_of_bounds(x[k])
                || velocity.length_squared() > speed_limit;
            if diverged && first_bad == usize::MAX {
                first_bad = start + k;
            }
        }
        if first_bad != usize::MAX {
            self.first_bad.fetch_min(first_bad, Ordering::AcqRel);
        }
    }
}
