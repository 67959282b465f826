//! Mesh data as the user gave it (positions, polygons, polylines, UVs), its readers and the
//! procedural primitives. The solver triangulates internally; the writers keep the polygons, so
//! output vertex `k` is input vertex `k` and a polygon stays a polygon in every frame.

pub mod binding;
pub mod fluid_surface;
pub mod normals;
pub mod obj;
pub mod ply;
pub mod primitives;
pub mod tetgen;
pub mod text;
pub mod tube;

pub use normals::vertex_normals;

use anyhow::{bail, Result};
use glam::DVec3;

/// Most vertices a mesh may have, read from a file or generated, and so the most particles
/// one object may have. Indices are 32-bit; well before that a broken file or a typo is far
/// likelier than a real shot. The readers refuse a file that goes beyond it as soon as they
/// know its count.
pub const MAX_VERTICES: usize = 200_000_000;

/// Largest polygon a mesh may hold. PLY writes the corner count as `uchar`, and a larger
/// polygon is almost certainly a broken file rather than a real surface.
pub const MAX_POLYGON_VERTICES: usize = 255;

/// A mesh with stable vertex order: positions, optional per-vertex UVs, polygon faces of any
/// size (stored flat with offsets) and two-point line segments (polylines are split into
/// segments on import).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mesh {
    pub positions: Vec<DVec3>,
    /// One `[u, v]` per position when the source had texture coordinates (at a UV seam, the
    /// first one a face corner gave the vertex).
    pub uvs: Option<Vec<[f64; 2]>>,
    /// Texture coordinates per face corner, present only where the source has UV seams (a
    /// position with several different UVs): the writers then keep every corner's own UV.
    pub corner_uvs: Option<CornerUvs>,
    /// Smoothing class per face corner (parallel to `face_indices`), present only where the
    /// source has hard edges: corners at one vertex share a normal when their classes are
    /// equal (see [`normals`]). Absent, every vertex has one smooth normal.
    pub corner_smoothing: Option<Vec<u32>>,
    /// Corner indices of every polygon, one polygon after another.
    pub face_indices: Vec<u32>,
    /// `face_offsets[k]..face_offsets[k + 1]` are polygon `k`'s corners; always starts with 0.
    pub face_offsets: Vec<u32>,
    /// Line segments (rope edges), in file order.
    pub segments: Vec<[u32; 2]>,
    /// Tetrahedra of a volumetric mesh; its faces are then the boundary triangles.
    pub tets: Vec<[u32; 4]>,
    /// Things a user should hear about that do not stop the import (shown by `check`).
    pub warnings: Vec<String>,
}

/// UVs of a seamed mesh kept as the source laid them out: a list of texture coordinates and,
/// for every face corner, which one it uses. Corner indices stay valid when a tear re-indexes
/// the corners' vertices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CornerUvs {
    pub texcoords: Vec<[f64; 2]>,
    /// Per face corner (parallel to `face_indices`), an index into `texcoords`.
    pub corners: Vec<u32>,
}

impl Mesh {
    pub fn new() -> Self {
        Mesh {
            face_offsets: vec![0],
            ..Default::default()
        }
    }

    pub fn face_count(&self) -> usize {
        self.face_offsets.len().saturating_sub(1)
    }

    /// Corners of polygon `k`.
    pub fn face(&self, k: usize) -> &[u32] {
        let start = self.face_offsets[k] as usize;
        let end = self.face_offsets[k + 1] as usize;
        &self.face_indices[start..end]
    }

