//! Where and how a frame blew up: the [`Divergence`] that stops it, and the bounds a
//! position may not leave.

use super::Solver;
use crate::mesh::obj::MAX_ABS_COORDINATE;
use glam::DVec3;

/// Where and how the simulation blew up.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// 1-based substep within the frame.
    pub substep: usize,
    pub object: String,
    /// Vertex index within the object (its index in the output files).
    pub vertex: usize,
    pub reason: String,
}

impl Solver {
    pub(super) fn divergence(&self, substep: usize, i: usize) -> Divergence {
        let p = &self.model.particles;
        let (object, vertex) = self.model.vertex_of(i);
        let reason = if !p.x[i].is_finite() || !p.v[i].is_finite() {
            "position or velocity is not finite".to_string()
        } else if out_of_bounds(p.x[i]) {
            let x = p.x[i];
            format!(
                "position ({:e}, {:e}, {:e}) m is beyond ±{MAX_ABS_COORDINATE:e} m",
                x.x, x.y, x.z
            )
        } else {
            format!(
                "speed {:.6e} m/s exceeds simulation.max_speed = {} m/s",
                p.v[i].length(),
                self.model.params.max_speed
            )
        };
        Divergence {
            substep,
            object: object.name.clone(),
            vertex: vertex as usize,
            reason,
        }
    }
}

pub(super) fn out_of_bounds(x: DVec3) -> bool {
    x.abs().max_element() > MAX_ABS_COORDINATE
}

/// The largest `s ≥ 0` whose square root rounds to at most `max_speed`, so that for any `v`
/// `v.length() > max_speed` exactly when `v.length_squared() > speed_squared_limit(max_speed)`
/// (`length` is the correctly rounded square root of `length_squared`, which is monotonic, so
/// the speeds at or below the limit are the squares up to one threshold). The velocity update
/// compares squares against it: the same decision on every particle, without a square root
/// per particle (on cloth-256 on a Zen 1, the per-particle stages' share of the samples went
/// from 6.0 to 5.4 %; docs/benchmarks.md, "Issue 13: the targets on a Zen 1 host").
/// `max_speed` is positive and at most 1e9 m/s when read from a scene; an infinite one gives
/// an infinite limit (no speed exceeds it, as no length does).
pub(super) fn speed_squared_limit(max_speed: f64) -> f64 {
    let mut limit = max_speed * max_speed;
    while limit.sqrt() > max_speed {
        limit = limit.next_down();
    }
    while limit < f64::INFINITY && limit.next_up().sqrt() <= max_speed {
        limit = limit.next_up();
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::speed_squared_limit;

    #[test]
    fn squares_against_the_limit_decide_as_the_speeds_do() {
        // The scene default, the input limit, a few more, and 3 000 speeds from 0.2 to
        // 590 m/s: for about half of them the threshold is above `max_speed²` (the naive
        // `s > max_speed²` fails here).
        let listed = [1000.0, 1e9, 0.1, 1.0 / 3.0, 2f64.sqrt(), 299_792_458.0];
        let spread = (1..3000).map(|k| f64::from(k) / 7.0 * 1.37);
        for max_speed in listed.into_iter().chain(spread) {
            let limit = speed_squared_limit(max_speed);
            assert!(limit.sqrt() <= max_speed && limit.next_up().sqrt() > max_speed);
            // Every square within a few units in the last place of the threshold, and of
            // `max_speed²`, decides the same both ways.
            for centre in [limit, max_speed * max_speed] {
                let mut s = centre;
                for _ in 0..8 {
                    s = s.next_down();
                }
                for _ in 0..16 {
                    assert_eq!(s.sqrt() > max_speed, s > limit, "{max_speed} {s:e}");
                    s = s.next_up();
                }
            }
        }
        // No input makes it loop: the largest speeds decide as their lengths do too.
        for max_speed in [f64::MAX, f64::INFINITY] {
            let limit = speed_squared_limit(max_speed);
            for s in [f64::MAX, f64::INFINITY] {
                assert_eq!(s.sqrt() > max_speed, s > limit, "{max_speed} {s:e}");
            }
        }
    }
}
