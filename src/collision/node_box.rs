//! Boxes rounded outward to `f32`: the slots of the four-wide trees ([`super::wide_bvh`])
//! hold their boxes this way, four to a node in half the bytes of `f64` (docs/benchmarks.md,
//! "Issue 13: tree nodes in `f32`, a stackless walk, no libm floor", where the binary tree's
//! nodes were first rounded so).
//!
//! **Same answers.** Rounding outward (each lower corner to an `f32` below it, each upper
//! corner to one above, [`down`] and [`up`]) makes a node's box contain the `f64` box it
//! stands for, so a walk that prunes by a node's box never skips a leaf the `f64` box would
//! have kept (the rounded corners lie at most three `f32` steps out, 0.2 µm at a metre, or
//! 2·10⁻³⁸ near zero). A NaN corner compares false; a corner beyond the `f32` range becomes
//! infinite or NaN, outward either way.

use glam::DVec3;

/// The corners of the box `[min, max]` rounded outward ([`down`], [`up`]).
pub(super) fn outward(min: DVec3, max: DVec3) -> ([f32; 3], [f32; 3]) {
    (min.to_array().map(down), max.to_array().map(up))
}

/// An `f32` at most `v`: the nearest one `f`, moved down by `|f| ε + MIN_POSITIVE`, more
/// than the half step `f` may lie above `v` (ε = 2⁻²³ is a whole step at `|f|`), so the
/// rounding of the subtraction cannot bring it back above `v`. Arithmetic, not
/// `f32::next_down` after a comparison: the comparison and the sign test inside
/// `next_down` depend on the last bits and the sign of `v`, branches mispredicted so often
/// that rounding cost more than the narrower boxes saved. An infinite `f` becomes NaN,
/// which compares false: such a box overlaps everything, still conservative.
fn down(v: f64) -> f32 {
    let f = v as f32;
    f - (f.abs() * f32::EPSILON + f32::MIN_POSITIVE)
}

/// An `f32` at least `v`, as [`down`].
fn up(v: f64) -> f32 {
    let f = v as f32;
    f + (f.abs() * f32::EPSILON + f32::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_goes_outward_and_keeps_what_f32_holds() {
        let steps = |f: f32, n: usize, next: fn(f32) -> f32| (0..n).fold(f, |f, _| next(f));
        let mut values = vec![0.0, 1.0, -2.5, 0.375, 1e-40, -1e-45, 1e30, -1e30, 3.4e38];
        values.extend((1..2000).map(|k| (f64::from(k) * 0.7311).sin() * f64::from(k)));
        values.extend((1..200).map(|k| 2f64.powi(k - 100) * (1.0 + 1e-9 * f64::from(k))));
        for &v in &values {
            for v in [v, -v] {
                assert!(f64::from(down(v)) <= v && f64::from(up(v)) >= v, "{v}");
                // At most three f32 steps out, or 2·MIN_POSITIVE near zero (and at least one
                // step: never the nearest itself).
                let near_zero = f64::from(2.0 * f32::MIN_POSITIVE);
                let (below, above) = (
                    steps(down(v), 3, f32::next_up),
                    steps(up(v), 3, f32::next_down),
                );
                assert!(
                    f64::from(below) > v || v - f64::from(down(v)) <= near_zero,
                    "{v}: too far below"
                );
                assert!(
                    f64::from(above) < v || f64::from(up(v)) - v <= near_zero,
                    "{v}: too far above"
                );
                assert!(down(v) < v as f32 && up(v) > v as f32, "{v}");
            }
        }
        for v in [f64::NAN, 3.5e38, -3.5e38] {
            assert!(down(v).is_nan() || f64::from(down(v)) <= v, "{v}");
            assert!(up(v).is_nan() || f64::from(up(v)) >= v, "{v}");
        }
    }
}
