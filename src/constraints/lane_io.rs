//! Moving particles into the lanes of a batch and their corrections back out: the gathers and
//! scatters of [`super::batch`], which cost more than the arithmetic of most kinds.
//!
//! A batch reads the positions and inverse masses of `N` particles per lane at arbitrary
//! indices and adds a correction to each. Three ways, all moving the same bits (a gather
//! copies, a scatter adds each coordinate once, `x + δx`, exactly as one constraint alone):
//!
//! - [`Scalar`]: one constraint (`f64` lanes): plain loads and stores.
//! - [`Portable`]: eight lanes through plain arrays; LLVM builds the vectors from them. Used
//!   where no vector path applies (x86-64 without AVX2, aarch64, others).
//! - `x86::avx2::Avx2` and `x86::avx512::Avx512` (x86-64): four or eight particles at a time
//!   in registers.
//!
//! The batches read and correct particles padded with their inverse masses
//! ([`WeightedPositions`]: one 32-byte load per particle and a 4 × 4 transpose in, the
//! transpose back and one 32-byte read-modify-write out, see [`super::weighted`]). Positions
//! stored as [`DVec3`] ([`Positions`]: `x_prev` for damping, the collision and fluid passes)
//! are only gathered, with 128-bit loads of `[x y]` and pairs for `z`.
//!
//! A scatter writes only the lanes its `write` bits name: a lane that does not act, a lane past
//! the end of a short batch (it repeats the last constraint), and pinned particles (`w = 0`,
//! which several threads may read within one colour) are never written.

use super::lanes::{F64s, Real, Vec3, LANES};
use super::weighted::WeightedPositions;
use super::Positions;
use glam::DVec3;

/// One way of moving a batch's particles in and out of lanes of `S`.
pub trait ParticleLanes<S: Real> {
    /// Lane `l` is the position of particle `index[l]`.
    ///
    /// # Safety
    /// Every index is in bounds of `x`.
    unsafe fn gather<P: Positions + ?Sized>(x: &P, index: &[u32; LANES]) -> Vec3<S>;
    /// Lane `l` is `values[index[l]]`.
    ///
    /// # Safety
    /// Every index is in bounds of `values`.
    unsafe fn gather_values(values: &[f64], index: &[u32; LANES]) -> S;
    /// Lane `l` of the pair is the position and the inverse mass of particle `index[l]`.
    ///
    /// # Safety
    /// Every index is in bounds of `x`.
    unsafe fn gather_weighted<W: WeightedPositions + ?Sized>(
        x: &W,
        index: &[u32; LANES],
    ) -> (Vec3<S>, S);
    /// Adds lane `l` of `delta` to the position of particle `index[l]` where bit `l` of
    /// `write` is set, its inverse mass unchanged.
    ///
    /// # Safety
    /// As [`ParticleLanes::scatter`].
    unsafe fn scatter_weighted<W: WeightedPositions + ?Sized>(
        x: &mut W,
        index: &[u32; LANES],
        delta: Vec3<S>,
        write: u32,
    );
}

/// One constraint at a time (lane 0 of the index arrays).
pub struct Scalar;

impl ParticleLanes<f64> for Scalar {
    #[inline(always)]
    unsafe fn gather<P: Positions + ?Sized>(x: &P, index: &[u32; LANES]) -> Vec3<f64> {
        // SAFETY: the caller's promise.
        Vec3::from(unsafe { x.get_unchecked(index[0] as usize) })
    }
    #[inline(always)]
    unsafe fn gather_values(values: &[f64], index: &[u32; LANES]) -> f64 {
        // SAFETY: the caller's promise.
        unsafe { *values.get_unchecked(index[0] as usize) }
    }
    #[inline(always)]
    unsafe fn gather_weighted<W: WeightedPositions + ?Sized>(
        x: &W,
        index: &[u32; LANES],
    ) -> (Vec3<f64>, f64) {
        // SAFETY: the caller's promise.
        let particle = unsafe { *x.as_ptr().add(index[0] as usize) };
        (Vec3::from(particle.position), particle.inv_mass)
    }
    #[inline(always)]
    unsafe fn scatter_weighted<W: WeightedPositions + ?Sized>(
        x: &mut W,
        index: &[u32; LANES],
        delta: Vec3<f64>,
        write: u32,
    ) {
        if write & 1 != 0 {
            // SAFETY: the caller's promise.
            unsafe { (*x.as_mut_ptr().add(index[0] as usize)).position += DVec3::from(delta) };
        }
    }
}

/// Eight lanes through plain arrays (see the module docs).
pub struct Portable;

impl ParticleLanes<F64s> for Portable {
    #[inline(always)]
    unsafe fn gather<P: Positions + ?Sized>(x: &P, index: &[u32; LANES]) -> Vec3<F64s> {
        let (mut px, mut py, mut pz) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for l in 0..LANES {
            // SAFETY: the caller's promise.
            let position = unsafe { x.get_unchecked(index[l] as usize) };
            px[l] = position.x;
            py[l] = position.y;
            pz[l] = position.z;
        }
        Vec3::new(F64s(px), F64s(py), F64s(pz))
    }
    #[inline(always)]
    unsafe fn gather_values(values: &[f64], index: &[u32; LANES]) -> F64s {
        let mut out = [0.0; LANES];
        for l in 0..LANES {
            // SAFETY: the caller's promise.
            out[l] = unsafe { *values.get_unchecked(index[l] as usize) };
        }
        F64s(out)
    }
    #[inline(always)]
    unsafe fn gather_weighted<W: WeightedPositions + ?Sized>(
        x: &W,
        index: &[u32; LANES],
    ) -> (Vec3<F64s>, F64s) {
        let (mut px, mut py, mut pz, mut pw) =
            ([0.0; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for l in 0..LANES {
            // SAFETY: the caller's promise.
            let particle = unsafe { *x.as_ptr().add(index[l] as usize) };
            px[l] = particle.position.x;
            py[l] = particle.position.y;
            pz[l] = particle.position.z;
            pw[l] = particle.inv_mass;
        }
        (Vec3::new(F64s(px), F64s(py), F64s(pz)), F64s(pw))
    }
    #[inline(always)]
    unsafe fn scatter_weighted<W: WeightedPositions + ?Sized>(
        x: &mut W,
        index: &[u32; LANES],
        delta: Vec3<F64s>,
        write: u32,
    ) {
        // The lanes leave the vector registers once, into arrays (reading a lane at a run-time
        // index spilled the whole register for every particle written).
        let (dx, dy, dz) = (delta.x.0, delta.y.0, delta.z.0);
        for l in 0..LANES {
            if write & (1 << l) != 0 {
                let d = DVec3::new(dx[l], dy[l], dz[l]);
                // SAFETY: the caller's promise.
                unsafe { (*x.as_mut_ptr().add(index[l] as usize)).position += d };
            }
        }
    }
}