    pub fn faces(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.face_count()).map(move |k| self.face(k))
    }

    pub fn push_face(&mut self, corners: &[u32]) {
        self.face_indices.extend_from_slice(corners);
        self.face_offsets.push(self.face_indices.len() as u32);
    }

    /// [`Mesh::push_face`] for a polygon read from a file: refuses one that would take the
    /// corner count past the 32-bit offsets (only a multi-gigabyte file can get there).
    pub fn add_face(&mut self, corners: &[u32]) -> Result<()> {
        if self.face_indices.len() + corners.len() > u32::MAX as usize {
            bail!(
                "more than {} face corners in all; at most that many are supported",
                u32::MAX
            );
        }
        self.push_face(corners);
        Ok(())
    }

    /// Fan triangulation of every polygon: `(c0, c_k, c_k+1)`, keeping the polygon's winding.
    /// The solver's triangles (mass lumping, bending hinges, volume, normals) come from here.
    pub fn triangles(&self) -> Vec<[u32; 3]> {
        let mut triangles = Vec::with_capacity(self.face_indices.len());
        for face in self.faces() {
            for k in 1..face.len() - 1 {
                triangles.push([face[0], face[k], face[k + 1]]);
            }
        }
        triangles
    }

    /// Every distinct edge of the triangulated polygons (polygon sides and the fan diagonals),
    /// of the tetrahedra and the line segments, as `(min, max)` pairs in sorted order.
    /// Degenerate edges (a vertex to itself) are dropped.
    pub fn unique_edges(&self) -> Vec<[u32; 2]> {
        let mut edges: Vec<[u32; 2]> = Vec::with_capacity(self.face_indices.len() * 2);
        for [a, b, c] in self.triangles() {
            edges.extend([[a, b], [b, c], [c, a]]);
        }
        for &[a, b, c, d] in &self.tets {
            edges.extend([[a, b], [a, c], [a, d], [b, c], [b, d], [c, d]]);
        }
        edges.extend(self.segments.iter().copied());
        for edge in &mut edges {
            edge.sort_unstable();
        }
        edges.retain(|[a, b]| a != b);
        edges.sort_unstable();
        edges.dedup();
        edges
    }

    /// Sets the faces to the boundary of the tetrahedra: the triangles used by exactly one
    /// tetrahedron, oriented outward, in the order their tetrahedra come.
    pub fn set_boundary_faces(&mut self) {
        let mut faces: Vec<([u32; 3], [u32; 3])> = Vec::with_capacity(self.tets.len() * 4);
        for &tet in &self.tets {
            let p = tet.map(|i| self.positions[i as usize]);
            let positive = (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) >= 0.0;
            let [a, b, c, d] = tet;
            // Outward for a positively oriented tetrahedron; reversed otherwise.
            for face in [[b, c, d], [a, d, c], [a, b, d], [a, c, b]] {
                let oriented = if positive {
                    face
                } else {
                    [face[0], face[2], face[1]]
                };
                let mut key = face;
                key.sort_unstable();
                faces.push((key, oriented));
            }
        }
        let mut order: Vec<usize> = (0..faces.len()).collect();
        order.sort_by_key(|&k| faces[k].0);
        let mut boundary = vec![false; faces.len()];
        for group in order.chunk_by(|&x, &y| faces[x].0 == faces[y].0) {
            if let [only] = group {
                boundary[*only] = true;
            }
        }
        self.face_indices.clear();
        self.face_offsets = vec![0];
        for (k, (_, oriented)) in faces.iter().enumerate() {
            if boundary[k] {
                self.push_face(oriented);
            }
        }
    }

    /// Applies `f` to every position (placement: scale, rotate, translate).
    pub fn transform(&mut self, f: impl Fn(DVec3) -> DVec3) {
        for p in &mut self.positions {
            *p = f(*p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quad_is_fan_triangulated_and_edges_include_the_diagonal() {
        let mut mesh = Mesh::new();
        mesh.positions = vec![DVec3::ZERO, DVec3::X, DVec3::new(1.0, 0.0, 1.0), DVec3::Z];
        mesh.push_face(&[0, 1, 2, 3]);
        assert_eq!(mesh.triangles(), vec![[0, 1, 2], [0, 2, 3]]);
        assert_eq!(
            mesh.unique_edges(),
            vec![[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]]
        );
    }
}
