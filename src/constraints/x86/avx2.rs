//! Eight `f64` lanes in two AVX2 registers ([`F64x8`]), and the batch's particles moved into
//! them and back ([`Avx2`]): padded rows by 256-bit loads and 4 × 4 transposes, positions by
//! 128-bit loads and shuffles.
//!
//! Every operation is one instruction per register that IEEE 754 rounds exactly as the scalar
//! `f64` operation (`vaddpd`, `vdivpd`, `vsqrtpd`, `vroundpd` toward −∞…), so each lane gives
//! the bits the same math gives alone ([`super::super::lanes`]).

use super::super::lane_io::ParticleLanes;
use super::super::lanes::{Real, Vec3, LANES};
use super::super::weighted::{WeightedPosition, WeightedPositions};
use super::super::Positions;
use std::arch::x86_64::*;
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};

/// Eight lanes: 0–3 in the first register, 4–7 in the second.
#[derive(Clone, Copy)]
pub struct F64x8([__m256d; 2]);

/// Eight lane flags, each all ones or all zeros, as a comparison gives them.
#[derive(Clone, Copy)]
pub struct Mask8([__m256d; 2]);

/// `f(first register, second register)` for each of the two halves.
macro_rules! halves {
    ($a:expr, |$h:ident| $body:expr) => {{
        let $h = $a[0];
        let first = $body;
        let $h = $a[1];
        [first, $body]
    }};
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {{
        let ($x, $y) = ($a[0], $b[0]);
        let first = $body;
        let ($x, $y) = ($a[1], $b[1]);
        [first, $body]
    }};
}

macro_rules! lane_operator {
    ($trait:ident, $method:ident, $intrinsic:ident) => {
        impl $trait for F64x8 {
            type Output = F64x8;
            #[inline(always)]
            fn $method(self, other: F64x8) -> F64x8 {
                // SAFETY: AVX2 (the module's contract).
                F64x8(halves!(self.0, other.0, |a, b| unsafe { $intrinsic(a, b) }))
            }
        }
    };
}
lane_operator!(Add, add, _mm256_add_pd);
lane_operator!(Sub, sub, _mm256_sub_pd);
lane_operator!(Mul, mul, _mm256_mul_pd);
lane_operator!(Div, div, _mm256_div_pd);

impl Neg for F64x8 {
    type Output = F64x8;
    /// The sign bit flipped, as `-x` is for one `f64`.
    #[inline(always)]
    fn neg(self) -> F64x8 {
        // SAFETY: AVX2 (the module's contract).
        F64x8(halves!(self.0, |a| unsafe {
            _mm256_xor_pd(a, _mm256_set1_pd(-0.0))
        }))
    }
}

macro_rules! mask_operator {
    ($trait:ident, $method:ident, $intrinsic:ident) => {
        impl $trait for Mask8 {
            type Output = Mask8;
            #[inline(always)]
            fn $method(self, other: Mask8) -> Mask8 {
                // SAFETY: AVX2 (the module's contract).
                Mask8(halves!(self.0, other.0, |a, b| unsafe { $intrinsic(a, b) }))
            }
        }
    };
}
mask_operator!(BitAnd, bitand, _mm256_and_pd);
mask_operator!(BitOr, bitor, _mm256_or_pd);

impl Not for Mask8 {
    type Output = Mask8;
    #[inline(always)]
    fn not(self) -> Mask8 {
        // SAFETY: AVX2 (the module's contract).
        Mask8(halves!(self.0, |a| unsafe {
            _mm256_xor_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(-1)))
        }))
    }
}

impl F64x8 {
    #[inline(always)]
    fn compare<const PREDICATE: i32>(self, other: F64x8) -> Mask8 {
        // SAFETY: AVX2 (the module's contract).
        Mask8(halves!(self.0, other.0, |a, b| unsafe {
            _mm256_cmp_pd::<PREDICATE>(a, b)
        }))
    }

    /// The lanes in an array.
    #[inline(always)]
    fn to_array(self) -> [f64; LANES] {
        let mut out = [0.0; LANES];
        // SAFETY: AVX2 (the module's contract); two stores of four lanes into eight.
        unsafe {
            _mm256_storeu_pd(out.as_mut_ptr(), self.0[0]);
            _mm256_storeu_pd(out.as_mut_ptr().add(4), self.0[1]);
        }
        out
    }
}

