//! The density constraint's sums over a particle's neighbours ([`super`]), written once over
//! [`Real`] and run two ways: a neighbour at a time in `f64` (what the tests hold the lanes
//! to), and [`LANES`] neighbours at a time in the lanes of the constraint kernels ([`crate::constraints::lanes`], on
//! [`SimdPath::chosen`](crate::constraints::batch::SimdPath::chosen)).
//!
//! A particle has about 30 neighbours, and one at a time each term cost a branch, a square
//! root and a division in a chain of dependent operations (docs/benchmarks.md, "Issue 13: the
//! density sums in lanes").
//!
//! **Same bits.** Only the terms are computed in lanes: a distance, a kernel value
//! ([`Kernel::w`]), a spiky gradient, each written once over [`Real`] with the exactly
//! rounded per-lane operations of [`crate::constraints::lanes`], "zero beyond `h`" as a
//! select. The sums themselves are still added term by term in the order of the neighbour
//! list (ascending particle index), so every sum is the same number on every path, and on
//! any number of threads.

use super::{FluidBlock, Kernel, VelocityFields};
use crate::constraints::batch::lane_passes;
use crate::constraints::lane_io::ParticleLanes;
use crate::constraints::lanes::{Real, Vec3, LANES};
use glam::DVec3;

/// The neighbours of a list in chunks that fill the lanes of `S`: each chunk's indices (the
/// lanes past the list's end repeat its last; [`add_lanes`] adds their terms as `+0`) and
/// how many are real. A counted iterator with its own `next`, not `step_by` and a closure:
/// a closure does not inherit the `#[target_feature]` of the lane pass, and `step_by` cost
/// the neighbour search a tenth of its time ([`crate::collision::neighbours`]).
struct Chunks<'a, S> {
    near: &'a [u32],
    start: usize,
    lanes: std::marker::PhantomData<S>,
}

/// [`Chunks`] of `near`.
#[inline(always)]
fn chunks<S: Real>(near: &[u32]) -> Chunks<'_, S> {
    Chunks {
        near,
        start: 0,
        lanes: std::marker::PhantomData,
    }
}

impl<S: Real> Iterator for Chunks<'_, S> {
    type Item = ([u32; LANES], usize);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.start >= self.near.len() {
            return None;
        }
        let rest = &self.near[self.start..];
        if S::LANES == LANES && rest.len() >= LANES {
            self.start += LANES;
            return Some((rest[..LANES].try_into().expect("a chunk of LANES"), LANES));
        }
        let held = rest.len().min(S::LANES);
        self.start += held;
        // Lane by lane, not `copy_from_slice`: a copy of a length known only at run time is
        // a call to `memcpy`.
        Some((std::array::from_fn(|l| rest[l.min(held - 1)]), held))
    }
}

/// Checks that every neighbour is below `bound` (the length of what they index).
///
/// # Panics
/// If one is not.
#[inline(always)]
fn check_bounds(near: &[u32], bound: usize) {
    let largest = near.iter().fold(0, |m, &j| m.max(j));
    assert!(
        near.is_empty() || (largest as usize) < bound,
        "neighbour {largest} of {bound}"
    );
}

/// Adds the first `held` lanes of `terms` to `sum`, lane by lane. Every lane is added, in a
/// loop of known length that unrolls: the lanes from `held` on as `+0`, which leaves the sum
/// as it was (every sum here starts at `+0`, and in round-to-nearest a sum of a `+0` start
/// is never `−0`, so `s + 0 = s` exactly, NaN and infinities included).
#[inline(always)]
fn add_lanes<S: Real>(sum: &mut f64, terms: S, held: usize) {
    let mut lanes = [0.0; LANES];
    S::select(real_lanes::<S>(held), terms, S::splat(0.0)).store(&mut lanes);
    for term in &lanes[..S::LANES] {
        *sum += term;
    }
}

