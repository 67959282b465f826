//! Numbers the constraint math is written over once and run two ways: one `f64` (a single
//! constraint: tests, residuals, the stats) or [`F64s`], eight constraints of one colour side by
//! side (the solver's batched projection, [`super::batch`]).
//!
//! Every [`Real`] operation of `F64s` is the `f64` operation applied to each lane, so a
//! constraint evaluated in lane 5 of a batch gives the same bits as evaluated alone, whatever
//! the instruction set the lanes compile to (SSE2, AVX2, AVX-512, NEON): only `+ − × ÷ √`,
//! comparisons and selects are used, each exactly rounded by IEEE 754, and Rust never fuses a
//! multiply and an add on its own. That is what makes the result independent of the CPU and of
//! how the batches are shared between threads.
//!
//! Branches of the scalar math become masks: `lt`, `le`… give a [`Real::Mask`] (a `bool` for
//! `f64`, eight for `F64s`), and [`Real::select`] picks per lane. The loops over `[f64; 8]`
//! are left to LLVM to vectorize; [`super::batch`] compiles them once per instruction set and
//! picks one at run time.

// Lane loops index several arrays with one lane counter on purpose: it is the form LLVM turns
// into vector instructions most reliably.
#![allow(clippy::needless_range_loop)]

use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};

/// Constraints per batch. Fixed by the data, never by the CPU: an AVX-512 register holds the
/// eight `f64` lanes, AVX2 two registers, SSE2 and NEON four.
pub const LANES: usize = 8;

/// A floating-point number, or several side by side (see the module docs).
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    type Mask: Copy
        + BitAnd<Output = Self::Mask>
        + BitOr<Output = Self::Mask>
        + Not<Output = Self::Mask>;
    /// Numbers side by side: 1 or [`LANES`].
    const LANES: usize;

    /// Lane `l`.
    fn lane(self, l: usize) -> f64;
    /// Lane `l` of a mask.
    fn mask_lane(mask: Self::Mask, l: usize) -> bool;
    /// Bit `l` set where lane `l` of the mask is.
    fn mask_bits(mask: Self::Mask) -> u32;
    /// Whether any lane of a mask is set.
    fn any(mask: Self::Mask) -> bool;

    fn splat(value: f64) -> Self;
    /// Lane `l` is `f(l)` (a single number is lane 0).
    fn from_lanes(f: impl FnMut(usize) -> f64) -> Self;
    /// Lane `l` is `f(l)`.
    fn mask_from_lanes(f: impl FnMut(usize) -> bool) -> Self::Mask;
    /// Lane `l` is `lanes[l]` (a single number is `lanes[0]`).
    fn load(lanes: &[f64; LANES]) -> Self;
    /// Writes lane `l` to `lanes[l]`.
    fn store(self, lanes: &mut [f64; LANES]);
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    /// `f64::max`, per lane.
    fn max(self, other: Self) -> Self;
    fn floor(self) -> Self;
    fn lt(self, other: Self) -> Self::Mask;
    fn le(self, other: Self) -> Self::Mask;
    fn gt(self, other: Self) -> Self::Mask;
    fn is_sign_negative(self) -> Self::Mask;
    /// `if mask { yes } else { no }`, per lane.
    fn select(mask: Self::Mask, yes: Self, no: Self) -> Self;
}

impl Real for f64 {
    type Mask = bool;
    const LANES: usize = 1;

    #[inline(always)]
    fn lane(self, _: usize) -> f64 {
        self
    }
    #[inline(always)]
    fn mask_lane(mask: bool, _: usize) -> bool {
        mask
    }
    #[inline(always)]
    fn mask_bits(mask: bool) -> u32 {
        mask as u32
    }
    #[inline(always)]
    fn any(mask: bool) -> bool {
        mask
    }

    #[inline(always)]
    fn splat(value: f64) -> Self {
        value
    }
    #[inline(always)]
    fn from_lanes(mut f: impl FnMut(usize) -> f64) -> Self {
        f(0)
    }
    #[inline(always)]
    fn mask_from_lanes(mut f: impl FnMut(usize) -> bool) -> bool {
        f(0)
    }
    #[inline(always)]
    fn load(lanes: &[f64; LANES]) -> Self {
        lanes[0]
    }
    #[inline(always)]
    fn store(self, lanes: &mut [f64; LANES]) {
        lanes[0] = self;
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        f64::max(self, other)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        f64::floor(self)
    }
    #[inline(always)]
    fn lt(self, other: Self) -> bool {
        self < other
    }
    #[inline(always)]
    fn le(self, other: Self) -> bool {
        self <= other
    }
    #[inline(always)]
    fn gt(self, other: Self) -> bool {
        self > other
    }
    #[inline(always)]
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
    #[inline(always)]
    fn select(mask: bool, yes: Self, no: Self) -> Self {
        if mask {
            yes
        } else {
            no
        }
    }
}

