//! Density constraints: position-based fluids (Macklin & Müller 2013, "Position Based
//! Fluids"; the density family of the FleX seed, ../shared/seeds). PHYSICS.md's notation, with
//! masses kept so fluids couple to cloth and soft bodies of other masses.
//!
//! **Density.** The SPH estimate with the poly6 kernel of radius `h = 2 s` (`s` the rest
//! spacing, about 30 neighbours):
//! `ρ_i = κ m Σ_j W(|x_i − x_j|)`, `W(r) = 315/(64 π h⁹) (h² − r²)³` for `r < h`, the sum
//! over the particle itself and its neighbours. `κ` calibrates the estimate so a particle
//! inside the rest lattice reads the rest density exactly (`κ = ρ0 / (m Σ_lattice W)`, 1.06
//! at `h = 2 s`): without it a block would expand or shrink by the kernel's discretisation
//! error before it settled, and a column would not stand at its volume over its area.
//!
//! **Constraint.** `C_i = ρ_i/ρ0 − 1` per particle. It is unilateral, as in FleX: where
//! `C_i < 0` (a free surface, where half the kernel is air) it is scaled by `cohesion`
//! (0: no pull; 1: the paper's bilateral constraint, which pulls the surface together).
//! Its gradient uses the spiky kernel (no vanishing gradient near `r = 0`):
//! `∇W(r) = −45/(π h⁶) (h − r)² r̂`, `∇_{x_i} C_i = (κ m/ρ0) Σ_j ∇W(x_i − x_j)`,
//! `∇_{x_j} C_i = −(κ m/ρ0) ∇W(x_i − x_j)`.
//!
//! **Projection** (one Jacobi pass per iteration, every particle at once):
//! `λ_i = −C_i / (Σ_k w_k |∇_k C_i|² + ε)`,
//! `Δx_i = ω w_i (κ m/ρ0) Σ_j (λ_i + λ_j + s_corr) ∇W(x_i − x_j)`,
//! with `w = 1/m` and `ω = ½`. Each `λ` is computed as if its constraint were alone, and about
//! 30 overlapping constraints move every particle at once, so the full Jacobi step (`ω = 1`)
//! overshoots: measured, a collapsing column gained 3 % of its energy in two frames and a dam
//! break 1.8 %. With `ω = 0.7` the gains were 0.8 % and 0.6 %; with `ω = ½`, 0.2 % and none
//! (never above the first frame), and the settled column stands within 1 % of its height. The relaxation `ε` is [`RELAXATION`] times `D0`, the denominator of a
//! particle inside the rest lattice, so it does not depend on the units. The artificial
//! pressure against clumping at the surface is the paper's
//! `s_corr = −k (W(r)/W(Δq))ⁿ` with `n = 4`, `Δq = 0.2 h`, in units of `1/D0` (the paper's
//! unit masses and densities made `k` unit-free; this keeps it so). It also keeps the
//! unilateral solve calm: without it a settled column kept jittering at 0.1–0.2 m/s. It is a
//! push applied in every iteration, so its effect over a second grows with the substeps and
//! iterations (a column at the paper's `k = 0.1` stood 4 % over its height at 20 substeps × 2
//! iterations, 15 % at 40); it is taken as an acceleration instead:
//! `k = 0.1 · (Δt/Δt₀)² · 2/iterations`, `Δt` the substep and `Δt₀ = 1/480 s` (24 fps × 20
//! substeps, the paper's `k` there): 2–4 % over the height and calm at 20 and 40 substeps.
//!
//! **Walls.** A particle near a collider misses the fluid the solid stands in for, reads
//! under-dense and is squeezed against the wall (a column's bottom layer stood 56 % over its
//! rest density). The solid beyond each collider's surface (offset by its `thickness`) counts
//! as fluid at rest: `ρ_wall = ρ0 F(d)`, with `d` the particle's distance to that surface and
//! `F(d) = ∫_{z>d} W dV` the share of the kernel beyond a plane at distance `d` (closed form
//! for poly6: `F(d) = (π c/4) ∫_d^h (h² − z²)⁴ dz`, `c = 315/(64 π h⁹)`, `F(0) = ½`), taken
//! locally planar, scaled so the rest lattice half a spacing from a wall reads `ρ0` exactly
//! (the continuous `F` and the lattice's sum differ by a few %). It adds `−A(d) n` to
//! `∇_{x_i} C_i` (`A = −F'`, `n` the outward normal); the wall does not move. Only the nearest
//! wall counts: summing two walls at a corner counts the solid beyond both twice, and the
//! over-dense corner pushed the water of a dam break up (its energy rose 6 % in the first
//! frame); with the nearest alone a corner particle reads a little under-dense, which the
//! unilateral constraint leaves alone.
//!
//! **Velocities**, after each substep's velocity update: XSPH viscosity
//! `v_i ← v_i + c Σ_j (m/ρ_j)(v_j − v_i) κ W_ij` (`c = viscosity`, 0 to 1: the SPH mean of
//! the neighbours' velocity relative to the particle's, taken by that share), and vorticity
//! confinement: `ω_i = Σ_j (m/ρ_j) κ∇W_ij × (v_j − v_i)` (the SPH curl),
//! `η_i = Σ_j (m/ρ_j)(|ω_j| − |ω_i|) κ∇W_ij`, `N = η/|η|`, and the acceleration
//! `a_i = ε_v h |ω_i| (N × ω_i)` with `ε_v = vorticity` (dimensionless: `h |ω|²` is an
//! acceleration).

