//! Eight `f64` lanes in one AVX-512 register ([`F64x8`], masks in a mask register), and the
//! batch's particles moved into them and back ([`Avx512`]): padded rows by 256-bit loads and
//! transposes, positions by 128-bit loads and shuffles.
//!
//! As in [`super::avx2`], every operation is the one instruction IEEE 754 rounds exactly as
//! the scalar `f64` operation, so each lane gives the bits the same math gives alone.

use super::super::lane_io::ParticleLanes;
use super::super::lanes::{Real, Vec3, LANES};
use super::super::weighted::{WeightedPosition, WeightedPositions};
use super::super::Positions;
use std::arch::x86_64::*;
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};

/// Eight lanes.
#[derive(Clone, Copy)]
pub struct F64x8(__m512d);

/// Bit `l` set where lane `l` is.
#[derive(Clone, Copy)]
pub struct Mask8(__mmask8);

macro_rules! lane_operator {
    ($trait:ident, $method:ident, $intrinsic:ident) => {
        impl $trait for F64x8 {
            type Output = F64x8;
            #[inline(always)]
            fn $method(self, other: F64x8) -> F64x8 {
                // SAFETY: AVX-512 (the module's contract).
                F64x8(unsafe { $intrinsic(self.0, other.0) })
            }
        }
    };
}
lane_operator!(Add, add, _mm512_add_pd);
lane_operator!(Sub, sub, _mm512_sub_pd);
lane_operator!(Mul, mul, _mm512_mul_pd);
lane_operator!(Div, div, _mm512_div_pd);

impl Neg for F64x8 {
    type Output = F64x8;
    /// The sign bit flipped, as `-x` is for one `f64`.
    #[inline(always)]
    fn neg(self) -> F64x8 {
        // SAFETY: AVX-512 (the module's contract).
        F64x8(unsafe { _mm512_xor_pd(self.0, _mm512_set1_pd(-0.0)) })
    }
}

impl BitAnd for Mask8 {
    type Output = Mask8;
    #[inline(always)]
    fn bitand(self, other: Mask8) -> Mask8 {
        Mask8(self.0 & other.0)
    }
}

impl BitOr for Mask8 {
    type Output = Mask8;
    #[inline(always)]
    fn bitor(self, other: Mask8) -> Mask8 {
        Mask8(self.0 | other.0)
    }
}

impl Not for Mask8 {
    type Output = Mask8;
    #[inline(always)]
    fn not(self) -> Mask8 {
        Mask8(!self.0)
    }
}

impl F64x8 {
    #[inline(always)]
    fn compare<const PREDICATE: i32>(self, other: F64x8) -> Mask8 {
        // SAFETY: AVX-512 (the module's contract).
        Mask8(unsafe { _mm512_cmp_pd_mask::<PREDICATE>(self.0, other.0) })
    }
}

impl Real for F64x8 {
    type Mask = Mask8;
    const LANES: usize = LANES;

    #[inline(always)]
    fn lane(self, l: usize) -> f64 {
        let mut lanes = [0.0; LANES];
        self.store(&mut lanes);
        lanes[l]
    }
    #[inline(always)]
    fn mask_lane(mask: Mask8, l: usize) -> bool {
        mask.0 & (1 << l) != 0
    }
    #[inline(always)]
    fn mask_bits(mask: Mask8) -> u32 {
        mask.0 as u32
    }
    #[inline(always)]
    fn any(mask: Mask8) -> bool {
        mask.0 != 0
    }

