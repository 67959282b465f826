//! Procedural rest geometry: `grid`, `rope`, `sphere` (icosphere) and `box` (closed surface).
//! Each has a `*_vertex_count` that the scene validator calls with checked arithmetic before
//! anything is allocated, so a hostile resolution is refused instead of exhausting memory.

use super::Mesh;
use glam::DVec3;
use std::collections::BTreeMap;

/// Vertices of a `grid` of `nx * nz` particles, `None` on overflow.
pub fn grid_vertex_count(nx: u64, nz: u64) -> Option<u64> {
    nx.checked_mul(nz)
}

/// A `size[0] x size[1]` sheet in the XZ plane centred on the origin, normal +Y.
///
/// Particle `(i, j)` has index `j * nx + i`; the quad `a=(i,j) b=(i+1,j) c=(i+1,j+1) d=(i,j+1)`
/// is split along a–c into `(a, c, b)` and `(a, d, c)`, both facing +Y (SPEC §2). UVs run 0..1
/// along X and Z.
pub fn grid(size: [f64; 2], nx: usize, nz: usize) -> Mesh {
    let mut mesh = Mesh::new();
    let mut uvs = Vec::with_capacity(nx * nz);
    mesh.positions.reserve(nx * nz);
    for j in 0..nz {
        for i in 0..nx {
            let u = i as f64 / (nx - 1) as f64;
            let v = j as f64 / (nz - 1) as f64;
            mesh.positions
                .push(DVec3::new((u - 0.5) * size[0], 0.0, (v - 0.5) * size[1]));
            uvs.push([u, v]);
        }
    }
    mesh.uvs = Some(uvs);
    let index = |i: usize, j: usize| (j * nx + i) as u32;
    for j in 0..nz - 1 {
        for i in 0..nx - 1 {
            let (a, b, c, d) = (
                index(i, j),
                index(i + 1, j),
                index(i + 1, j + 1),
                index(i, j + 1),
            );
            mesh.push_face(&[a, c, b]);
            mesh.push_face(&[a, d, c]);
        }
    }
    mesh
}

/// `segments + 1` particles evenly spaced from `start` (index 0) to `end`, one line segment
/// between consecutive particles.
pub fn rope(start: DVec3, end: DVec3, segments: usize) -> Mesh {
    let mut mesh = Mesh::new();
    mesh.positions = (0..=segments)
        .map(|k| start.lerp(end, k as f64 / segments as f64))
        .collect();
    mesh.segments = (0..segments as u32).map(|k| [k, k + 1]).collect();
    mesh
}

/// Vertices of an icosphere after `subdivisions` loop subdivisions: `10 * 4^s + 2`.
pub fn sphere_vertex_count(subdivisions: u32) -> Option<u64> {
    4u64.checked_pow(subdivisions)?
        .checked_mul(10)?
        .checked_add(2)
}

/// A closed icosphere of `radius` centred on the origin, outward-facing triangles.
/// Each subdivision splits every triangle in four and pushes the new midpoints to the sphere.
pub fn sphere(radius: f64, subdivisions: u32) -> Mesh {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut positions: Vec<DVec3> = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ]
    .iter()
    .map(|&p| DVec3::from_array(p).normalize())
    .collect();
    let mut triangles: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        // Edge -> midpoint index; a BTreeMap so the numbering never depends on hashing.
        let mut midpoints: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        let mut midpoint = |a: u32, b: u32, positions: &mut Vec<DVec3>| -> u32 {
            let key = (a.min(b), a.max(b));
            *midpoints.entry(key).or_insert_with(|| {
                let m = (positions[a as usize] + positions[b as usize]).normalize();
                positions.push(m);
                (positions.len() - 1) as u32
            })
        };
        let mut finer = Vec::with_capacity(triangles.len() * 4);
        for &[a, b, c] in &triangles {
            let ab = midpoint(a, b, &mut positions);
            let bc = midpoint(b, c, &mut positions);
            let ca = midpoint(c, a, &mut positions);
            finer.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        triangles = finer;
    }
    let mut mesh = Mesh::new();
    mesh.positions = positions.into_iter().map(|p| p * radius).collect();
    for tri in triangles {
        mesh.push_face(&tri);
    }
    mesh
}

/// Surface vertices of a box lattice of `n[0] x n[1] x n[2]` points: all minus the interior.
pub fn box_vertex_count(n: [u64; 3]) -> Option<u64> {
    let all = n[0].checked_mul(n[1])?.checked_mul(n[2])?;
    let inner = n.iter().map(|&k| k.saturating_sub(2)).product::<u64>();
    Some(all - inner)
}