/// The mask of the first `held` lanes.
#[inline(always)]
fn real_lanes<S: Real>(held: usize) -> S::Mask {
    const LANE_NUMBERS: [f64; LANES] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
    S::load(&LANE_NUMBERS).lt(S::splat(held as f64))
}

/// [`add_lanes`] for the three coordinates of `terms`.
#[inline(always)]
fn add_vector_lanes<S: Real>(sum: &mut DVec3, terms: Vec3<S>, held: usize) {
    add_lanes(&mut sum.x, terms.x, held);
    add_lanes(&mut sum.y, terms.y, held);
    add_lanes(&mut sum.z, terms.z, held);
}

/// `x_i − x_j` for the neighbours `index` in lanes.
///
/// # Safety
/// Every index is in bounds of `x`.
#[inline(always)]
unsafe fn differences<S: Real, IO: ParticleLanes<S>>(
    xi: DVec3,
    x: &[DVec3],
    index: &[u32; LANES],
) -> Vec3<S> {
    // SAFETY: the caller's promise.
    splat(xi) - unsafe { IO::gather(x, index) }
}

lane_passes! {
    /// `(Σ_j ∇W(x_i − x_j), Σ_j |∇W(x_i − x_j)|²)` over `near` ([`FluidBlock::lambda`]'s
    /// sums).
    pub(super) fn gradient_sums(
        kernel: &Kernel,
        xi: DVec3,
        near: &[u32],
        x: &[DVec3],
    ) -> (DVec3, f64);
    /// [`gradient_sums`] on `path`.
    fn gradient_sums_on / gradient_sums_avx2 / gradient_sums_avx512 = gradient_sums_with;
}

#[inline(always)]
fn gradient_sums_with<S: Real, IO: ParticleLanes<S>>(
    kernel: &Kernel,
    xi: DVec3,
    near: &[u32],
    x: &[DVec3],
) -> (DVec3, f64) {
    check_bounds(near, x.len());
    let (mut own, mut others) = (DVec3::ZERO, 0.0);
    for (index, held) in chunks::<S>(near) {
        // SAFETY: every index was checked against `x` above.
        let g = kernel.gradient(unsafe { differences::<S, IO>(xi, x, &index) });
        add_vector_lanes(&mut own, g, held);
        add_lanes(&mut others, g.length_squared(), held);
    }
    (own, others)
}

lane_passes! {
    /// `Σ_j (λ_i + λ_j + s_corr) ∇W(x_i − x_j)` over `near`, `λ_j = lambda[j]` and
    /// `s_corr = −(W/W(Δq))⁴ · pressure_unit` ([`FluidBlock::correction`]'s sum).
    pub(super) fn correction_sum(
        block: &FluidBlock,
        at: (DVec3, f64, f64),
        near: &[u32],
        x: &[DVec3],
        lambda: &[f64],
    ) -> DVec3;
    /// [`correction_sum`] on `path`.
    fn correction_sum_on / correction_sum_avx2 / correction_sum_avx512 = correction_sum_with;
}

#[inline(always)]
fn correction_sum_with<S: Real, IO: ParticleLanes<S>>(
    block: &FluidBlock,
    (xi, lambda_i, pressure_unit): (DVec3, f64, f64),
    near: &[u32],
    x: &[DVec3],
    lambda: &[f64],
) -> DVec3 {
    let kernel = &block.kernel;
    let (reference, unit) = (S::splat(block.pressure_reference), S::splat(pressure_unit));
    check_bounds(near, x.len().min(lambda.len()));
    let mut sum = DVec3::ZERO;
    for (index, held) in chunks::<S>(near) {
        // SAFETY: every index was checked against `x` and `lambda` above.
        let (d, lambda_j) = unsafe {
            (
                differences::<S, IO>(xi, x, &index),
                IO::gather_values(lambda, &index),
            )
        };
        let ratio = kernel.w(d.length_squared()) / reference;
        let square = ratio * ratio;
        let s_corr = -(square * square) * unit;
        let coefficient = S::splat(lambda_i) + lambda_j + s_corr;
        add_vector_lanes(&mut sum, kernel.gradient(d).scale(coefficient), held);
    }
    sum
}