impl Mask8 {
    /// Bit `l` set where lane `l` is.
    #[inline(always)]
    fn bits(self) -> u32 {
        // SAFETY: AVX2 (the module's contract).
        unsafe { (_mm256_movemask_pd(self.0[0]) | (_mm256_movemask_pd(self.0[1]) << 4)) as u32 }
    }
}

impl Real for F64x8 {
    type Mask = Mask8;
    const LANES: usize = LANES;

    #[inline(always)]
    fn lane(self, l: usize) -> f64 {
        self.to_array()[l]
    }
    #[inline(always)]
    fn mask_lane(mask: Mask8, l: usize) -> bool {
        mask.bits() & (1 << l) != 0
    }
    #[inline(always)]
    fn mask_bits(mask: Mask8) -> u32 {
        mask.bits()
    }
    #[inline(always)]
    fn any(mask: Mask8) -> bool {
        // SAFETY: AVX2 (the module's contract).
        unsafe { _mm256_movemask_pd(_mm256_or_pd(mask.0[0], mask.0[1])) != 0 }
    }

    #[inline(always)]
    fn splat(value: f64) -> Self {
        // SAFETY: AVX2 (the module's contract).
        let v = unsafe { _mm256_set1_pd(value) };
        F64x8([v, v])
    }
    #[inline(always)]
    fn from_lanes(mut f: impl FnMut(usize) -> f64) -> Self {
        let mut lanes = [0.0; LANES];
        for (l, lane) in lanes.iter_mut().enumerate() {
            *lane = f(l);
        }
        Self::load(&lanes)
    }
    #[inline(always)]
    fn mask_from_lanes(mut f: impl FnMut(usize) -> bool) -> Mask8 {
        let mut lanes = [0i64; LANES];
        for (l, lane) in lanes.iter_mut().enumerate() {
            *lane = -(f(l) as i64);
        }
        // SAFETY: AVX2 (the module's contract); two loads of four lanes from eight.
        unsafe {
            let at = lanes.as_ptr().cast::<__m256i>();
            Mask8([
                _mm256_castsi256_pd(_mm256_loadu_si256(at)),
                _mm256_castsi256_pd(_mm256_loadu_si256(at.add(1))),
            ])
        }
    }
    #[inline(always)]
    fn load(lanes: &[f64; LANES]) -> Self {
        // SAFETY: AVX2 (the module's contract); two loads of four lanes from eight.
        unsafe {
            F64x8([
                _mm256_loadu_pd(lanes.as_ptr()),
                _mm256_loadu_pd(lanes.as_ptr().add(4)),
            ])
        }
    }
    #[inline(always)]
    fn store(self, lanes: &mut [f64; LANES]) {
        *lanes = self.to_array();
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        // SAFETY: AVX2 (the module's contract).
        F64x8(halves!(self.0, |a| unsafe { _mm256_sqrt_pd(a) }))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        // SAFETY: AVX2 (the module's contract).
        F64x8(halves!(self.0, |a| unsafe {
            _mm256_andnot_pd(_mm256_set1_pd(-0.0), a)
        }))
    }
    /// `f64::max`: the other lane where one is NaN (`vmaxpd` alone returns its second
    /// operand then).
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        // SAFETY: AVX2 (the module's contract).
        F64x8(halves!(self.0, other.0, |a, b| unsafe {
            let b_is_nan = _mm256_cmp_pd::<_CMP_UNORD_Q>(b, b);
            _mm256_blendv_pd(_mm256_max_pd(a, b), a, b_is_nan)
        }))
    }
    #[inline(always)]
    fn floor(self) -> Self {
        // SAFETY: AVX2 (the module's contract).
        F64x8(halves!(self.0, |a| unsafe {
            _mm256_round_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a)
        }))
    }
    #[inline(always)]
    fn lt(self, other: Self) -> Mask8 {
        self.compare::<_CMP_LT_OQ>(other)
    }
    #[inline(always)]
    fn le(self, other: Self) -> Mask8 {
        self.compare::<_CMP_LE_OQ>(other)
    }
    #[inline(always)]
    fn gt(self, other: Self) -> Mask8 {
        self.compare::<_CMP_GT_OQ>(other)
    }
    #[inline(always)]
    fn is_sign_negative(self) -> Mask8 {
        // SAFETY: AVX2 (the module's contract). A lane read as an integer is negative
        // exactly when its sign bit is set.
        Mask8(halves!(self.0, |a| unsafe {
            _mm256_castsi256_pd(_mm256_cmpgt_epi64(
                _mm256_setzero_si256(),
                _mm256_castpd_si256(a),
            ))
        }))
    }
    #[inline(always)]
    fn select(mask: Mask8, yes: Self, no: Self) -> Self {
        let [m0, m1] = mask.0;
        // SAFETY: AVX2 (the module's contract). Lanes are all ones or all zeros, so the sign
        // bit `blendv` reads decides as the whole lane would.
        unsafe {
            F64x8([
                _mm256_blendv_pd(no.0[0], yes.0[0], m0),
                _mm256_blendv_pd(no.0[1], yes.0[1], m1),
            ])
        }
    }
}