/// Eight `f64` lanes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C, align(64))]
pub struct F64s(pub [f64; LANES]);

/// Eight lane flags, each all ones (set) or all zeros, the width of an `f64` lane: the form
/// a vector comparison gives and a blend takes, so masks stay in vector registers (as
/// `[bool; 8]` they were rebuilt bit by bit for every select).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Flags(pub [u64; LANES]);

impl Flags {
    /// All ones for `true`.
    #[inline(always)]
    fn of(set: bool) -> u64 {
        (set as u64).wrapping_neg()
    }

    /// Lane `l`.
    #[inline(always)]
    pub fn lane(self, l: usize) -> bool {
        self.0[l] != 0
    }

    #[inline(always)]
    pub fn any(self) -> bool {
        let mut any = 0;
        for l in 0..LANES {
            any |= self.0[l];
        }
        any != 0
    }

    #[inline(always)]
    fn zip(self, other: Self, f: impl Fn(u64, u64) -> u64) -> Self {
        let mut out = [0; LANES];
        for l in 0..LANES {
            out[l] = f(self.0[l], other.0[l]);
        }
        Flags(out)
    }
}

// The lane loops are plain indexed loops over the arrays, not `array::from_fn` or `map`:
// those go through `core::array::try_from_fn`, which LLVM left out of line inside the
// kernel compiled for a vector extension, and every lane then went through the stack.
impl F64s {
    #[inline(always)]
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        let mut out = [0.0; LANES];
        for l in 0..LANES {
            out[l] = f(self.0[l]);
        }
        F64s(out)
    }

    #[inline(always)]
    fn zip(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        let mut out = [0.0; LANES];
        for l in 0..LANES {
            out[l] = f(self.0[l], other.0[l]);
        }
        F64s(out)
    }

    #[inline(always)]
    fn compare(self, other: Self, f: impl Fn(f64, f64) -> bool) -> Flags {
        let mut out = [0; LANES];
        for l in 0..LANES {
            out[l] = Flags::of(f(self.0[l], other.0[l]));
        }
        Flags(out)
    }
}

macro_rules! lane_operator {
    ($trait:ident, $method:ident, $op:tt) => {
        impl $trait for F64s {
            type Output = F64s;
            #[inline(always)]
            fn $method(self, other: F64s) -> F64s {
                self.zip(other, |a, b| a $op b)
            }
        }
    };
}
lane_operator!(Add, add, +);
lane_operator!(Sub, sub, -);
lane_operator!(Mul, mul, *);
lane_operator!(Div, div, /);

impl Neg for F64s {
    type Output = F64s;
    #[inline(always)]
    fn neg(self) -> F64s {
        self.map(|a| -a)
    }
}

impl BitAnd for Flags {
    type Output = Flags;
    #[inline(always)]
    fn bitand(self, other: Flags) -> Flags {
        self.zip(other, |a, b| a & b)
    }
}

impl BitOr for Flags {
    type Output = Flags;
    #[inline(always)]
    fn bitor(self, other: Flags) -> Flags {
        self.zip(other, |a, b| a | b)
    }
}

impl Not for Flags {
    type Output = Flags;
    #[inline(always)]
    fn not(self) -> Flags {
        self.zip(self, |a, _| !a)
    }
}

impl Real for F64s {
    type Mask = Flags;
    const LANES: usize = LANES;

    #[inline(always)]
    fn lane(self, l: usize) -> f64 {
        self.0[l]
    }
    #[inline(always)]
    fn mask_lane(mask: Flags, l: usize) -> bool {
        mask.lane(l)
    }
    #[inline(always)]
    fn mask_bits(mask: Flags) -> u32 {
        let mut bits = 0;
        for l in 0..LANES {
            bits |= ((mask.0[l] != 0) as u32) << l;
        }
        bits
    }
    #[inline(always)]
    fn any(mask: Flags) -> bool {
        mask.any()
    }