use crate::constraints::lanes::{Real, Vec3};
use glam::DVec3;
use std::f64::consts::PI;
use std::ops::Range;

mod sums;

/// Kernel radius over rest spacing.
pub const KERNEL_RADII: f64 = 2.0;
/// `ε` over the rest denominator `D0`.
pub const RELAXATION: f64 = 0.01;
/// `ω`, the share of the Jacobi step taken (see the module docs).
pub const JACOBI_RELAXATION: f64 = 0.5;
/// Artificial pressure: `k` at a substep of [`PRESSURE_SUBSTEP`] s and 2 iterations, and
/// `Δq / h` (Macklin & Müller 2013, §4); `n = 4` is written into [`sums`] as a square
/// squared.
const PRESSURE_K: f64 = 0.1;
const PRESSURE_SUBSTEP: f64 = 1.0 / 480.0;
const PRESSURE_DQ: f64 = 0.2;

/// The SPH kernels of radius `h`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kernel {
    pub h: f64,
    h2: f64,
    poly6: f64,
    spiky: f64,
}

impl Kernel {
    pub fn new(h: f64) -> Kernel {
        Kernel {
            h,
            h2: h * h,
            poly6: 315.0 / (64.0 * PI * h.powi(9)),
            spiky: -45.0 / (PI * h.powi(6)),
        }
    }

    /// `W(r)` from `r²` (poly6), 1/m³, of one distance or several side by side
    /// ([`crate::constraints::lanes`]; "zero beyond `h`" is a select).
    #[inline(always)]
    pub fn w<S: Real>(&self, r2: S) -> S {
        let h2 = S::splat(self.h2);
        let d = h2 - r2;
        S::select(h2.le(r2), S::splat(0.0), S::splat(self.poly6) * d * d * d)
    }

    /// `∇W(d)` of the spiky kernel at `d = x_i − x_j`, 1/m⁴ (zero at `d = 0` and beyond `h`).
    #[inline]
    pub fn grad(&self, d: DVec3) -> DVec3 {
        self.gradient(Vec3::from(d)).into()
    }

