//! A fluid's surface mesh, reconstructed from its particles every frame (`fluid.surface`,
//! written as `<object>_surface`; docs/output-format.md).
//!
//! The reconstruction is `splashsurf_lib`'s (Löschner et al., "Weighted Laplacian smoothing for
//! surface reconstruction of particle-based fluids", VMV 2023; the library behind the
//! `splashsurf` tool), made for SPH particle data:
//!
//! 1. Every particle stands for a cube of the fluid's `spacing` s: splashsurf's particle radius
//!    is `s/2` (its particle volume is `(2r)³ = s³`), so its per-particle density
//!    `ρ_i = Σ_j m W(|x_i − x_j|, h)` (cubic spline, compact support `h = 2s`, the reach of the
//!    solver's own kernels) is the fluid's density in units of the rest density.
//! 2. The density field `ρ(x) = Σ_j m_j/ρ_j · ρ0 · W(|x − x_j|, h)` is sampled on a sparse
//!    marching-cubes grid of cube size `s / resolution`, only near particles.
//! 3. Marching cubes extracts the iso-surface `ρ(x) = 0.6 ρ0` (splashsurf's default threshold):
//!    a closed triangle mesh with counter-clockwise (outward) triangles.
//!
//! Surface vertices get the particles' velocities by SPH interpolation with first-order
//! (Shepard) correction, `v(x) = Σ_j V_j v_j W_j / Σ_j V_j W_j`, so renderers blur the surface
//! with the water's motion, not with how the mesh is re-extracted from frame to frame
//! ([`velocities_at`]: splashsurf's sum, over the solver's own neighbour search).
//!
//! Threads and determinism: the library runs on the calling thread pool with its uniform-grid
//! spatial decomposition always on (subdomains of [`SUBDOMAIN_CUBES`]³ cubes). That path is the
//! same bytes on any number of threads: each subdomain sorts its particles by index, owns the
//! densities of the particles inside it, and the patches are stitched in subdomain order
//! (measured: 1, 2, 4 threads and single-threaded give one mesh once rounded to the `f32` the
//! caches store, [`in_canonical_order`]). Its global path
//! (no decomposition) is not: multithreaded it sums and numbers in a thread-dependent order.
//! The velocity interpolation is parallel but per vertex, each vertex's sum over its
//! particles in ascending order.

use crate::collision::neighbours::NeighbourLists;
use crate::collision::spatial_hash::SpatialHash;
use crate::model::ObjectLayout;
use anyhow::{anyhow, bail, Context, Result};
use glam::DVec3;
use rayon::prelude::*;
use splashsurf_lib::nalgebra::Vector3;
use splashsurf_lib::{GridDecompositionParameters, Parameters, SpatialDecomposition};

/// Splashsurf's iso-surface threshold: the surface is where the interpolated density is this
/// share of the rest density.
const ISO_THRESHOLD: f64 = 0.6;

/// Compact support of splashsurf's kernel, in particle spacings (the solver's kernels reach as
/// far: [`crate::constraints::density`]).
const SUPPORT_SPACINGS: f64 = 2.0;

/// Marching-cubes cubes along each side of a subdomain (splashsurf's default).
const SUBDOMAIN_CUBES: u32 = 64;

/// The range `resolution` (marching-cubes cells per particle spacing) may take: below ½ the
/// cubes are wider than two particles and the surface loses whole droplets; above 16 a cube is
/// a sixteenth of a spacing and the mesh grows as resolution² with nothing more to show.
pub const RESOLUTIONS: std::ops::RangeInclusive<f64> = 0.5..=16.0;

/// How to reconstruct one fluid object's surface.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reconstruction {
    /// The fluid's rest spacing, m.
    pub spacing: f64,
    /// Marching-cubes cells per spacing.
    pub resolution: f64,
}

/// One frame's surface of one fluid object: a closed triangle mesh, outward.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FluidSurfaceMesh {
    /// The object it is the surface of.
    pub object: usize,
    pub positions: Vec<DVec3>,
    /// Per vertex, the particles' velocity there.
    pub velocities: Vec<DVec3>,
    /// Counter-clockwise seen from outside.
    pub triangles: Vec<[u32; 3]>,
}

