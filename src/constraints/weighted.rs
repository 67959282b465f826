//! Particles as the batched kernels read them: each position with its inverse mass beside it,
//! 32 bytes a particle and aligned to 32 ([`WeightedPosition`]).
//!
//! A batch of [`super::batch`] reads four numbers of each particle it touches (`x y z w`) and
//! adds a correction to three. Stored as `[f64; 3]` positions and a separate array of inverse
//! masses, that was two loads of 16 and 8 bytes and a third for `w`, five shuffles to put
//! them in lanes, and two read-modify-writes per particle back; padded, it is one 32-byte load
//! and a 4 × 4 transpose, and one 32-byte read-modify-write back (`w` gains `+0`, its bits
//! unchanged). A prototype moved a 4-particle stencil in and out in 4.6 ns instead of 6.6,
//! and the dihedral kernel went from 12.2 to 9.3 ns a hinge on AVX-512 (docs/benchmarks.md,
//! "Issue 13: positions padded with their inverse masses").
//!
//! The solver keeps its positions as [`DVec3`] for every other stage (contacts, colliders,
//! fluids, output), and copies them in and out of a padded buffer around its constraint
//! sweeps ([`pack`], [`unpack`]): two passes over the particles per iteration against a
//! sweep's several passes over the constraints.

use glam::DVec3;

/// A particle's position and inverse mass `w` (0: pinned), 32-byte aligned so a 256-bit load
/// reads it whole and never straddles a cache line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(32))]
pub struct WeightedPosition {
    pub position: DVec3,
    pub inv_mass: f64,
}

/// Where the batched projection reads and corrects particles: a plain slice, or a parallel
/// stage's view of a shared one (`solver::parallel::StageView`).
pub trait WeightedPositions {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The first particle; particle `i` is `i` elements on.
    fn as_ptr(&self) -> *const WeightedPosition;
    /// [`WeightedPositions::as_ptr`], for writing. Only particles the writer alone uses in
    /// the current stage may be written (see `SharedSlice`'s rule).
    fn as_mut_ptr(&mut self) -> *mut WeightedPosition;
}

impl WeightedPositions for [WeightedPosition] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[WeightedPosition]>::len(self)
    }
    #[inline(always)]
    fn as_ptr(&self) -> *const WeightedPosition {
        <[WeightedPosition]>::as_ptr(self)
    }
    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut WeightedPosition {
        <[WeightedPosition]>::as_mut_ptr(self)
    }
}

/// Copies positions `x` and inverse masses `inv_mass` into `into`, element by element.
///
/// # Panics
/// If the three differ in length.
pub fn pack(x: &[DVec3], inv_mass: &[f64], into: &mut [WeightedPosition]) {
    assert!(x.len() == inv_mass.len() && x.len() == into.len());
    for ((slot, &position), &inv_mass) in into.iter_mut().zip(x).zip(inv_mass) {
        *slot = WeightedPosition { position, inv_mass };
    }
}

/// Copies the positions of `from` back into `x`.
///
/// # Panics
/// If the two differ in length.
pub fn unpack(from: &[WeightedPosition], x: &mut [DVec3]) {
    assert_eq!(from.len(), x.len());
    for (position, particle) in x.iter_mut().zip(from) {
        *position = particle.position;
    }
}

/// `x` and `inv_mass` packed into a new buffer (tests and benches).
pub fn packed(x: &[DVec3], inv_mass: &[f64]) -> Vec<WeightedPosition> {
    let mut into = vec![WeightedPosition::default(); x.len()];
    pack(x, inv_mass, &mut into);
    into
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_particle_is_four_numbers_aligned_to_32_bytes() {
        assert_eq!(std::mem::size_of::<WeightedPosition>(), 32);
        assert_eq!(std::mem::align_of::<WeightedPosition>(), 32);
        let particle = WeightedPosition {
            position: DVec3::new(1.0, 2.0, 3.0),
            inv_mass: 4.0,
        };
        // SAFETY: repr(C): three f64 of the DVec3, then the inverse mass.
        let numbers: [f64; 4] = unsafe { std::mem::transmute(particle) };
        assert_eq!(numbers, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn packing_and_unpacking_keep_every_bit() {
        let x = vec![
            DVec3::new(0.1, -0.0, 1e-300),
            DVec3::new(f64::MAX, 3.0, -7.5),
        ];
        let inv_mass = [0.0, 2.5];
        let packed = packed(&x, &inv_mass);
        assert_eq!(packed[1].inv_mass, 2.5);
        let mut back = vec![DVec3::ZERO; 2];
        unpack(&packed, &mut back);
        let bits = |v: &[DVec3]| -> Vec<[u64; 3]> {
            v.iter().map(|p| p.to_array().map(f64::to_bits)).collect()
        };
        assert_eq!(bits(&back), bits(&x));
    }
}
