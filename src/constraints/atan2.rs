//! `atan2` for the batched constraint kernels: the dihedral angle of every bending hinge, every
//! substep. glibc's `atan2` costs about 19 ns a call on this machine (issue 13) and cannot be
//! batched; this one is a few multiplies, two divisions and no table, over any [`Real`].
//!
//! Method: with `a = |x|`, `b = |y|`, the ratio `t = min(a, b) / max(a, b)` lies in [0, 1];
//! above `tan(π/8)` it is mapped to `(t − 1) / (t + 1)` (and `π/4` added back), so the
//! polynomial only sees `|t| ≤ tan(π/8) ≈ 0.414`. The mapped ratio is computed as
//! `(min − max) / (min + max)`, so each lane divides once (the division was the costliest
//! part of a batched hinge). There `atan t = t + t z P(z)`, `z = t²`,
//! with `P` of degree 9: a near-minimax fit for equal relative error, made by iteratively
//! reweighted least squares against 50-digit `mpmath` values (its relative error is 4·10⁻¹⁷ in
//! exact arithmetic and 1.5·10⁻¹⁶ evaluated in f64 by Horner's rule, checked on 200 000
//! points), evaluated by Estrin's scheme, whose shorter chains a batch waits less for: on the
//! test's million inputs it differs from `f64::atan2` as often as Horner's rule did (19.6 %
//! of them, by at most 2 units in the last place). The octant is restored with `π/2 − θ`,
//! `π − θ` and the sign of `y`, as `atan2` does, signed zeros included.
//!
//! Error: within 4.5·10⁻¹⁶ rad of `f64::atan2` (one unit in the last place of π) on the
//! test's million random and edge-case inputs. Only `+ − × ÷` and selects are used, with no
//! fused multiply-add, so every platform and every lane of a batch gives the same bits. Alone
//! it was measured slower than glibc's (docs/benchmarks.md, "Issue 13"); in a batch one
//! evaluation serves eight hinges.

use super::lanes::Real;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// `tan(π/8)`: above it the ratio is mapped down (see the module docs).
const TAN_PI_8: f64 = 0.414_213_562_373_095_03;

/// `P(z)` of `atan t = t + t z P(z)`, lowest power first.
const P: [f64; 10] = [
    -0.333_333_333_333_300_9,
    0.199_999_999_990_745_44,
    -0.142_857_141_940_885_67,
    0.111_111_066_066_841_65,
    -0.090_907_813_513_501_94,
    0.076_900_538_175_810_76,
    -0.066_409_995_907_580_95,
    0.056_919_247_251_795_32,
    -0.043_573_830_518_843_76,
    0.021_239_613_305_578_94,
];

/// The angle of the point `(x, y)`, in (−π, π], as `f64::atan2(y, x)` (see the module docs),
/// for one number or per lane.
#[inline(always)]
pub fn atan2<S: Real>(y: S, x: S) -> S {
    let zero = S::splat(0.0);
    let (a, b) = (x.abs(), y.abs());
    let steep = b.gt(a);
    let (low, high) = (S::select(steep, a, b), S::select(steep, b, a));
    // t = low / high, or (t − 1) / (t + 1) = (low − high) / (low + high) above tan(π/8): one
    // division either way. `high` is 0 only when both are: the ratio is then 0 (1 stands in
    // to divide by).
    let positive = high.gt(zero);
    let above = low.gt(S::splat(TAN_PI_8) * high);
    let numerator = S::select(above, low - high, S::select(positive, low, zero));
    let denominator = S::select(above, low + high, S::select(positive, high, S::splat(1.0)));
    let t = numerator / denominator;
    let base = S::select(above, S::splat(FRAC_PI_4), zero);
    let z = t * t;
    // Estrin's scheme: the ten terms in pairs, the pairs in pairs, half as long a chain of
    // dependent operations as Horner's rule, which a batch waited for (docs/benchmarks.md,
    // "Issue 13: atan2 by Estrin's scheme"). Written out: a closure here would not inherit
    // the caller's `target_feature` and would not inline its intrinsics.
    let z2 = z * z;
    let z4 = z2 * z2;
    let pair_0 = S::splat(P[0]) + S::splat(P[1]) * z;
    let pair_1 = S::splat(P[2]) + S::splat(P[3]) * z;
    let pair_2 = S::splat(P[4]) + S::splat(P[5]) * z;
    let pair_3 = S::splat(P[6]) + S::splat(P[7]) * z;
    let pair_4 = S::splat(P[8]) + S::splat(P[9]) * z;
    let (quad_0, quad_1) = (pair_0 + pair_1 * z2, pair_2 + pair_3 * z2);
    let p = quad_0 + quad_1 * z4 + pair_4 * (z4 * z4);
    let angle = base + (t + t * z * p);
    let angle = S::select(steep, S::splat(FRAC_PI_2) - angle, angle);
    let angle = S::select(x.is_sign_negative(), S::splat(PI) - angle, angle);
    S::select(y.is_sign_negative(), -angle, angle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_library_atan2_to_a_few_ulp() {
        // A fixed xorshift sequence: random magnitudes over 40 orders and every sign.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut worst: f64 = 0.0;
        for _ in 0..1_000_000 {
            let scale = 10f64.powf(40.0 * next() - 20.0);
            let y = (2.0 * next() - 1.0) * scale;
            let x = (2.0 * next() - 1.0) * 10f64.powf(4.0 * next() - 2.0);
            worst = worst.max((atan2::<f64>(y, x) - y.atan2(x)).abs());
        }
        assert!(worst < 4.5e-16, "worst difference {worst:e}");
    }

    #[test]
    fn edge_cases_and_signed_zeros_are_those_of_atan2() {
        let cases = [
            (0.0, 0.0),
            (-0.0, 0.0),
            (0.0, -0.0),
            (-0.0, -0.0),
            (0.0, -1.0),
            (-0.0, -1.0),
            (1.0, 0.0),
            (-1.0, 0.0),
            (1.0, 1.0),
            (-1.0, -1.0),
            (TAN_PI_8, 1.0),
            (1e-300, 1.0),
            (1.0, 1e-300),
            (3.0, -4.0),
        ];
        for (y, x) in cases {
            let (ours, theirs) = (atan2::<f64>(y, x), y.atan2(x));
            assert!(
                (ours - theirs).abs() < 4.5e-16
                    && ours.is_sign_negative() == theirs.is_sign_negative(),
                "atan2({y}, {x}): {ours} vs {theirs}"
            );
        }
    }
}