impl Reconstruction {
    /// The surface of the particles at `x` moving at `v` (one object's, all finite).
    pub fn reconstruct(&self, object: usize, x: &[DVec3], v: &[DVec3]) -> Result<FluidSurfaceMesh> {
        let mut mesh = FluidSurfaceMesh {
            object,
            ..Default::default()
        };
        if x.is_empty() {
            return Ok(mesh);
        }
        if let Some(p) = x.iter().find(|p| !p.is_finite()) {
            bail!("a particle is at {p}, not a finite position");
        }
        let particles: Vec<Vector3<f64>> = x.iter().map(|p| Vector3::new(p.x, p.y, p.z)).collect();
        let parameters = self.parameters();
        let reconstruction =
            splashsurf_lib::reconstruct_surface::<i64, f64>(&particles, &parameters)
                .map_err(|e| anyhow!("surface reconstruction failed: {e}"))?;
        let surface = &reconstruction.mesh;
        let (positions, triangles) = in_canonical_order(&surface.vertices, &surface.triangles);
        mesh.positions = positions;
        mesh.triangles = triangles;
        let densities = reconstruction
            .particle_densities
            .as_ref()
            .filter(|d| d.len() == particles.len())
            .ok_or_else(|| anyhow!("surface reconstruction returned no particle densities"))?;
        let mass = parameters.rest_density * self.spacing.powi(3);
        let volumes: Vec<f64> = densities.iter().map(|&rho| mass / rho).collect();
        let support = parameters.compact_support_radius;
        mesh.velocities = velocities_at(&mesh.positions, x, v, &volumes, support);
        Ok(mesh)
    }

    fn parameters(&self) -> Parameters<f64> {
        let s = self.spacing;
        let mut parameters = Parameters::new(0.5 * s, SUPPORT_SPACINGS * s, s / self.resolution);
        parameters.iso_surface_threshold = ISO_THRESHOLD;
        parameters.enable_multi_threading = true;
        parameters.enable_simd = false;
        parameters.spatial_decomposition =
            SpatialDecomposition::UniformGrid(GridDecompositionParameters {
                subdomain_num_cubes_per_dim: SUBDOMAIN_CUBES,
                auto_disable: false,
            });
        parameters
    }
}

/// Surface vertices whose velocities one task interpolates ([`velocities_at`]).
const VERTEX_CHUNK: usize = 1024;

/// The particles' velocity at each of `points`: their SPH average with first-order (Shepard)
/// correction, `v(x) = Σ_j V_j v_j W_j / Σ_j V_j W_j`, `W_j = W(|x − x_j|, h)` over the
/// particles `x_j` closer than the compact support `h`, with volumes `V_j` (the mass over
/// splashsurf's density). `W` is splashsurf's cubic spline ([`cubic_spline`]); its
/// normalisation cancels in the ratio and is left out. A point with no particle within `h`
/// (or a non-finite sum) gets zero.
///
/// The particles within `h` come from the solver's own hash and neighbour lists
/// ([`NeighbourLists::build_for_points`]), ascending, so each sum runs in one order whatever
/// the threads. Splashsurf's `SphInterpolator` does the same sum through an R-tree query per
/// point, about 1.4 µs each: a third of the dam break's surface time (docs/benchmarks.md,
/// "Issue 13: fluid surface velocities from the solver's hash").
fn velocities_at(
    points: &[DVec3],
    x: &[DVec3],
    v: &[DVec3],
    volumes: &[f64],
    h: f64,
) -> Vec<DVec3> {
    let all: Vec<u32> = (0..x.len() as u32).collect();
    let hash = SpatialHash::build(x, &all, h);
    let mut velocities = vec![DVec3::ZERO; points.len()];
    let queries: Vec<u32> = (0..points.len() as u32).collect();
    (velocities.par_chunks_mut(VERTEX_CHUNK))
        .zip(queries.par_chunks(VERTEX_CHUNK))
        .for_each(|(out, queries)| {
            let mut lists = NeighbourLists::default();
            lists.build_for_points(queries, points, &hash, h);
            for (k, (out, &point)) in out.iter_mut().zip(queries).enumerate() {
                let at = points[point as usize];
                let (mut sum, mut weight) = (DVec3::ZERO, 0.0);
                for &j in lists.of(k) {
                    let j = j as usize;
                    let w = volumes[j] * cubic_spline(at.distance(x[j]), h);
                    sum += w * v[j];
                    weight += w;
                }
                let average = sum / weight;
                *out = if average.is_finite() {
                    average
                } else {
                    DVec3::ZERO
                };
            }
        });
    velocities
}