    #[inline(always)]
    fn splat(value: f64) -> Self {
        F64s([value; LANES])
    }
    #[inline(always)]
    fn from_lanes(mut f: impl FnMut(usize) -> f64) -> Self {
        let mut out = [0.0; LANES];
        for (l, lane) in out.iter_mut().enumerate() {
            *lane = f(l);
        }
        F64s(out)
    }
    #[inline(always)]
    fn mask_from_lanes(mut f: impl FnMut(usize) -> bool) -> Flags {
        let mut out = [0; LANES];
        for (l, lane) in out.iter_mut().enumerate() {
            *lane = Flags::of(f(l));
        }
        Flags(out)
    }
    #[inline(always)]
    fn load(lanes: &[f64; LANES]) -> Self {
        F64s(*lanes)
    }
    #[inline(always)]
    fn store(self, lanes: &mut [f64; LANES]) {
        *lanes = self.0;
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        self.map(f64::sqrt)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.map(f64::abs)
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        self.zip(other, f64::max)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        self.map(f64::floor)
    }
    #[inline(always)]
    fn lt(self, other: Self) -> Flags {
        self.compare(other, |a, b| a < b)
    }
    #[inline(always)]
    fn le(self, other: Self) -> Flags {
        self.compare(other, |a, b| a <= b)
    }
    #[inline(always)]
    fn gt(self, other: Self) -> Flags {
        self.compare(other, |a, b| a > b)
    }
    #[inline(always)]
    fn is_sign_negative(self) -> Flags {
        // The sign bit spread over the lane: all ones exactly when it is set.
        let mut out = [0; LANES];
        for l in 0..LANES {
            out[l] = ((self.0[l].to_bits() as i64) >> 63) as u64;
        }
        Flags(out)
    }
    #[inline(always)]
    fn select(mask: Flags, yes: Self, no: Self) -> Self {
        // Bitwise, so the lanes need no branch: all ones keeps `yes`, all zeros `no`.
        let mut out = [0.0; LANES];
        for l in 0..LANES {
            let m = mask.0[l];
            out[l] = f64::from_bits((yes.0[l].to_bits() & m) | (no.0[l].to_bits() & !m));
        }
        F64s(out)
    }
}

/// A 3-vector of [`Real`]s: one point, or the same point of eight constraints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vec3<S> {
    pub x: S,
    pub y: S,
    pub z: S,
}

impl<S: Real> Vec3<S> {
    #[inline(always)]
    pub fn new(x: S, y: S, z: S) -> Self {
        Vec3 { x, y, z }
    }

    #[inline(always)]
    pub fn splat(value: S) -> Self {
        Vec3::new(value, value, value)
    }

    #[inline(always)]
    pub fn dot(self, o: Self) -> S {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline(always)]
    pub fn cross(self, o: Self) -> Self {
        Vec3::new(
            self.y * o.z - o.y * self.z,
            self.z * o.x - o.z * self.x,
            self.x * o.y - o.x * self.y,
        )
    }

    #[inline(always)]
    pub fn length_squared(self) -> S {
        self.dot(self)
    }

    #[inline(always)]
    pub fn length(self) -> S {
        self.length_squared().sqrt()
    }

    /// The largest absolute coordinate.
    #[inline(always)]
    pub fn max_abs(self) -> S {
        self.x.abs().max(self.y.abs()).max(self.z.abs())
    }

    #[inline(always)]
    pub fn scale(self, s: S) -> Self {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}

impl<S: Real> Add for Vec3<S> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl<S: Real> Sub for Vec3<S> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl<S: Real> Neg for Vec3<S> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}

impl From<glam::DVec3> for Vec3<f64> {
    #[inline(always)]
    fn from(v: glam::DVec3) -> Self {
        Vec3::new(v.x, v.y, v.z)
    }
}

impl From<Vec3<f64>> for glam::DVec3 {
    #[inline(always)]
    fn from(v: Vec3<f64>) -> Self {
        glam::DVec3::new(v.x, v.y, v.z)
    }
}

impl<S: Real> Vec3<S> {
    /// Lane `l` is `f(l)`.
    #[inline(always)]
    pub fn from_fn(f: impl Fn(usize) -> glam::DVec3) -> Self {
        Vec3::new(
            S::from_lanes(|l| f(l).x),
            S::from_lanes(|l| f(l).y),
            S::from_lanes(|l| f(l).z),
        )
    }

    /// Lane `l`.
    #[inline(always)]
    pub fn lane(&self, l: usize) -> glam::DVec3 {
        glam::DVec3::new(self.x.lane(l), self.y.lane(l), self.z.lane(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lane_is_the_scalar_operation() {
        let a = F64s::from_lanes(|l| l as f64 * 0.7 - 2.1);
        let b = F64s::from_lanes(|l| 1.3 - l as f64 * 0.45);
        let lanes = (a * b - a / b).sqrt().max(a.abs()) + (-b).floor();
        for l in 0..LANES {
            let (x, y) = (a.0[l], b.0[l]);
            let scalar = (x * y - x / y).sqrt().max(x.abs()) + (-y).floor();
            assert_eq!(lanes.0[l].to_bits(), scalar.to_bits(), "lane {l}");
        }
        let picked = F64s::select(a.lt(b), a, b);
        for l in 0..LANES {
            assert_eq!(picked.0[l], a.0[l].min(b.0[l]));
        }
    }
}