    /// [`Kernel::grad`] of one difference or several side by side.
    #[inline(always)]
    fn gradient<S: Real>(&self, d: Vec3<S>) -> Vec3<S> {
        let (h, zero) = (S::splat(self.h), S::splat(0.0));
        let r = d.length();
        let a = h - r;
        let scale = S::splat(self.spiky) * a * a / r;
        let outside = h.le(r) | r.le(zero);
        Vec3::new(
            S::select(outside, zero, d.x * scale),
            S::select(outside, zero, d.y * scale),
            S::select(outside, zero, d.z * scale),
        )
    }
}

/// What the colliders' solid adds to a particle's density and to its own constraint
/// gradient (`∇_{x_i} C_i`, 1/m).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Wall {
    pub density: f64,
    pub gradient: DVec3,
}

/// A fluid object as the solver sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidBlock {
    /// The object it is, and its particles.
    pub object: usize,
    pub particles: Range<usize>,
    /// Rest density ρ0, kg/m³; mass of every particle, kg.
    pub rest_density: f64,
    pub mass: f64,
    pub kernel: Kernel,
    /// κ: the calibration of the density estimate.
    pub calibration: f64,
    /// `D0`, the rest denominator, 1/(kg m²).
    pub rest_denominator: f64,
    /// The wall term's calibration: what the rest lattice misses half a spacing from a wall
    /// over `ρ0 F(s/2)`.
    wall_scale: f64,
    /// `W(Δq)`, the artificial pressure's reference, and its `k` at this substep.
    pressure_reference: f64,
    pressure_k: f64,
    pub viscosity: f64,
    pub vorticity: f64,
    pub cohesion: f64,
}

impl FluidBlock {
    /// The block of `particles` at rest `spacing` and `rest_density`, with its coefficients,
    /// solved with substeps of `substep` seconds and `iterations` iterations.
    pub fn new(
        object: usize,
        particles: Range<usize>,
        (spacing, rest_density): (f64, f64),
        (viscosity, vorticity, cohesion): (f64, f64, f64),
        (substep, iterations): (f64, usize),
    ) -> FluidBlock {
        let mass = rest_density * spacing.powi(3);
        let kernel = Kernel::new(KERNEL_RADII * spacing);
        // The rest lattice's neighbourhood: every offset within the kernel radius.
        let reach = KERNEL_RADII.ceil() as i32;
        let mut w_sum = 0.0;
        let mut w_below = 0.0;
        let mut grads = Vec::new();
        for k in -reach..=reach {
            for j in -reach..=reach {
                for i in -reach..=reach {
                    let d = DVec3::new(i as f64, j as f64, k as f64) * spacing;
                    w_sum += kernel.w(d.length_squared());
                    if j < 0 {
                        w_below += kernel.w(d.length_squared());
                    }
                    grads.push(kernel.grad(d));
                }
            }
        }
        let calibration = rest_density / (mass * w_sum);
        let scale = calibration * mass / rest_density;
        let rest_denominator =
            scale * scale / mass * grads.iter().map(|g| g.length_squared()).sum::<f64>();
        let dq = PRESSURE_DQ * kernel.h;
        let mut block = FluidBlock {
            object,
            particles,
            rest_density,
            mass,
            pressure_reference: kernel.w(dq * dq),
            pressure_k: PRESSURE_K * (substep / PRESSURE_SUBSTEP).powi(2) * 2.0
                / iterations.max(1) as f64,
            kernel,
            calibration,
            rest_denominator,
            viscosity,
            vorticity,
            cohesion,
            wall_scale: 1.0,
        };
        let missing = calibration * mass * w_below;
        block.wall_scale = missing / (rest_density * block.beyond(0.5 * spacing));
        block
    }

    /// `ρ_i` of the particle at `xi` with `neighbours` (itself not among them), kg/m³,
    /// without the walls.
    /// One neighbour at a time: in lanes, this sum without a square root or a division took
    /// more instructions than it saved ([`sums`]).
    pub fn density(&self, xi: DVec3, neighbours: &[u32], x: &[DVec3]) -> f64 {
        let sum: f64 = (neighbours.iter())
            .map(|&j| self.kernel.w((xi - x[j as usize]).length_squared()))
            .sum();
        self.calibration * self.mass * (self.kernel.w(0.0) + sum)
    }