/// The closed surface of a box of full extents `size`, centred on the origin, with
/// `n[axis]` particles along each axis (>= 2). Vertices are the lattice points on the surface,
/// numbered in x-fastest, then y, then z order; faces are outward-facing quads.
pub fn box_surface(size: [f64; 3], n: [usize; 3]) -> Mesh {
    let mut mesh = Mesh::new();
    let [nx, ny, nz] = n;
    // Surface points, x fastest: the first and last layers (k) whole; of the layers between,
    // the first and last rows (j) whole and the two ends of every other row. Time and memory
    // go with the surface, never with the lattice inside it.
    let whole_row = |j: usize, k: usize| k == 0 || k == nz - 1 || j == 0 || j == ny - 1;
    for k in 0..nz {
        for j in 0..ny {
            let step = if whole_row(j, k) { 1 } else { nx - 1 };
            for i in (0..nx).step_by(step) {
                mesh.positions.push(DVec3::new(
                    (i as f64 / (nx - 1) as f64 - 0.5) * size[0],
                    (j as f64 / (ny - 1) as f64 - 0.5) * size[1],
                    (k as f64 / (nz - 1) as f64 - 0.5) * size[2],
                ));
            }
        }
    }
    // The vertex index of surface point (i, j, k) in that order.
    let ring = 2 * nx + 2 * (ny - 2);
    let index = |i: usize, j: usize, k: usize| {
        let before_layer = if k == 0 { 0 } else { nx * ny + (k - 1) * ring };
        let in_layer = if k == 0 || k == nz - 1 {
            j * nx + i
        } else if j == 0 {
            i
        } else if j == ny - 1 {
            nx + 2 * (ny - 2) + i
        } else {
            nx + 2 * (j - 1) + usize::from(i != 0)
        };
        (before_layer + in_layer) as u32
    };
    // Each side: the fixed axis, its lattice value and the two axes spanning it.
    for axis in 0..3 {
        let (u_axis, v_axis) = ((axis + 1) % 3, (axis + 2) % 3);
        for side in [0, n[axis] - 1] {
            let outward = if side == 0 { -1.0 } else { 1.0 };
            for v in 0..n[v_axis] - 1 {
                for u in 0..n[u_axis] - 1 {
                    let corner = |du: usize, dv: usize| {
                        let mut ijk = [0; 3];
                        ijk[axis] = side;
                        ijk[u_axis] = u + du;
                        ijk[v_axis] = v + dv;
                        index(ijk[0], ijk[1], ijk[2])
                    };
                    // (u,v) (u+1,v) (u+1,v+1) (u,v+1) winds about +axis because u × v = axis.
                    let quad = [corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)];
                    if outward > 0.0 {
                        mesh.push_face(&quad);
                    } else {
                        mesh.push_face(&[quad[0], quad[3], quad[2], quad[1]]);
                    }
                }
            }
        }
    }
    mesh
}

/// Vertices of a box filled with tetrahedra: the whole lattice.
pub fn box_lattice_count(n: [u64; 3]) -> Option<u64> {
    n[0].checked_mul(n[1])?.checked_mul(n[2])
}

