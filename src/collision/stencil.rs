//! One projection for every contact between simulated particles. A contact compares two
//! points that are weighted sums of particles — a particle and another particle, a particle
//! and the point under it on a triangle, the closest points of two edges — so its gap is
//! `d = Σ c_k x_k` with coefficients `c_k` (positive on one side, negative on the other,
//! each side's summing to one) and its constraint along the unit direction `n`:
//!
//! `C = n · d − target ≥ 0`, `∇_{x_k} C = c_k n` (n held fixed, as usual for contacts).
//!
//! With `W = Σ c_k² w_k` the exact projection is `Δλ = −C / W`, `Δx_k = w_k c_k Δλ n`; it
//! conserves momentum because the coefficients sum to zero (unless the mass ratio is capped,
//! below). Friction (Macklin et al. 2014, §6.1) removes the tangential part `s_t` of the
//! gap's change over the substep, `s = Σ c_k (x_k − x_prev_k)`, up to `μ · depth`, with the
//! same weights:
//! `Δx_k = −w_k c_k r / W` for the removed slip `r` changes the gap by exactly `−r`.
//!
//! **Particles held by a collider.** A particle pressed against an immovable collider (outward
//! unit normal `m`) cannot move into it: its contact there, `m · (x − s) ≥ 0`, is active. Two
//! heavy bodies squeezing a light one against a wall — water on a cloth lying on a sphere,
//! 20–90 times the cloth particle's mass — is where projecting the two contacts one after the
//! other fails: the particle contact moves mostly the light cloth particle, into the collider,
//! the collider contact puts it back, and the heavy side moves by only `w_heavy / W` of its
//! overlap per iteration, so arriving water passes the cloth's plane and swaps sides (measured:
//! cloth speeds of 40–50 m/s within a frame; docs/physics.md "Particles held by a collider").
//! Solving both together is the projection with the held particle's inverse mass restricted to
//! the collider's tangent plane, `w_k (I − m mᵀ)` (the wall's infinite mass in the Schur
//! complement): `W = Σ c_k² w_k (1 − (m_k·n)²)` over held particles moving into their
//! collider (`c_k n · m_k < 0`; one moving away from it is free, the wall does not pull) and
//! `c_k² w_k` over the others, `Δx_k = w_k c_k P_k n Δλ`. The gap still changes by exactly the
//! depth along `n`, and momentum the wall does not take is conserved. Friction removes the slip
//! with the same `P_k` (exact along the slip).
//!
//! **Heavy on light: the contact mass ratio.** A heavy particle resting on light ones that only
//! their own constraints hold — water in a cloth pinned at its edges, a water particle 50–400
//! times a cloth particle — is beyond what Gauss–Seidel converges to in a substep's iterations:
//! each contact moves the light particle by `w_light / W` of the overlap, the cloth's
//! constraints hand that on by one ring of edges per iteration, and the water, supported only
//! by what one light particle's worth of correction gives back, keeps falling almost freely
//! (measured: 2× stretch in 7 frames, divergence at frame 9–10; docs/physics.md "Heavy on
//! light"). A contact between particles of different objects therefore projects the particles
//! it pushes along gravity — the supporting side — with their inverse masses capped at
//! `R w_load`: `w_load` the smallest nonzero inverse mass among the particles it pushes against
//! gravity (the load), `R = collision.max_mass_ratio`; any tilt short of horizontal takes the
//! full cap (relaxing it as `R / |cos θ|` let the sagging sides of a 41 × 41 trampoline
//! diverge). This is the mass scaling of contact handling that stacking solvers use, which
//! makes what is below heavier than what rests on it (Macklin et al. 2014, "Unified Particle
//! Physics", mass scaling by height; Guendelman et al. 2003, shock propagation). A light
//! particle resting on a heavy one, a contact across gravity and every contact without gravity
//! keep their true masses:
//! there Gauss–Seidel converges, and a cap would make the light side press harder than it
//! weighs. Contacts within the ratio keep their bits (the cap leaves their inverse masses as
//! they are); pinned particles (inverse mass 0) stay pinned. Contacts within one object keep
//! their true masses: there a ratio comes from the mesh (a grid's corner particle weighs a
//! sixth of an inner one), not from a load. The price: the contact moves the light particle
//! only about `R` times as far as the heavy one, so at rest it passes on about `R·m/M` of the
//! load the heavy particle bears, not all of it (a cloth under water 50 times heavier per
//! particle carries 8 % of the water's weight at `R = 4`; tested in
//! `tests/integration/object_contacts.rs`), and neither momentum nor, through friction, its
//! tangential part is conserved by a capped contact.