lane_passes! {
    /// `Σ_j (m/ρ_j) ∇W(x_i − x_j) × (v_j − v_i)` over `near`
    /// ([`FluidBlock::vorticity_at`]'s sum).
    pub(super) fn curl_sum(
        block: &FluidBlock,
        i: usize,
        near: &[u32],
        fields: &VelocityFields<'_>,
    ) -> DVec3;
    /// [`curl_sum`] on `path`.
    fn curl_sum_on / curl_sum_avx2 / curl_sum_avx512 = curl_sum_with;
}

#[inline(always)]
fn curl_sum_with<S: Real, IO: ParticleLanes<S>>(
    block: &FluidBlock,
    i: usize,
    near: &[u32],
    fields: &VelocityFields<'_>,
) -> DVec3 {
    let at = (fields.x[i], fields.v[i]);
    check_bounds(near, fields.len());
    let mass = S::splat(block.mass);
    let mut sum = DVec3::ZERO;
    for (index, held) in chunks::<S>(near) {
        // SAFETY: every index was checked against the fields above.
        let (d, dv, density) = unsafe { relative_fields::<S, IO>(at, fields, &index) };
        let weight = mass / density;
        let term = block.kernel.gradient(d).cross(dv).scale(weight);
        add_vector_lanes(&mut sum, term, held);
    }
    sum
}

lane_passes! {
    /// `(Σ_j (v_j − v_i) w_j W_ij, Σ_j (|ω_j| − |ω_i|) w_j ∇W_ij)` over `near`, with
    /// `w_j = (m/ρ_j) κ`; the second zero without `omega` ([`FluidBlock::smoothed_velocity`]'s
    /// sums).
    pub(super) fn velocity_sums(
        block: &FluidBlock,
        i: usize,
        near: &[u32],
        fields: &VelocityFields<'_>,
        omega: Option<&[DVec3]>,
    ) -> (DVec3, DVec3);
    /// [`velocity_sums`] on `path`.
    fn velocity_sums_on / velocity_sums_avx2 / velocity_sums_avx512 = velocity_sums_with;
}

#[inline(always)]
fn velocity_sums_with<S: Real, IO: ParticleLanes<S>>(
    block: &FluidBlock,
    i: usize,
    near: &[u32],
    fields: &VelocityFields<'_>,
    omega: Option<&[DVec3]>,
) -> (DVec3, DVec3) {
    let at = (fields.x[i], fields.v[i]);
    // `ω` of every particle with `|ω_i|`.
    let spin = omega.map(|omega| (omega, omega[i].length()));
    check_bounds(
        near,
        fields.len().min(omega.map_or(usize::MAX, <[DVec3]>::len)),
    );
    let (mass, calibration) = (S::splat(block.mass), S::splat(block.calibration));
    let (mut mean, mut eta) = (DVec3::ZERO, DVec3::ZERO);
    for (index, held) in chunks::<S>(near) {
        // SAFETY: every index was checked against the fields and `omega` above.
        let (d, dv, density) = unsafe { relative_fields::<S, IO>(at, fields, &index) };
        let weight = mass / density * calibration;
        let w = block.kernel.w(d.length_squared());
        add_vector_lanes(&mut mean, dv.scale(weight * w), held);
        if let Some((omega, omega_i)) = spin {
            // SAFETY: as above.
            let omega_j = unsafe { IO::gather(omega, &index) }.length();
            let spin = weight * (omega_j - S::splat(omega_i));
            add_vector_lanes(&mut eta, block.kernel.gradient(d).scale(spin), held);
        }
    }
    (mean, eta)
}