    /// `F(d)`: the share of the kernel's volume beyond a plane at signed distance `d`.
    pub fn beyond(&self, d: f64) -> f64 {
        let h = self.kernel.h;
        if d >= h {
            return 0.0;
        }
        if d <= -h {
            return 1.0;
        }
        if d < 0.0 {
            return 1.0 - self.beyond(-d);
        }
        // ∫ (h² − z²)⁴ dz = h⁸z − 4h⁶z³/3 + 6h⁴z⁵/5 − 4h²z⁷/7 + z⁹/9.
        let primitive = |z: f64| {
            let (z2, h2) = (z * z, h * h);
            z * (h2.powi(4) - 4.0 * h2.powi(3) * z2 / 3.0 + 6.0 * h2 * h2 * z2 * z2 / 5.0
                - 4.0 * h2 * z2.powi(3) / 7.0
                + z2.powi(4) / 9.0)
        };
        PI * self.kernel.poly6 / 4.0 * (primitive(h) - primitive(d))
    }

    /// `A(d) = −F'(d)`: the kernel's mass in the plane at distance `d`, 1/m.
    fn slice(&self, d: f64) -> f64 {
        let h2 = self.kernel.h2;
        let d2 = d * d;
        if d2 >= h2 {
            return 0.0;
        }
        PI * self.kernel.poly6 / 4.0 * (h2 - d2).powi(4)
    }

    /// The wall term of a particle at signed distances `d` (beyond the walls' thickness)
    /// with outward normals `n` from the colliders within the kernel radius.
    pub fn wall(&self, walls: impl IntoIterator<Item = (f64, DVec3)>) -> Wall {
        let nearest =
            walls
                .into_iter()
                .fold(None, |near: Option<(f64, DVec3)>, (d, n)| match near {
                    Some((best, _)) if best <= d => near,
                    _ => Some((d, n)),
                });
        nearest.map_or(Wall::default(), |(d, n)| Wall {
            density: self.wall_scale * self.rest_density * self.beyond(d),
            gradient: -n * (self.wall_scale * self.slice(d)),
        })
    }

    /// `C_i` from the density: unilateral, under-density weighted by `cohesion`.
    pub fn constraint(&self, density: f64) -> f64 {
        let c = density / self.rest_density - 1.0;
        if c < 0.0 {
            c * self.cohesion
        } else {
            c
        }
    }

    /// `λ_i` of the particle at `xi` with density `density` (walls included) and wall
    /// gradient `wall_gradient`.
    ///
    /// # Panics
    /// If a neighbour is out of bounds of `x`.
    pub fn lambda(
        &self,
        (xi, density, wall_gradient): (DVec3, f64, DVec3),
        neighbours: &[u32],
        x: &[DVec3],
    ) -> f64 {
        let c = self.constraint(density);
        if c == 0.0 {
            return 0.0;
        }
        let scale = self.calibration * self.mass / self.rest_density;
        let (own, others) = sums::gradient_sums(&self.kernel, xi, neighbours, x);
        let own = own * scale + wall_gradient;
        let denominator = (own.length_squared() + scale * scale * others) / self.mass;
        -c / (denominator + RELAXATION * self.rest_denominator)
    }

    /// `Δx_i` of the particle at `xi` with multiplier `lambda_i` and wall gradient
    /// `wall_gradient` (`lambda` holds every particle's, by particle index).
    ///
    /// # Panics
    /// If a neighbour is out of bounds of `x` or `lambda`.
    pub fn correction(
        &self,
        (xi, lambda_i, wall_gradient): (DVec3, f64, DVec3),
        neighbours: &[u32],
        x: &[DVec3],
        lambda: &[f64],
    ) -> DVec3 {
        let pressure_unit = self.pressure_k / self.rest_denominator;
        let at = (xi, lambda_i, pressure_unit);
        let sum = sums::correction_sum(self, at, neighbours, x, lambda);
        let step =
            sum * (self.calibration / self.rest_density) + wall_gradient * (lambda_i / self.mass);
        step * JACOBI_RELAXATION
    }