/// A box of full extents `size` centred on the origin filled with tetrahedra: every lattice
/// point of `n[0] × n[1] × n[2]` is a vertex (x fastest, then y, then z), every cell is split
/// into six tetrahedra around its main diagonal (a Kuhn split, so neighbouring cells share
/// faces), and the faces are the outward boundary triangles.
pub fn box_tets(size: [f64; 3], n: [usize; 3]) -> Mesh {
    let mut mesh = Mesh::new();
    let index = |i: usize, j: usize, k: usize| ((k * n[1] + j) * n[0] + i) as u32;
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                mesh.positions.push(DVec3::new(
                    (i as f64 / (n[0] - 1) as f64 - 0.5) * size[0],
                    (j as f64 / (n[1] - 1) as f64 - 0.5) * size[1],
                    (k as f64 / (n[2] - 1) as f64 - 0.5) * size[2],
                ));
            }
        }
    }
    // Corner c of a cell: bit 0 = +x, bit 1 = +y, bit 2 = +z. Six tetrahedra share 0–7.
    const KUHN: [[usize; 4]; 6] = [
        [0, 1, 3, 7],
        [0, 1, 5, 7],
        [0, 2, 3, 7],
        [0, 2, 6, 7],
        [0, 4, 5, 7],
        [0, 4, 6, 7],
    ];
    for k in 0..n[2] - 1 {
        for j in 0..n[1] - 1 {
            for i in 0..n[0] - 1 {
                let corner = |c: usize| index(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
                for tet in KUHN {
                    let mut tet = tet.map(corner);
                    let p = tet.map(|v| mesh.positions[v as usize]);
                    if (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) < 0.0 {
                        tet.swap(2, 3);
                    }
                    mesh.tets.push(tet);
                }
            }
        }
    }
    mesh.set_boundary_faces();
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signed volume of a closed triangle surface (divergence theorem); positive when the
    /// triangles face outward.
    fn enclosed_volume(mesh: &Mesh) -> f64 {
        mesh.triangles()
            .iter()
            .map(|&[a, b, c]| {
                let p = |k: u32| mesh.positions[k as usize];
                p(a).cross(p(b)).dot(p(c)) / 6.0
            })
            .sum()
    }

    #[test]
    fn grid_follows_the_spec_numbering_and_faces_up() {
        let mesh = grid([2.0, 1.0], 3, 2);
        assert_eq!(mesh.positions.len(), 6);
        assert_eq!(mesh.positions[0], DVec3::new(-1.0, 0.0, -0.5));
        assert_eq!(mesh.positions[4], DVec3::new(0.0, 0.0, 0.5)); // (i=1, j=1)
        assert_eq!(mesh.face(0), &[0, 4, 1]); // (a, c, b) of the first quad
        assert_eq!(mesh.face(1), &[0, 3, 4]); // (a, d, c)
        for [a, b, c] in mesh.triangles() {
            let p = |k: u32| mesh.positions[k as usize];
            assert!((p(b) - p(a)).cross(p(c) - p(a)).y > 0.0);
        }
        assert_eq!(mesh.uvs.as_ref().unwrap()[5], [1.0, 1.0]);
    }

    #[test]
    fn sphere_counts_and_volume_converge_to_the_ball() {
        let mesh = sphere(2.0, 3);
        assert_eq!(mesh.positions.len() as u64, sphere_vertex_count(3).unwrap());
        assert_eq!(mesh.face_count(), 20 * 64);
        for p in &mesh.positions {
            assert!((p.length() - 2.0).abs() < 1e-12);
        }
        let ball = 4.0 / 3.0 * std::f64::consts::PI * 8.0;
        let v = enclosed_volume(&mesh);
        assert!(v > 0.97 * ball && v < ball, "{v} vs {ball}");
    }

    #[test]
    fn box_surface_is_closed_outward_and_counted() {
        let mesh = box_surface([1.0, 2.0, 3.0], [3, 4, 5]);
        assert_eq!(
            mesh.positions.len() as u64,
            box_vertex_count([3, 4, 5]).unwrap()
        );
        assert!((enclosed_volume(&mesh) - 6.0).abs() < 1e-12);
        // Closed: every directed edge appears once and its reverse once.
        let mut directed: Vec<(u32, u32)> = Vec::new();
        for [a, b, c] in mesh.triangles() {
            directed.extend([(a, b), (b, c), (c, a)]);
        }
        directed.sort_unstable();
        for w in directed.windows(2) {
            assert_ne!(w[0], w[1]);
        }
        for &(a, b) in &directed {
            assert!(directed.binary_search(&(b, a)).is_ok());
        }
    }

    #[test]
    fn box_tets_fill_the_volume_and_bound_it_like_the_surface_box() {
        let mesh = box_tets([1.0, 2.0, 3.0], [3, 4, 5]);
        assert_eq!(mesh.positions.len(), 60);
        assert_eq!(mesh.tets.len(), 2 * 3 * 4 * 6);
        let volume: f64 = mesh
            .tets
            .iter()
            .map(|t| {
                let p = t.map(|i| mesh.positions[i as usize]);
                (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) / 6.0
            })
            .sum();
        assert!((volume - 6.0).abs() < 1e-12);
        // Boundary: two triangles per surface cell, enclosing the same volume outward.
        assert_eq!(mesh.face_count(), 2 * 2 * (2 * 3 + 3 * 4 + 2 * 4));
        assert!((enclosed_volume(&mesh) - 6.0).abs() < 1e-12);
    }

    #[test]
    fn rope_runs_from_start_to_end() {
        let mesh = rope(DVec3::ZERO, DVec3::new(2.0, 0.0, 0.0), 4);
        assert_eq!(mesh.positions.len(), 5);
        assert_eq!(mesh.positions[2], DVec3::new(1.0, 0.0, 0.0));
        assert_eq!(mesh.segments, vec![[0, 1], [1, 2], [2, 3], [3, 4]]);
    }
}