/// What the velocity passes read of the neighbours `index` of the particle at `xi` moving at
/// `vi`, in lanes: `x_i − x_j`, `v_j − v_i` and `ρ_j`.
///
/// # Safety
/// Every index is in bounds of the fields.
#[inline(always)]
unsafe fn relative_fields<S: Real, IO: ParticleLanes<S>>(
    (xi, vi): (DVec3, DVec3),
    fields: &VelocityFields<'_>,
    index: &[u32; LANES],
) -> (Vec3<S>, Vec3<S>, S) {
    // SAFETY: the caller's promise.
    unsafe {
        (
            differences::<S, IO>(xi, fields.x, index),
            IO::gather(fields.v, index) - splat(vi),
            IO::gather_values(fields.density, index),
        )
    }
}

/// `v` in every lane.
#[inline(always)]
fn splat<S: Real>(v: DVec3) -> Vec3<S> {
    Vec3::new(S::splat(v.x), S::splat(v.y), S::splat(v.z))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::batch::SimdPath;
    use crate::constraints::lane_io::Scalar;

    /// A particle at the centre of neighbours on rays at distances around the kernel radius,
    /// some within a few ulps of it, one at the centre itself, and a list of every length
    /// modulo [`LANES`]; λ of each neighbour varied in sign.
    fn neighbourhood(h: f64) -> (Vec<DVec3>, Vec<f64>) {
        let centre = DVec3::new(0.3, 0.2, 0.1);
        let mut x = vec![centre, centre];
        for ray in 0..30 {
            let angle = f64::from(ray) * 0.7;
            let direction = DVec3::new(angle.cos(), angle.sin(), (0.3 * angle).sin()).normalize();
            let distance = match ray % 3 {
                0 => h * (1.0 + f64::from(ray % 7 - 3) * f64::EPSILON),
                1 => h * f64::from(ray) / 31.0,
                _ => h * 1.5,
            };
            x.push(centre + direction * distance);
        }
        let lambda = (0..x.len())
            .map(|j| (j as f64 * 0.37).sin() * 1e-3)
            .collect();
        (x, lambda)
    }

    fn block() -> FluidBlock {
        FluidBlock::new(0, 0..32, (0.05, 1000.0), (0.0, 0.0, 0.0), (1.0 / 480.0, 2))
    }

    /// Velocities, densities and vorticities of the neighbourhood, varied per particle.
    fn velocity_fields(x: &[DVec3]) -> (Vec<DVec3>, Vec<f64>, Vec<DVec3>) {
        let wave = |j: usize, k: f64| (j as f64 * k).sin();
        let v = (0..x.len())
            .map(|j| DVec3::new(wave(j, 0.9), wave(j, 1.3), wave(j, 0.4)))
            .collect();
        let density = (0..x.len()).map(|j| 1000.0 + 50.0 * wave(j, 0.7)).collect();
        let omega = (0..x.len())
            .map(|j| DVec3::new(wave(j, 2.1), wave(j, 0.2), wave(j, 1.7)) * 3.0)
            .collect();
        (v, density, omega)
    }

    /// Every SIMD path's sums are the one-at-a-time sums bit for bit, for lists of every
    /// length from 0 to 31 (short last chunks included).
    #[test]
    fn every_path_sums_as_one_at_a_time() {
        let block = block();
        let kernel = &block.kernel;
        let (x, lambda) = neighbourhood(kernel.h);
        let (v, density, omega) = velocity_fields(&x);
        let fields = VelocityFields {
            x: &x,
            v: &v,
            density: &density,
        };
        let at = (x[0], -2e-3, 0.7);
        let bits = |v: DVec3| v.to_array().map(f64::to_bits);
        for length in 0..x.len() {
            let near: Vec<u32> = (1..=length as u32).collect();
            let (own, others) = gradient_sums_with::<f64, Scalar>(kernel, x[0], &near, &x);
            let step = correction_sum_with::<f64, Scalar>(&block, at, &near, &x, &lambda);
            let curl = curl_sum_with::<f64, Scalar>(&block, 0, &near, &fields);
            let (mean, eta) =
                velocity_sums_with::<f64, Scalar>(&block, 0, &near, &fields, Some(&omega));
            let plain = velocity_sums_with::<f64, Scalar>(&block, 0, &near, &fields, None);
            for path in SimdPath::available() {
                let (lane_own, lane_others) = gradient_sums_on(path, kernel, x[0], &near, &x);
                assert_eq!(bits(lane_own), bits(own), "{path:?}, {length} neighbours");
                assert_eq!(
                    lane_others.to_bits(),
                    others.to_bits(),
                    "{path:?}, {length}"
                );
                let lane_step = correction_sum_on(path, &block, at, &near, &x, &lambda);
                assert_eq!(bits(lane_step), bits(step), "{path:?}, {length}");
                let lane_curl = curl_sum_on(path, &block, 0, &near, &fields);
                assert_eq!(bits(lane_curl), bits(curl), "{path:?}, {length}");
                let (lane_mean, lane_eta) =
                    velocity_sums_on(path, &block, 0, &near, &fields, Some(&omega));
                assert_eq!(bits(lane_mean), bits(mean), "{path:?}, {length}");
                assert_eq!(bits(lane_eta), bits(eta), "{path:?}, {length}");
                let lane_plain = velocity_sums_on(path, &block, 0, &near, &fields, None);
                assert_eq!(bits(lane_plain.0), bits(plain.0), "{path:?}, {length}");
                assert_eq!(lane_plain.1, DVec3::ZERO);
            }
        }
    }

    /// The sums in `f64` are the physics of [`super`] written out term by term with the
    /// kernels in `f64` (the artificial pressure's fourth power as `powi`, each sum in list
    /// order): what the lanes are held to above.
    #[test]
    fn the_one_at_a_time_sums_are_the_kernels_formulas() {
        let block = block();
        let kernel = &block.kernel;
        let (x, lambda) = neighbourhood(kernel.h);
        let (v, density, omega) = velocity_fields(&x);
        let near: Vec<u32> = (1..x.len() as u32).collect();
        let (xi, lambda_i, unit) = (x[0], -2e-3, 0.7);
        let (mut own, mut others, mut step) = (DVec3::ZERO, 0.0, DVec3::ZERO);
        let (mut curl, mut mean, mut eta) = (DVec3::ZERO, DVec3::ZERO, DVec3::ZERO);
        for &j in &near {
            let j = j as usize;
            let d = xi - x[j];
            let g = kernel.grad(d);
            own += g;
            others += g.length_squared();
            let ratio = kernel.w(d.length_squared()) / block.pressure_reference;
            let s_corr = -ratio.powi(4) * unit;
            step += g * (lambda_i + lambda[j] + s_corr);
            curl += g.cross(v[j] - v[0]) * (block.mass / density[j]);
            let weight = block.mass / density[j] * block.calibration;
            mean += (v[j] - v[0]) * (weight * kernel.w(d.length_squared()));
            eta += g * (weight * (omega[j].length() - omega[0].length()));
        }
        for sum in [own, step, curl, mean, eta] {
            assert!(sum.length() > 0.0, "{sum}");
        }
        let sums = gradient_sums_with::<f64, Scalar>(kernel, xi, &near, &x);
        assert_eq!(sums, (own, others));
        let at = (xi, lambda_i, unit);
        assert_eq!(
            correction_sum_with::<f64, Scalar>(&block, at, &near, &x, &lambda),
            step
        );
        let fields = VelocityFields {
            x: &x,
            v: &v,
            density: &density,
        };
        assert_eq!(
            curl_sum_with::<f64, Scalar>(&block, 0, &near, &fields),
            curl
        );
        assert_eq!(
            velocity_sums_with::<f64, Scalar>(&block, 0, &near, &fields, Some(&omega)),
            (mean, eta)
        );
    }

    #[test]
    #[should_panic(expected = "neighbour 5 of 5")]
    fn a_neighbour_out_of_bounds_panics() {
        let kernel = Kernel::new(0.1);
        gradient_sums_with::<f64, Scalar>(&kernel, DVec3::ZERO, &[0, 5], &[DVec3::ZERO; 5]);
    }
}