/// Moves particles in and out of [`F64x8`] lanes (see [`super::super::lane_io`]).
pub struct Avx2;

/// Positions of particles `index[0..4]` as `[x0 x1 x2 x3]`, `[y…]`, `[z…]`: `[x y]` of
/// particles 0 and 2 in one register and of 1 and 3 in another, then `unpacklo`/`unpackhi`.
///
/// # Safety
/// AVX2; `base` is the first coordinate of positions stored as `[f64; 3]` each, and every
/// index is in bounds.
#[inline(always)]
unsafe fn gather4(base: *const f64, index: &[u32]) -> [__m256d; 3] {
    // SAFETY: the caller's promises.
    unsafe {
        let at = |l: usize| base.add(3 * index[l] as usize);
        let xy02 = _mm256_insertf128_pd::<1>(
            _mm256_castpd128_pd256(_mm_loadu_pd(at(0))),
            _mm_loadu_pd(at(2)),
        );
        let xy13 = _mm256_insertf128_pd::<1>(
            _mm256_castpd128_pd256(_mm_loadu_pd(at(1))),
            _mm_loadu_pd(at(3)),
        );
        let z01 = _mm_loadh_pd(_mm_load_sd(at(0).add(2)), at(1).add(2));
        let z23 = _mm_loadh_pd(_mm_load_sd(at(2).add(2)), at(3).add(2));
        [
            _mm256_unpacklo_pd(xy02, xy13),
            _mm256_unpackhi_pd(xy02, xy13),
            _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(z01), z23),
        ]
    }
}

/// `[x…]`, `[y…]`, `[z…]`, `[w…]` of padded particles `index[0..4]`: one aligned 256-bit load
/// each (`x y z w`), then a 4 × 4 transpose (`unpacklo`/`unpackhi` in pairs, then the
/// 128-bit halves).
///
/// # Safety
/// AVX2; every index is in bounds of the particles from `base`.
#[inline(always)]
unsafe fn gather_rows4(base: *const WeightedPosition, index: &[u32]) -> [__m256d; 4] {
    // SAFETY: the caller's promises; the elements are 32-byte aligned.
    unsafe {
        let row = |l: usize| _mm256_load_pd(base.add(index[l] as usize).cast::<f64>());
        let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
        let xz01 = _mm256_unpacklo_pd(r0, r1); // x0 x1 z0 z1
        let yw01 = _mm256_unpackhi_pd(r0, r1); // y0 y1 w0 w1
        let xz23 = _mm256_unpacklo_pd(r2, r3);
        let yw23 = _mm256_unpackhi_pd(r2, r3);
        [
            _mm256_permute2f128_pd::<0x20>(xz01, xz23),
            _mm256_permute2f128_pd::<0x20>(yw01, yw23),
            _mm256_permute2f128_pd::<0x31>(xz01, xz23),
            _mm256_permute2f128_pd::<0x31>(yw01, yw23),
        ]
    }
}