    /// `ω_i`, the SPH curl of the velocity at particle `i`, 1/s.
    pub fn vorticity_at(&self, i: usize, neighbours: &[u32], fields: &VelocityFields) -> DVec3 {
        sums::curl_sum(self, i, neighbours, fields) * self.calibration
    }

    /// Particle `i`'s velocity after XSPH viscosity and, when `omega` is given (every
    /// particle's `ω`), vorticity confinement over time `dt`.
    pub fn smoothed_velocity(
        &self,
        i: usize,
        neighbours: &[u32],
        fields: &VelocityFields,
        omega: Option<&[DVec3]>,
        dt: f64,
    ) -> DVec3 {
        let (mean, eta) = sums::velocity_sums(self, i, neighbours, fields, omega);
        let mut v = fields.v[i] + mean * self.viscosity;
        if let Some(omega) = omega {
            let w = omega[i];
            if eta.length_squared() > 0.0 && w.length_squared() > 0.0 {
                let n = eta.normalize();
                v += n.cross(w) * (self.vorticity * self.kernel.h * w.length() * dt);
            }
        }
        v
    }

    /// The density error of a particle, `|ρ/ρ0 − 1|` where it is compressed, 0 where it is
    /// under-dense (a free surface reads low because half its kernel is air, which is not an
    /// error of the solve).
    pub fn density_error(&self, density: f64) -> f64 {
        (density / self.rest_density - 1.0).max(0.0)
    }
}

/// Per-particle fields the velocity pass reads (indexed by particle).
pub struct VelocityFields<'a> {
    pub x: &'a [DVec3],
    pub v: &'a [DVec3],
    pub density: &'a [f64],
}