    #[inline(always)]
    fn splat(value: f64) -> Self {
        // SAFETY: AVX-512 (the module's contract).
        F64x8(unsafe { _mm512_set1_pd(value) })
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
        let mut bits = 0;
        for l in 0..LANES {
            bits |= (f(l) as u8) << l;
        }
        Mask8(bits)
    }
    #[inline(always)]
    fn load(lanes: &[f64; LANES]) -> Self {
        // SAFETY: AVX-512 (the module's contract); eight lanes from eight.
        F64x8(unsafe { _mm512_loadu_pd(lanes.as_ptr()) })
    }
    #[inline(always)]
    fn store(self, lanes: &mut [f64; LANES]) {
        // SAFETY: AVX-512 (the module's contract); eight lanes into eight.
        unsafe { _mm512_storeu_pd(lanes.as_mut_ptr(), self.0) }
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        // SAFETY: AVX-512 (the module's contract).
        F64x8(unsafe { _mm512_sqrt_pd(self.0) })
    }
    #[inline(always)]
    fn abs(self) -> Self {
        // SAFETY: AVX-512 (the module's contract). Clears the sign bit, as `f64::abs`.
        F64x8(unsafe { _mm512_abs_pd(self.0) })
    }
    /// `f64::max`: the other lane where one is NaN (`vmaxpd` alone returns its second
    /// operand then).
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        // SAFETY: AVX-512 (the module's contract).
        F64x8(unsafe {
            let other_is_nan = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(other.0, other.0);
            _mm512_mask_blend_pd(other_is_nan, _mm512_max_pd(self.0, other.0), self.0)
        })
    }
    #[inline(always)]
    fn floor(self) -> Self {
        // SAFETY: AVX-512 (the module's contract).
        F64x8(unsafe {
            _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(self.0)
        })
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
        // SAFETY: AVX-512 (the module's contract). The sign bit of every lane.
        Mask8(unsafe { _mm512_movepi64_mask(_mm512_castpd_si512(self.0)) })
    }
    #[inline(always)]
    fn select(mask: Mask8, yes: Self, no: Self) -> Self {
        // SAFETY: AVX-512 (the module's contract).
        F64x8(unsafe { _mm512_mask_blend_pd(mask.0, no.0, yes.0) })
    }
}

/// Moves particles in and out of [`F64x8`] lanes (see [`super::super::lane_io`]).
pub struct Avx512;

/// `[x y]` of particles `index[0]`, `index[2]`, `index[4]`, `index[6]` (from `first` = 0) or
/// of the odd ones (`first` = 1), one per 128-bit lane.
///
/// # Safety
/// AVX-512; `base` is the first coordinate of positions stored as `[f64; 3]` each, and every
/// index is in bounds.
#[inline(always)]
unsafe fn xy_pairs(base: *const f64, index: &[u32; LANES], first: usize) -> __m512d {
    // SAFETY: the caller's promises.
    unsafe {
        let at = |l: usize| base.add(3 * index[l] as usize);
        let v = _mm512_castpd128_pd512(_mm_loadu_pd(at(first)));
        let v = _mm512_insertf64x2::<1>(v, _mm_loadu_pd(at(first + 2)));
        let v = _mm512_insertf64x2::<2>(v, _mm_loadu_pd(at(first + 4)));
        _mm512_insertf64x2::<3>(v, _mm_loadu_pd(at(first + 6)))
    }
}

/// `[x…]`, `[y…]`, `[z…]`, `[w…]` of padded particles `index[0..8]`: one aligned 256-bit load
/// each (`x y z w`), particles 0 and 2, 1 and 3, 4 and 6, 5 and 7 in the halves of four
/// registers, so that `unpacklo`/`unpackhi` and one 128-bit shuffle per result finish the
/// transpose in lane order.
///
/// # Safety
/// AVX-512; every index is in bounds of the particles from `base`.
#[inline(always)]
unsafe fn gather_rows8(base: *const WeightedPosition, index: &[u32; LANES]) -> [__m512d; 4] {
    // The 128-bit pieces 0 and 2 of both operands, and 1 and 3.
    const EVEN: i32 = 0b10_00_10_00;
    const ODD: i32 = 0b11_01_11_01;
    // SAFETY: the caller's promises; the elements are 32-byte aligned.
    unsafe {
        let row = |l: usize| _mm256_load_pd(base.add(index[l] as usize).cast::<f64>());
        let pair =
            |a: usize, b: usize| _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(row(a)), row(b));
        let (rows02, rows13, rows46, rows57) = (pair(0, 2), pair(1, 3), pair(4, 6), pair(5, 7));
        let xz_low = _mm512_unpacklo_pd(rows02, rows13); // x0 x1 z0 z1 | x2 x3 z2 z3
        let yw_low = _mm512_unpackhi_pd(rows02, rows13); // y0 y1 w0 w1 | y2 y3 w2 w3
        let xz_high = _mm512_unpacklo_pd(rows46, rows57); // x4 x5 z4 z5 | x6 x7 z6 z7
        let yw_high = _mm512_unpackhi_pd(rows46, rows57);
        [
            _mm512_shuffle_f64x2::<EVEN>(xz_low, xz_high),
            _mm512_shuffle_f64x2::<EVEN>(yw_low, yw_high),
            _mm512_shuffle_f64x2::<ODD>(xz_low, xz_high),
            _mm512_shuffle_f64x2::<ODD>(yw_low, yw_high),
        ]
    }
}