/// The cubic spline kernel of compact support `h` (Monaghan 1992; splashsurf's
/// `CubicSplineKernel`) at distance `r`, without its normalisation `8/(π h³)`:
/// with `q = 2r/h`, `1 − 3/2 q² + 3/4 q³` below 1, `(2 − q)³/4` from 1 to 2, zero beyond.
fn cubic_spline(r: f64, h: f64) -> f64 {
    let q = 2.0 * r / h;
    if q < 1.0 {
        1.0 - 1.5 * q * q + 0.75 * q * q * q
    } else if q < 2.0 {
        0.25 * (2.0 - q).powi(3)
    } else {
        0.0
    }
}

/// The mesh numbered by its geometry alone: vertices rounded to `f32` (what every cache
/// stores) in increasing `(x, y, z)`, each triangle starting at its lowest vertex (winding
/// kept), triangles in increasing order. Splashsurf stitches its subdomains' patches in an
/// order that depends on the threads (measured: the same vertices and triangles, 14 052 of
/// 85 170 vertices numbered differently between 1 and 2 threads), and a vertex on the border
/// of two subdomains comes from either, with different last bits (measured:
/// `scenes/water_on_cloth.toml`, frame 11, 96 of 41 716 vertices ordered differently between
/// 1 and 2 threads by `f64` coordinates equal in `f32`). Rounded and numbered this way, the
/// same surface is the same bytes; only two copies on either side of an `f32` rounding
/// boundary, about one in 2²⁹, would still differ.
fn in_canonical_order(
    vertices: &[Vector3<f64>],
    triangles: &[[usize; 3]],
) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let mut order: Vec<usize> = (0..vertices.len()).collect();
    let stored = |c: f64| f64::from(c as f32);
    let key = |k: usize| [vertices[k].x, vertices[k].y, vertices[k].z].map(stored);
    order.sort_by(|&a, &b| {
        let (a, b) = (key(a), key(b));
        (a[0].total_cmp(&b[0]))
            .then(a[1].total_cmp(&b[1]))
            .then(a[2].total_cmp(&b[2]))
    });
    let mut new_index = vec![0u32; vertices.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }
    let positions = order.iter().map(|&k| DVec3::from_array(key(k))).collect();
    let mut renumbered: Vec<[u32; 3]> = (triangles.iter())
        .map(|t| {
            let t = t.map(|k| new_index[k]);
            let first = (0..3).min_by_key(|&i| t[i]).unwrap_or(0);
            [t[first], t[(first + 1) % 3], t[(first + 2) % 3]]
        })
        .collect();
    renumbered.sort_unstable();
    (positions, renumbered)
}