/// Adds lane `l` of `[dx…]`, `[dy…]`, `[dz…]` to the position of padded particle `index[l]`,
/// `l < 4`, where bit `l` of `write` is set: the transpose of [`gather_rows4`], with `+0` for
/// `w`, and one 256-bit read-modify-write per particle.
///
/// # Safety
/// As [`gather_rows4`], and every particle written is this thread's alone in this stage.
#[inline(always)]
unsafe fn scatter_rows4(
    base: *mut WeightedPosition,
    index: &[u32],
    [dx, dy, dz]: [__m256d; 3],
    write: u32,
) {
    // SAFETY: the caller's promises; the elements are 32-byte aligned.
    unsafe {
        let zero = _mm256_setzero_pd();
        let xz01 = _mm256_permute2f128_pd::<0x20>(dx, dz); // x0 x1 z0 z1
        let xz23 = _mm256_permute2f128_pd::<0x31>(dx, dz); // x2 x3 z2 z3
        let y01 = _mm256_permute2f128_pd::<0x20>(dy, zero); // y0 y1 0 0
        let y23 = _mm256_permute2f128_pd::<0x31>(dy, zero);
        let rows = [
            _mm256_unpacklo_pd(xz01, y01), // x0 y0 z0 0
            _mm256_unpackhi_pd(xz01, y01), // x1 y1 z1 0
            _mm256_unpacklo_pd(xz23, y23),
            _mm256_unpackhi_pd(xz23, y23),
        ];
        // Indexed, not `rows.into_iter().enumerate()`: the iterator was not unrolled (a fifth
        // more instructions per stretch batch, cachegrind).
        for l in 0..4 {
            if write & (1 << l) != 0 {
                let at = base.add(index[l] as usize).cast::<f64>();
                _mm256_store_pd(at, _mm256_add_pd(_mm256_load_pd(at), rows[l]));
            }
        }
    }
}

impl ParticleLanes<F64x8> for Avx2 {
    #[inline(always)]
    unsafe fn gather<P: Positions + ?Sized>(x: &P, index: &[u32; LANES]) -> Vec3<F64x8> {
        let base = x.as_ptr().cast::<f64>();
        // SAFETY: the caller's promise (bounds) and the module's (AVX2).
        let [[x0, y0, z0], [x1, y1, z1]] =
            unsafe { [gather4(base, &index[..4]), gather4(base, &index[4..])] };
        Vec3::new(F64x8([x0, x1]), F64x8([y0, y1]), F64x8([z0, z1]))
    }
    #[inline(always)]
    unsafe fn gather_values(values: &[f64], index: &[u32; LANES]) -> F64x8 {
        // SAFETY: the caller's promise.
        F64x8::from_lanes(|l| unsafe { *values.get_unchecked(index[l] as usize) })
    }
    #[inline(always)]
    unsafe fn gather_weighted<W: WeightedPositions + ?Sized>(
        x: &W,
        index: &[u32; LANES],
    ) -> (Vec3<F64x8>, F64x8) {
        let base = x.as_ptr();
        // SAFETY: the caller's promise (bounds) and the module's (AVX2).
        let [[x0, y0, z0, w0], [x1, y1, z1, w1]] = unsafe {
            [
                gather_rows4(base, &index[..4]),
                gather_rows4(base, &index[4..]),
            ]
        };
        (
            Vec3::new(F64x8([x0, x1]), F64x8([y0, y1]), F64x8([z0, z1])),
            F64x8([w0, w1]),
        )
    }
    #[inline(always)]
    unsafe fn scatter_weighted<W: WeightedPositions + ?Sized>(
        x: &mut W,
        index: &[u32; LANES],
        delta: Vec3<F64x8>,
        write: u32,
    ) {
        let base = x.as_mut_ptr();
        for h in 0..2 {
            let d = [delta.x.0[h], delta.y.0[h], delta.z.0[h]];
            // SAFETY: the caller's promises (bounds, ownership) and the module's (AVX2).
            unsafe { scatter_rows4(base, &index[4 * h..4 * h + 4], d, write >> (4 * h)) };
        }
    }
}