impl ParticleLanes<F64x8> for Avx512 {
    #[inline(always)]
    unsafe fn gather<P: Positions + ?Sized>(x: &P, index: &[u32; LANES]) -> Vec3<F64x8> {
        let base = x.as_ptr().cast::<f64>();
        // SAFETY: the caller's promise (bounds) and the module's (AVX-512).
        unsafe {
            let (even, odd) = (xy_pairs(base, index, 0), xy_pairs(base, index, 1));
            let z = |l: usize| base.add(3 * index[l] as usize + 2);
            let pair = |l: usize| _mm_loadh_pd(_mm_load_sd(z(l)), z(l + 1));
            let zs = _mm512_castpd128_pd512(pair(0));
            let zs = _mm512_insertf64x2::<1>(zs, pair(2));
            let zs = _mm512_insertf64x2::<2>(zs, pair(4));
            let zs = _mm512_insertf64x2::<3>(zs, pair(6));
            Vec3::new(
                F64x8(_mm512_unpacklo_pd(even, odd)),
                F64x8(_mm512_unpackhi_pd(even, odd)),
                F64x8(zs),
            )
        }
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
        // SAFETY: the caller's promise (bounds) and the module's (AVX-512).
        let [px, py, pz, pw] = unsafe { gather_rows8(x.as_ptr(), index) };
        (Vec3::new(F64x8(px), F64x8(py), F64x8(pz)), F64x8(pw))
    }
    /// The transpose of [`gather_rows8`], with `+0` for `w`: `x z` and `y 0` interleaved by
    /// pairs (one two-register permute each), then `unpacklo`/`unpackhi` give the rows of
    /// particles 0 and 2, 1 and 3…; one 256-bit read-modify-write per particle written.
    #[inline(always)]
    unsafe fn scatter_weighted<W: WeightedPositions + ?Sized>(
        x: &mut W,
        index: &[u32; LANES],
        delta: Vec3<F64x8>,
        write: u32,
    ) {
        let base = x.as_mut_ptr();
        // SAFETY: the caller's promises (bounds, ownership) and the module's (AVX-512); the
        // elements are 32-byte aligned.
        unsafe {
            let zero = _mm512_setzero_pd();
            let low = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
            let high = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
            let (dx, dy, dz) = (delta.x.0, delta.y.0, delta.z.0);
            let xz_low = _mm512_permutex2var_pd(dx, low, dz); // x0 x1 z0 z1 | x2 x3 z2 z3
            let y_low = _mm512_permutex2var_pd(dy, low, zero); // y0 y1 0 0 | y2 y3 0 0
            let xz_high = _mm512_permutex2var_pd(dx, high, dz);
            let y_high = _mm512_permutex2var_pd(dy, high, zero);
            let rows02 = _mm512_unpacklo_pd(xz_low, y_low); // x0 y0 z0 0 | x2 y2 z2 0
            let rows13 = _mm512_unpackhi_pd(xz_low, y_low);
            let rows46 = _mm512_unpacklo_pd(xz_high, y_high);
            let rows57 = _mm512_unpackhi_pd(xz_high, y_high);
            let rows = [
                _mm512_castpd512_pd256(rows02),
                _mm512_castpd512_pd256(rows13),
                _mm512_extractf64x4_pd::<1>(rows02),
                _mm512_extractf64x4_pd::<1>(rows13),
                _mm512_castpd512_pd256(rows46),
                _mm512_castpd512_pd256(rows57),
                _mm512_extractf64x4_pd::<1>(rows46),
                _mm512_extractf64x4_pd::<1>(rows57),
            ];
            // Indexed, not `rows.into_iter().enumerate()`: the iterator was not unrolled
            // (a fifth more instructions per stretch batch on the AVX2 path, cachegrind).
            for l in 0..LANES {
                if write & (1 << l) != 0 {
                    let at = base.add(index[l] as usize).cast::<f64>();
                    _mm256_store_pd(at, _mm256_add_pd(_mm256_load_pd(at), rows[l]));
                }
            }
        }
    }
}