/// The surface of every fluid object of `objects` that asks for one, in object order, from
/// the positions `x` and velocities `v` of all particles.
pub fn reconstruct_all(
    objects: &[ObjectLayout],
    x: &[DVec3],
    v: &[DVec3],
) -> Result<Vec<FluidSurfaceMesh>> {
    let with_surface = objects.iter().enumerate();
    let with_surface = with_surface.filter_map(|(k, o)| o.fluid_surface.map(|r| (k, o, r)));
    with_surface
        .map(|(k, object, reconstruction)| {
            let range = object.particles.clone();
            (reconstruction.reconstruct(k, &x[range.clone()], &v[range]))
                .with_context(|| format!("the surface of `{}`", object.name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `n`³ block of particles at spacing `s`, its corner at `origin`.
    fn block(n: usize, s: f64, origin: DVec3) -> Vec<DVec3> {
        let mut x = Vec::new();
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    x.push(origin + DVec3::new(i as f64, j as f64, k as f64) * s);
                }
            }
        }
        x
    }

    /// Closed and consistently wound: every directed edge once, and its reverse once.
    fn assert_closed(mesh: &FluidSurfaceMesh) {
        let mut edges = std::collections::BTreeMap::new();
        for t in &mesh.triangles {
            for e in 0..3 {
                *edges.entry((t[e], t[(e + 1) % 3])).or_insert(0) += 1;
            }
        }
        for (&(a, b), &count) in &edges {
            assert_eq!(count, 1, "edge {a}-{b} used twice in one direction");
            assert_eq!(edges.get(&(b, a)), Some(&1), "edge {a}-{b} is open");
        }
    }

    fn signed_volume(mesh: &FluidSurfaceMesh) -> f64 {
        let p = &mesh.positions;
        (mesh.triangles.iter())
            .map(|t| p[t[0] as usize].dot(p[t[1] as usize].cross(p[t[2] as usize])) / 6.0)
            .sum()
    }

    #[test]
    fn a_block_gets_a_closed_outward_surface_enclosing_its_volume() {
        let s = 0.02;
        let x = block(12, s, DVec3::new(0.3, -0.1, 0.05));
        let v = vec![DVec3::new(1.0, 0.0, -2.0); x.len()];
        let recon = Reconstruction {
            spacing: s,
            resolution: 2.0,
        };
        let mesh = recon.reconstruct(3, &x, &v).unwrap();
        assert_eq!(mesh.object, 3);
        assert!(mesh.triangles.len() > 1000);
        assert_closed(&mesh);
        // Outward and holding the block's volume (12 spacings a side) within a few %.
        let volume = signed_volume(&mesh);
        let expected = (12.0 * s).powi(3);
        assert!(
            (volume / expected - 1.0).abs() < 0.05,
            "{volume} vs {expected}"
        );
        // A uniform motion is carried to every vertex.
        for u in &mesh.velocities {
            assert!(u.distance(DVec3::new(1.0, 0.0, -2.0)) < 1e-9, "{u}");
        }
    }

    #[test]
    fn finer_resolution_gives_more_triangles_and_the_same_volume() {
        let s = 0.05;
        let x = block(8, s, DVec3::ZERO);
        let v = vec![DVec3::ZERO; x.len()];
        let coarse = Reconstruction {
            spacing: s,
            resolution: 1.0,
        };
        let fine = Reconstruction {
            spacing: s,
            resolution: 4.0,
        };
        let a = coarse.reconstruct(0, &x, &v).unwrap();
        let b = fine.reconstruct(0, &x, &v).unwrap();
        assert!(b.triangles.len() > 8 * a.triangles.len());
        let (va, vb) = (signed_volume(&a), signed_volume(&b));
        assert!((va / vb - 1.0).abs() < 0.05, "{va} vs {vb}");
    }

    /// Two copies of one mesh, numbered differently, whose border vertices came from
    /// different subdomains (the same point but for the last bit, as splashsurf gives on 1
    /// and 2 threads), come out as the same vertices and triangles.
    #[test]
    fn copies_of_a_vertex_that_differ_in_the_last_bits_are_numbered_alike() {
        let x = 0.425f64;
        let next = f64::from_bits(x.to_bits() + 1);
        let vertex = |x: f64, y: f64| Vector3::new(x, y, 0.1);
        // Vertex 0 at y = 0.45 and vertex 1 at y = 0.30, both on the plane x = 0.425: by
        // their raw coordinates the first copy orders them 0, 1 and the second 1, 0.
        let first = [vertex(x, 0.45), vertex(next, 0.30), vertex(1.0, 0.0)];
        let second = [vertex(1.0, 0.0), vertex(x, 0.30), vertex(next, 0.45)];
        let a = in_canonical_order(&first, &[[0, 1, 2]]);
        let b = in_canonical_order(&second, &[[2, 1, 0]]);
        assert_eq!(a, b);
        assert_eq!(
            a.0[0],
            DVec3::new(f64::from(x as f32), 0.30f32.into(), 0.1f32.into())
        );
    }

    #[test]
    fn the_same_particles_give_the_same_bytes_on_any_number_of_threads() {
        // 16 spacings of cubes an eighth of a spacing: 2 × 2 × 2 subdomains and more.
        let s = 0.03;
        let mut x = block(16, s, DVec3::ZERO);
        x.truncate(3000); // a ragged top
        let v: Vec<DVec3> = x.iter().map(|p| DVec3::new(p.y, -p.x, 0.0)).collect();
        let recon = Reconstruction {
            spacing: s,
            resolution: 8.0,
        };
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            pool.unwrap()
                .install(|| recon.reconstruct(0, &x, &v).unwrap())
        };
        let one = on(1);
        assert!(one.triangles.len() > 10_000);
        assert_closed(&one); // across the subdomains' seams too
        assert_eq!(one, on(2));
        assert_eq!(one, on(3));
    }

    /// The velocities at points agree with splashsurf's `SphInterpolator`, the same sum
    /// through an R-tree, to rounding: inside a jittered block, at its faces and corners,
    /// and beside it; a point out of every particle's reach gets zero.
    #[test]
    fn velocities_at_points_are_splashsurfs_sph_average() {
        use splashsurf_lib::sph_interpolation::SphInterpolator;
        let s = 0.05;
        let x: Vec<DVec3> = (block(8, s, DVec3::ZERO).iter().enumerate())
            .map(|(k, &p)| p + 0.2 * s * DVec3::new((k as f64).sin(), (1.3 * k as f64).cos(), 0.0))
            .collect();
        let v: Vec<DVec3> = (x.iter())
            .map(|p| DVec3::new(p.y * p.z, 1.0 - p.x, (7.0 * p.x).sin()))
            .collect();
        let volumes: Vec<f64> = (0..x.len())
            .map(|k| 1e-4 * (1.0 + 0.3 * (k % 5) as f64))
            .collect();
        let h = 2.0 * s;
        let points: Vec<DVec3> = (0..300)
            .map(|k| DVec3::new((k % 10) as f64, ((k / 10) % 10) as f64, (k / 100) as f64) * 0.05)
            .map(|p| p - DVec3::splat(0.06))
            .chain([DVec3::splat(5.0)])
            .collect();
        let ours = velocities_at(&points, &x, &v, &volumes, h);
        let vector = |p: &DVec3| Vector3::new(p.x, p.y, p.z);
        let particles: Vec<_> = x.iter().map(vector).collect();
        // Splashsurf takes densities and a mass: volume V = m / ρ.
        let densities: Vec<f64> = volumes.iter().map(|volume| 1.0 / volume).collect();
        let reference = SphInterpolator::new(&particles, &densities, 1.0, h);
        let velocities: Vec<_> = v.iter().map(vector).collect();
        let at: Vec<_> = points.iter().map(vector).collect();
        let theirs = reference.interpolate_vector_quantity(&velocities, &at, true);
        let mut compared = 0;
        for ((ours, theirs), point) in ours.iter().zip(&theirs).zip(&points) {
            let theirs = DVec3::new(theirs.x, theirs.y, theirs.z);
            if theirs.is_finite() {
                assert!(
                    (*ours - theirs).length() <= 1e-12 * theirs.length().max(1.0),
                    "{point}"
                );
                compared += 1;
            } else {
                assert_eq!(*ours, DVec3::ZERO, "{point}: no particle within reach");
            }
        }
        assert!(compared > 250, "{compared} points with particles near");
        assert_eq!(ours[300], DVec3::ZERO, "far from every particle");
    }

    #[test]
    fn no_particles_no_surface_and_a_non_finite_one_is_an_error() {
        let recon = Reconstruction {
            spacing: 0.1,
            resolution: 2.0,
        };
        assert!(recon.reconstruct(0, &[], &[]).unwrap().triangles.is_empty());
        let x = [DVec3::ZERO, DVec3::new(f64::NAN, 0.0, 0.0)];
        assert!(recon.reconstruct(0, &x, &[DVec3::ZERO; 2]).is_err());
    }
}