use crate::constraints::Positions;
use glam::DVec3;

/// How freely each particle moves in a contact: its inverse mass, and the outward normal of
/// the collider it is held against (zero when none; an empty slice when the scene has no
/// collider). See the module notes.
#[derive(Debug, Clone, Copy)]
pub struct Mobility<'a> {
    pub inv_mass: &'a [f64],
    pub held: &'a [DVec3],
    /// `collision.max_mass_ratio`: in a contact between objects, no particle of the supporting
    /// side gets an inverse mass above this many times the load's smallest nonzero one
    /// (infinite: true masses).
    pub max_mass_ratio: f64,
    /// The object of each particle (may be empty when `max_mass_ratio` is infinite).
    pub owner: &'a [u32],
    /// Gravity, m/s²: only particles a contact pushes along it (the supporting side) are
    /// capped.
    pub gravity: DVec3,
}

impl<'a> Mobility<'a> {
    /// Particles that no collider holds.
    pub fn free(inv_mass: &'a [f64]) -> Self {
        Mobility {
            inv_mass,
            held: &[],
            max_mass_ratio: f64::INFINITY,
            owner: &[],
            gravity: DVec3::ZERO,
        }
    }

    /// The inverse masses a contact along `n` projects `stencil` with (module notes): between
    /// objects, each particle the contact pushes along gravity (the supporting side) at most
    /// `max_mass_ratio` times the smallest nonzero inverse mass among the particles it pushes
    /// against gravity (the load).
    fn contact_inv_masses<const N: usize>(&self, stencil: &Stencil<N>, n: DVec3) -> [f64; N] {
        let particles = &stencil.particles;
        let w = particles.map(|i| self.inv_mass[i]);
        let one_object = || {
            particles
                .iter()
                .all(|&i| self.owner[i] == self.owner[particles[0]])
        };
        if self.max_mass_ratio == f64::INFINITY || one_object() {
            return w;
        }
        let down = n.dot(self.gravity);
        // Particle k moves along c_k n: along gravity when c_k n · g > 0.
        let along_gravity = |k: usize| stencil.coefficients[k] * down;
        let load_w_min = (0..N)
            .filter(|&k| along_gravity(k) < 0.0 && w[k] > 0.0)
            .map(|k| w[k])
            .fold(f64::INFINITY, f64::min);
        // Infinite (no cap) without a movable load: across or without gravity; never NaN.
        let cap = load_w_min * self.max_mass_ratio;
        // `min` returns `w` itself below the cap: those contacts keep their bits.
        std::array::from_fn(|k| {
            if along_gravity(k) > 0.0 {
                w[k].min(cap)
            } else {
                w[k]
            }
        })
    }

    /// The collider normal holding particle `i` against a move along `direction`, if any.
    fn holding(&self, i: usize, direction: DVec3) -> Option<DVec3> {
        let m = *self.held.get(i)?;
        (direction.dot(m) < 0.0).then_some(m)
    }
}

/// `v` without its part along `m` when `m` holds the particle (`P v`), else `v` itself.
fn tangential_to(m: Option<DVec3>, v: DVec3) -> DVec3 {
    match m {
        Some(m) => v - m * v.dot(m),
        None => v,
    }
}

/// Particles and coefficients of a contact's gap `d = Σ c_k x_k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stencil<const N: usize> {
    pub particles: [usize; N],
    pub coefficients: [f64; N],
}

impl<const N: usize> Stencil<N> {
    /// The gap `Σ c_k x_k`.
    pub fn gap<P: Positions + ?Sized>(&self, x: &P) -> DVec3 {
        (0..N)
            .map(|k| x.position(self.particles[k]) * self.coefficients[k])
            .sum()
    }