impl VelocityFields<'_> {
    /// The particles every field holds.
    fn len(&self) -> usize {
        self.x.len().min(self.v.len()).min(self.density.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lattice of `n³` particles of spacing `s`, and every particle's neighbours within
    /// `h` by brute force (ascending).
    fn lattice(n: usize, s: f64, h: f64) -> (Vec<DVec3>, Vec<Vec<u32>>) {
        let mut x = Vec::new();
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    x.push(DVec3::new(i as f64, j as f64, k as f64) * s);
                }
            }
        }
        let neighbours = (0..x.len())
            .map(|i| {
                (0..x.len() as u32)
                    .filter(|&j| j as usize != i && x[i].distance(x[j as usize]) < h)
                    .collect()
            })
            .collect();
        (x, neighbours)
    }

    #[test]
    fn kernels_integrate_to_one_and_their_gradient_matches_finite_differences() {
        let kernel = Kernel::new(0.2);
        // ∫ W dV over the ball, by the radial integral 4π ∫ W(r) r² dr (midpoint rule).
        let steps = 20_000;
        let dr = kernel.h / steps as f64;
        let integral: f64 = (0..steps)
            .map(|k| {
                let r = (k as f64 + 0.5) * dr;
                4.0 * PI * r * r * kernel.w(r * r) * dr
            })
            .sum();
        assert!((integral - 1.0).abs() < 1e-6, "∫W = {integral}");
        // The spiky gradient against central differences of the spiky kernel itself,
        // W_spiky(r) = 15/(π h⁶)(h − r)³.
        let spiky = |d: DVec3| {
            let r = d.length();
            15.0 / (PI * kernel.h.powi(6)) * (kernel.h - r).max(0.0).powi(3)
        };
        let d = DVec3::new(0.03, -0.05, 0.07);
        let e = 1e-7;
        let numeric = DVec3::new(
            spiky(d + DVec3::X * e) - spiky(d - DVec3::X * e),
            spiky(d + DVec3::Y * e) - spiky(d - DVec3::Y * e),
            spiky(d + DVec3::Z * e) - spiky(d - DVec3::Z * e),
        ) / (2.0 * e);
        assert!((kernel.grad(d) - numeric).length() < 1e-6 * numeric.length());
    }

    #[test]
    fn the_rest_lattice_reads_the_rest_density_inside_and_is_not_pushed() {
        let s = 0.05;
        let block = FluidBlock::new(0, 0..343, (s, 1000.0), (0.0, 0.0, 0.0), (1.0 / 480.0, 2));
        let (x, neighbours) = lattice(7, s, block.kernel.h);
        let centre = 3 + 3 * 7 + 3 * 49;
        let rho = block.density(x[centre], &neighbours[centre], &x);
        assert!((rho / 1000.0 - 1.0).abs() < 1e-12, "ρ = {rho}");
        assert_eq!(
            block.lambda((x[centre], rho, DVec3::ZERO), &neighbours[centre], &x),
            0.0
        );
        // A corner particle is under-dense (about 1/8 of its kernel filled, plus itself),
        // and with no cohesion not pulled.
        let corner = block.density(x[0], &neighbours[0], &x);
        assert!(corner < 0.7 * 1000.0, "{corner}");
        assert_eq!(block.constraint(corner), 0.0);
    }

    #[test]
    fn a_compressed_lattice_is_pushed_apart_along_the_density_gradient() {
        // The lattice at 0.9 of its rest spacing: every particle over-dense; one Jacobi
        // pass moves a face particle outward and leaves the centre where it is (symmetry).
        let s = 0.05;
        let block = FluidBlock::new(0, 0..343, (s, 1000.0), (0.0, 0.0, 0.0), (1.0 / 480.0, 2));
        let (x, neighbours) = lattice(7, 0.9 * s, block.kernel.h);
        let density: Vec<f64> = (0..x.len())
            .map(|i| block.density(x[i], &neighbours[i], &x))
            .collect();
        let centre = 3 + 3 * 7 + 3 * 49;
        assert!(density[centre] > 1000.0 * 1.2);
        let lambda: Vec<f64> = (0..x.len())
            .map(|i| block.lambda((x[i], density[i], DVec3::ZERO), &neighbours[i], &x))
            .collect();
        assert!(lambda[centre] < 0.0);
        let dx = |i: usize| {
            block.correction((x[i], lambda[i], DVec3::ZERO), &neighbours[i], &x, &lambda)
        };
        assert!(dx(centre).length() < 1e-12 * s);
        let face = 3 * 7 + 3 * 49; // x = 0, the middle of the −x face
        assert!(dx(face).x < -1e-4 * s, "pushed outward: {}", dx(face));
        assert!(dx(face).y.abs() < 1e-12 && dx(face).z.abs() < 1e-12);
    }

    #[test]
    fn a_wall_stands_in_for_the_missing_half_of_the_kernel() {
        let block = FluidBlock::new(0, 0..1, (0.05, 1000.0), (0.0, 0.0, 0.0), (1.0 / 480.0, 2));
        let h = block.kernel.h;
        assert!((block.beyond(0.0) - 0.5).abs() < 1e-12);
        assert_eq!(block.beyond(h), 0.0);
        assert_eq!(block.beyond(-h), 1.0);
        assert!((block.beyond(0.3 * h) + block.beyond(-0.3 * h) - 1.0).abs() < 1e-12);
        // F' = −A, by central differences.
        let (d, e) = (0.37 * h, 1e-7);
        let numeric = (block.beyond(d + e) - block.beyond(d - e)) / (2.0 * e);
        assert!((numeric + block.slice(d)).abs() < 1e-6 * block.slice(d));
        // The lattice's bottom layer (half a spacing above the wall) with the wall reads
        // within a few % of the rest density; without it, about two thirds.
        let s = 0.05;
        let (x, neighbours) = lattice(7, s, h);
        let bottom = 3 + 3 * 49; // y = 0 layer, middle
        let alone = block.density(x[bottom], &neighbours[bottom], &x);
        // The lattice is 7 high; count only the layers above, as a wall below would.
        let wall = block.wall([(0.5 * s, DVec3::Y)]);
        assert!(alone < 0.85 * 1000.0, "{alone}");
        let with_wall = alone + wall.density;
        assert!((with_wall / 1000.0 - 1.0).abs() < 1e-12, "{with_wall}");
        // Two walls: the nearest counts.
        let two = block.wall([(0.6 * s, DVec3::X), (0.5 * s, DVec3::Y)]);
        assert_eq!(two, wall);
        assert!(wall.gradient.y < 0.0 && wall.gradient.x == 0.0);
    }

    #[test]
    fn the_constraint_gradient_is_the_derivative_of_the_density() {
        // ∂ρ_i/∂x_j by central differences of the poly6 density against the spiky gradient
        // is not an identity (the kernels differ); the sign and direction must agree.
        let s = 0.05;
        let block = FluidBlock::new(0, 0..27, (s, 1000.0), (0.0, 0.0, 0.0), (1.0 / 480.0, 2));
        let (mut x, neighbours) = lattice(3, 0.8 * s, block.kernel.h);
        let (i, j) = (13, 14);
        let e = 1e-7;
        x[j].x += e;
        let plus = block.density(x[i], &neighbours[i], &x);
        x[j].x -= 2.0 * e;
        let minus = block.density(x[i], &neighbours[i], &x);
        x[j].x += e;
        let numeric = (plus - minus) / (2.0 * e);
        let spiky = -block.kernel.grad(x[i] - x[j]).x;
        assert!(numeric < 0.0 && spiky < 0.0, "{numeric} {spiky}");
    }

    #[test]
    fn viscosity_one_takes_the_neighbours_mean_and_uniform_motion_is_untouched() {
        let s = 0.05;
        let block = FluidBlock::new(0, 0..343, (s, 1000.0), (1.0, 0.0, 0.0), (1.0 / 480.0, 2));
        let (x, neighbours) = lattice(7, s, block.kernel.h);
        let density: Vec<f64> = (0..x.len())
            .map(|i| block.density(x[i], &neighbours[i], &x))
            .collect();
        let v = vec![DVec3::new(0.3, -1.0, 2.0); x.len()];
        let fields = VelocityFields {
            x: &x,
            v: &v,
            density: &density,
        };
        let centre = 3 + 3 * 7 + 3 * 49;
        let omega: Vec<DVec3> = (0..x.len())
            .map(|i| block.vorticity_at(i, &neighbours[i], &fields))
            .collect();
        assert!(omega[centre].length() < 1e-9);
        let smoothed = block.smoothed_velocity(centre, &neighbours[centre], &fields, None, 1e-3);
        assert!((smoothed - v[centre]).length() < 1e-12);
        // A rigid rotation about z has vorticity 2Ω along z.
        let spin = 3.0;
        let v: Vec<DVec3> = x
            .iter()
            .map(|p| DVec3::Z.cross(*p - x[centre]) * spin)
            .collect();
        let fields = VelocityFields {
            x: &x,
            v: &v,
            density: &density,
        };
        // The SPH curl on the lattice at h = 2 s is exact in direction; its magnitude carries
        // the discretisation error of the spiky gradient there (0.947 of 2Ω).
        let w = block.vorticity_at(centre, &neighbours[centre], &fields);
        assert!(w.x.abs() < 1e-9 && w.y.abs() < 1e-9, "ω = {w}");
        assert!((w.z / (2.0 * spin) - 0.947).abs() < 0.005, "ω = {w}");
    }
}