    /// Pushes the gap along `n` out to `target` if it is shorter, then applies friction
    /// `friction`. Returns whether the contact was active.
    pub fn resolve<P: Positions + ?Sized>(
        &self,
        n: DVec3,
        target: f64,
        x: &mut P,
        x_prev: &[DVec3],
        mobility: &Mobility,
        friction: f64,
    ) -> bool {
        let depth = target - n.dot(self.gap(x));
        // Most listed contacts are apart: decided before the masses and the held directions
        // are looked up for nothing (the pile's chained contacts are thread 0's alone).
        if depth <= 0.0 {
            return false;
        }
        let w = mobility.contact_inv_masses(self, n);
        let holding: [Option<DVec3>; N] =
            std::array::from_fn(|k| mobility.holding(self.particles[k], n * self.coefficients[k]));
        // c_k² w_k, times 1 − (m·u)² for a particle held along m (exactly 1 for a free one,
        // so free contacts keep their bits).
        let weight = |k: usize, u: DVec3| {
            let free_share = holding[k].map_or(1.0, |m| 1.0 - m.dot(u) * m.dot(u));
            self.coefficients[k] * self.coefficients[k] * w[k] * free_share
        };
        let w_sum: f64 = (0..N).map(|k| weight(k, n)).sum();
        if w_sum <= 0.0 {
            return false;
        }
        let step = depth / w_sum;
        for (k, &i) in self.particles.iter().enumerate() {
            let along = tangential_to(holding[k], n);
            x.move_by(i, along * (w[k] * self.coefficients[k] * step));
        }
        let slip = self.gap(x) - self.gap(x_prev);
        let tangential = slip - n * slip.dot(n);
        let amount = tangential.length();
        if amount > 0.0 {
            let removed = if amount <= friction * depth {
                tangential
            } else {
                tangential * (friction * depth / amount)
            };
            let direction = tangential / amount;
            let w_slip: f64 = (0..N).map(|k| weight(k, direction)).sum();
            // Zero only when every particle that could slide is held across the slip.
            if w_slip > 0.0 {
                for (k, &i) in self.particles.iter().enumerate() {
                    // x − r equals x + (−r) bit for bit (IEEE 754 defines one as the other).
                    let slide = tangential_to(holding[k], removed);
                    x.move_by(i, -(slide * (w[k] * self.coefficients[k] / w_slip)));
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A particle against the midpoint of an edge: gap `x_0 − (x_1 + x_2) / 2`.
    fn particle_on_edge() -> Stencil<3> {
        Stencil {
            particles: [0, 1, 2],
            coefficients: [1.0, -0.5, -0.5],
        }
    }

    #[test]
    fn reaches_the_target_and_conserves_momentum() {
        let x_prev = vec![DVec3::new(0.5, 0.05, 0.0), DVec3::ZERO, DVec3::X];
        let mut x = x_prev.clone();
        x[0] = DVec3::new(0.6, 0.004, 0.0);
        let before = x.clone();
        let inv_mass = [1.0, 2.0, 0.5];
        let stencil = particle_on_edge();
        assert!(stencil.resolve(
            DVec3::Y,
            0.01,
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.3
        ));
        assert!((stencil.gap(x.as_slice()).y - 0.01).abs() < 1e-15);
        let change: DVec3 = (0..3).map(|k| (x[k] - before[k]) / inv_mass[k]).sum();
        assert!(change.length() < 1e-15, "{change}");
    }

    #[test]
    fn friction_removes_slip_up_to_mu_times_depth() {
        let x_prev = vec![DVec3::new(0.5, 0.01, 0.0), DVec3::ZERO, DVec3::X];
        let inv_mass = [1.0, 0.0, 0.0];
        let free = Mobility::free(&inv_mass);
        let stencil = particle_on_edge();
        // Slides 1 mm while pressing 4 mm in: static with μ = 0.5 (limit 2 mm).
        let mut x = x_prev.clone();
        x[0] += DVec3::new(0.001, -0.004, 0.0);
        stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &free, 0.5);
        assert!((x[0] - x_prev[0]).length() < 1e-15);
        // Slides 5 mm: keeps 5 − 2 = 3 mm.
        let mut x = x_prev.clone();
        x[0] += DVec3::new(0.005, -0.004, 0.0);
        stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &free, 0.5);
        assert!((x[0].x - x_prev[0].x - 0.003).abs() < 1e-15, "{}", x[0]);
    }

    #[test]
    fn a_separated_gap_is_left_alone() {
        let x_prev = vec![DVec3::new(0.5, 0.05, 0.0), DVec3::ZERO, DVec3::X];
        let mut x = x_prev.clone();
        assert!(!particle_on_edge().resolve(
            DVec3::Y,
            0.01,
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&[1.0; 3]),
            0.3
        ));
        assert_eq!(x, x_prev);
    }

    /// A light particle resting on a wall (normal +y) under a heavy one pressing on it: the
    /// gap `x_heavy − x_light` must grow to 0.01 along `n`.
    fn sandwich(n: DVec3) -> (Vec<DVec3>, Stencil<2>, [f64; 2], [DVec3; 2]) {
        let x = vec![DVec3::new(0.0, 0.007, 0.0), DVec3::new(0.0, 0.001, 0.0)];
        let stencil = Stencil {
            particles: [0, 1],
            coefficients: [1.0, -1.0],
        };
        assert!(n.dot(stencil.gap(x.as_slice())) < 0.01);
        (x, stencil, [1.0, 50.0], [DVec3::ZERO, DVec3::Y])
    }

    #[test]
    fn a_particle_held_by_a_collider_is_not_pushed_into_it() {
        let (mut x, stencil, inv_mass, held) = sandwich(DVec3::Y);
        let x_prev = x.clone();
        let mobility = Mobility {
            inv_mass: &inv_mass,
            held: &held,
            ..Mobility::free(&inv_mass)
        };
        assert!(stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &mobility, 0.0));
        assert_eq!(x[1], x_prev[1], "the wall holds the light particle");
        assert!(
            (x[0].y - 0.011).abs() < 1e-15,
            "the heavy one moves the whole depth"
        );
        // Free, the light particle takes 50/51 of the depth, into the wall.
        let mut free = x_prev.clone();
        stencil.resolve(
            DVec3::Y,
            0.01,
            free.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.0,
        );
        assert!(free[1].y < 0.001 - 0.003, "{}", free[1]);
    }

    #[test]
    fn a_held_particle_slides_along_its_collider_and_the_gap_still_reaches_the_target() {
        let n = DVec3::new(0.6, 0.8, 0.0);
        let (mut x, stencil, inv_mass, held) = sandwich(n);
        let x_prev = x.clone();
        let mobility = Mobility {
            inv_mass: &inv_mass,
            held: &held,
            ..Mobility::free(&inv_mass)
        };
        assert!(stencil.resolve(n, 0.01, x.as_mut_slice(), &x_prev, &mobility, 0.0));
        assert_eq!(x[1].y, x_prev[1].y, "nothing along the wall's normal");
        assert!(x[1].x < x_prev[1].x, "it slides away along the wall");
        assert!((n.dot(stencil.gap(x.as_slice())) - 0.01).abs() < 1e-15);
        let momentum_along_wall =
            (x[0].x - x_prev[0].x) / inv_mass[0] + (x[1].x - x_prev[1].x) / inv_mass[1];
        assert!(
            momentum_along_wall.abs() < 1e-15,
            "the wall takes only normal momentum"
        );
    }

    #[test]
    fn a_held_particle_pulled_away_from_its_collider_moves_freely() {
        // The light particle touches a ceiling (outward normal −y) and the contact pushes it
        // down, away from the ceiling: the ceiling does not hold it.
        let (mut x, stencil, inv_mass, _) = sandwich(DVec3::Y);
        let x_prev = x.clone();
        let held = [DVec3::ZERO, DVec3::NEG_Y];
        let mobility = Mobility {
            inv_mass: &inv_mass,
            held: &held,
            ..Mobility::free(&inv_mass)
        };
        let mut free = x.clone();
        stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &mobility, 0.0);
        stencil.resolve(
            DVec3::Y,
            0.01,
            free.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.0,
        );
        assert_eq!(x, free, "moving down, away from a ceiling, is not held");
    }

    /// The sandwich's light particle (1) under its heavy one (0), two objects, gravity −y.
    fn capped(inv_mass: &[f64; 2], max_mass_ratio: f64) -> Mobility<'_> {
        Mobility {
            max_mass_ratio,
            owner: &[0, 1],
            gravity: DVec3::new(0.0, -9.81, 0.0),
            ..Mobility::free(inv_mass)
        }
    }

    #[test]
    fn a_contact_projects_with_the_mass_ratio_capped() {
        // A particle 50 times lighter under a heavy one: capped at 4, it takes 4/5 of the
        // depth instead of 50/51, and the gap still reaches its target. The heavy one slides
        // 1 mm, so friction acts too.
        let (x_prev, stencil, inv_mass, _) = sandwich(DVec3::Y);
        let resolved = |mobility: &Mobility, n: DVec3, friction: f64| {
            let mut x = x_prev.clone();
            x[0].x += 0.001;
            assert!(stencil.resolve(n, 0.01, x.as_mut_slice(), &x_prev, mobility, friction));
            x
        };
        let x = resolved(&capped(&inv_mass, 4.0), DVec3::Y, 0.0);
        let depth = 0.01 - 0.006;
        assert!(
            ((x_prev[1].y - x[1].y) - 0.8 * depth).abs() < 1e-15,
            "{}",
            x[1]
        );
        assert!(
            ((x[0].y - x_prev[0].y) - 0.2 * depth).abs() < 1e-15,
            "{}",
            x[0]
        );
        // Tilted 60° from gravity, the full cap still: the light one takes 4/5.
        let tilted = DVec3::new(0.75_f64.sqrt(), 0.5, 0.0);
        let x = resolved(&capped(&inv_mass, 4.0), tilted, 0.0);
        let depth = 0.01 - tilted.dot(DVec3::new(0.001, 0.006, 0.0));
        let moved = tilted.dot(x_prev[1] - x[1]);
        assert!((moved - 0.8 * depth).abs() < 1e-15, "{moved}");
        // True masses, bit for bit, friction included: within the ratio; within one object;
        // with the light particle on top (gravity +y: the contact pushes it up, the heavy one
        // supports); without gravity.
        let exact = resolved(&Mobility::free(&inv_mass), DVec3::Y, 0.3);
        assert_ne!(exact[1].x, x_prev[1].x, "friction acts");
        assert_eq!(resolved(&capped(&inv_mass, 50.0), DVec3::Y, 0.3), exact);
        let cases = [
            Mobility {
                owner: &[0, 0],
                ..capped(&inv_mass, 4.0)
            },
            Mobility {
                gravity: DVec3::new(0.0, 9.81, 0.0),
                ..capped(&inv_mass, 4.0)
            },
            Mobility {
                gravity: DVec3::ZERO,
                ..capped(&inv_mass, 4.0)
            },
        ];
        for mobility in &cases {
            assert_eq!(resolved(mobility, DVec3::Y, 0.3), exact);
        }
    }

    #[test]
    fn a_light_point_on_an_edge_of_mixed_masses_keeps_its_true_masses() {
        // A 10 g point pressing on an edge of a 1 kg and a 1/3 kg particle, capped at 1: the
        // load (the point) is the lightest particle, so nothing is capped — the edge's own
        // mass spread does not count.
        let x_prev = vec![DVec3::new(0.5, 0.008, 0.0), DVec3::ZERO, DVec3::X];
        let mut start = x_prev.clone();
        start[0] += DVec3::new(0.002, -0.003, 0.0);
        let inv_mass = [100.0, 1.0, 3.0];
        let mobility = Mobility {
            max_mass_ratio: 1.0,
            owner: &[1, 0, 0],
            gravity: DVec3::new(0.0, -9.81, 0.0),
            ..Mobility::free(&inv_mass)
        };
        let (mut x, mut exact) = (start.clone(), start);
        let stencil = particle_on_edge();
        assert!(stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &mobility, 0.3));
        let free = Mobility::free(&inv_mass);
        stencil.resolve(DVec3::Y, 0.01, exact.as_mut_slice(), &x_prev, &free, 0.3);
        assert_eq!(x, exact);
    }

    #[test]
    fn a_pinned_particle_stays_pinned_under_the_cap() {
        let (x_prev, stencil, _, _) = sandwich(DVec3::Y);
        let inv_mass = [0.0, 50.0];
        let mut x = x_prev.clone();
        let capped = capped(&inv_mass, 4.0);
        stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &capped, 0.0);
        assert_eq!(x[0], x_prev[0]);
        assert!((x[1].y - (0.007 - 0.01)).abs() < 1e-15, "{}", x[1]);
    }
}
