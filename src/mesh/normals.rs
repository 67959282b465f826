//! Output normals, smooth or split at hard edges, recomputed from the current positions.
//!
//! A *normal slot* is one normal written to the file (`vn` in OBJ). Every face corner points at
//! one slot; corners at one vertex share a slot when they belong to the same smoothing class
//! (see [`super::Mesh::corner_smoothing`]), so a hard edge is two slots at each of its
//! vertices. Without classes, slot `k` is simply vertex `k`.
//!
//! The normal of slot `s` is the area-weighted sum over the polygons whose corner lies in `s`:
//! every polygon is fan-triangulated `(c0, c_k, c_k+1)` as the solver does, and each triangle
//! adds `(p_k − p_0) × (p_k+1 − p_0)` (twice its area times its unit normal) to the slots of its
//! three corners; the sum is normalised. Degenerate cases fall back deterministically: a slot
//! whose sum is zero (only zero-area faces around it) takes its vertex's smooth normal (the
//! same sum over every face at the vertex), and a vertex whose sum is zero too takes +Y.

use glam::DVec3;

/// Which normal slot every face corner writes, for a mesh with hard edges.
#[derive(Debug, Clone, PartialEq)]
pub struct NormalSlots {
    /// Per face corner (parallel to `face_indices`), its slot.
    pub slot_of_corner: Vec<u32>,
    /// Per slot, its vertex; slots are sorted by vertex, then by smoothing class.
    pub vertex_of_slot: Vec<u32>,
}

impl NormalSlots {
    /// Slots from the corners' vertices and smoothing classes (both parallel to
    /// `face_indices`): one slot per distinct `(vertex, class)`, in that sorted order.
    pub fn new(face_indices: &[u32], classes: &[u32]) -> Self {
        debug_assert_eq!(face_indices.len(), classes.len());
        let mut order: Vec<usize> = (0..face_indices.len()).collect();
        order.sort_by_key(|&c| (face_indices[c], classes[c]));
        let mut slot_of_corner = vec![0; face_indices.len()];
        let mut vertex_of_slot = Vec::new();
        let key = |c: usize| (face_indices[c], classes[c]);
        for group in order.chunk_by(|&a, &b| key(a) == key(b)) {
            for &corner in group {
                slot_of_corner[corner] = vertex_of_slot.len() as u32;
            }
            vertex_of_slot.push(face_indices[group[0]]);
        }
        NormalSlots {
            slot_of_corner,
            vertex_of_slot,
        }
    }
}

/// Adds every fan triangle's `(p_k − p_0) × (p_k+1 − p_0)` to `sums[slot(corner)]` for its
/// three corners, polygon by polygon in order (a fixed order: the bytes do not depend on
/// threads).
fn accumulate(
    positions: &[DVec3],
    face_indices: &[u32],
    face_offsets: &[u32],
    slot: impl Fn(usize) -> usize,
    sums: &mut [DVec3],
) {
    for window in face_offsets.windows(2) {
        let (start, end) = (window[0] as usize, window[1] as usize);
        let p = |c: usize| positions[face_indices[c] as usize];
        for k in start + 1..end.saturating_sub(1) {
            let n = (p(k) - p(start)).cross(p(k + 1) - p(start));
            sums[slot(start)] += n;
            sums[slot(k)] += n;
            sums[slot(k + 1)] += n;
        }
    }
}

/// The unnormalised area-weighted vertex normals of polygons, one per position: the sum over
/// the fan triangles at a vertex of `(p_k − p_0) × (p_k+1 − p_0)`, zero where every such
/// triangle has zero area (and at vertices no face uses). [`vertex_normals`] normalises these;
/// a caller that wants its own fallback for the zero ones (the render-mesh binding) starts here.
pub fn vertex_normal_sums(
    positions: &[DVec3],
    face_indices: &[u32],
    face_offsets: &[u32],
    sums: &mut Vec<DVec3>,
) {
    sums.clear();
    sums.resize(positions.len(), DVec3::ZERO);
    accumulate(
        positions,
        face_indices,
        face_offsets,
        |c| face_indices[c] as usize,
        sums,
    );
}

/// Smooth area-weighted vertex normals of polygons (zero-area neighbourhoods get +Y): one per
/// position. The PLY `nx ny nz` and the OBJ `vn` of a mesh without hard edges.
pub fn vertex_normals(
    positions: &[DVec3],
    face_indices: &[u32],
    face_offsets: &[u32],
    normals: &mut Vec<DVec3>,
) {
    vertex_normal_sums(positions, face_indices, face_offsets, normals);
    for n in normals.iter_mut() {
        *n = n.try_normalize().unwrap_or(DVec3::Y);
    }
}

/// Split normals: one per slot of `slots`, given the smooth `vertex_normals` of the same
/// positions as the fallback for slots around zero-area faces only.
pub fn slot_normals(
    positions: &[DVec3],
    face_indices: &[u32],
    face_offsets: &[u32],
    slots: &NormalSlots,
    vertex_normals: &[DVec3],
    normals: &mut Vec<DVec3>,
) {
    normals.clear();
    normals.resize(slots.vertex_of_slot.len(), DVec3::ZERO);
    accumulate(
        positions,
        face_indices,
        face_offsets,
        |c| slots.slot_of_corner[c] as usize,
        normals,
    );
    for (n, &vertex) in normals.iter_mut().zip(&slots.vertex_of_slot) {
        *n = n.try_normalize().unwrap_or(vertex_normals[vertex as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two faces of a unit cube sharing the edge 0–1: the floor (−Y) and the front wall (−Z).
    fn folded() -> (Vec<DVec3>, Vec<u32>, Vec<u32>) {
        let positions = vec![
            DVec3::ZERO,
            DVec3::X,
            DVec3::new(1.0, 0.0, 1.0),
            DVec3::Z,
            DVec3::new(1.0, 1.0, 0.0),
            DVec3::Y,
        ];
        // Floor seen from below (normal −Y), wall seen from the front (normal −Z).
        (positions, vec![0, 1, 2, 3, 0, 5, 4, 1], vec![0, 4, 8])
    }

    #[test]
    fn flat_quad_normals_point_along_the_winding() {
        let positions = vec![DVec3::ZERO, DVec3::Z, DVec3::new(1.0, 0.0, 1.0), DVec3::X];
        let mut normals = Vec::new();
        vertex_normals(&positions, &[0, 1, 2, 3], &[0, 4], &mut normals);
        for n in normals {
            assert!((n - DVec3::Y).length() < 1e-12, "{n}");
        }
    }

    #[test]
    fn a_hard_edge_keeps_each_face_its_own_normal() {
        let (positions, faces, offsets) = folded();
        let mut smooth = Vec::new();
        vertex_normals(&positions, &faces, &offsets, &mut smooth);
        let expected = (DVec3::NEG_Y + DVec3::NEG_Z).normalize();
        assert!((smooth[0] - expected).length() < 1e-12, "{}", smooth[0]);
        // Each face its own class: vertices 0 and 1 get two slots each.
        let classes = [0, 0, 0, 0, 1, 1, 1, 1];
        let slots = NormalSlots::new(&faces, &classes);
        assert_eq!(slots.vertex_of_slot, vec![0, 0, 1, 1, 2, 3, 4, 5]);
        let mut split = Vec::new();
        slot_normals(&positions, &faces, &offsets, &slots, &smooth, &mut split);
        for (corner, &slot) in slots.slot_of_corner.iter().enumerate() {
            let face_normal = if corner < 4 {
                DVec3::NEG_Y
            } else {
                DVec3::NEG_Z
            };
            let n = split[slot as usize];
            assert!((n - face_normal).length() < 1e-12, "corner {corner}: {n}");
        }
    }

    #[test]
    fn zero_area_faces_fall_back_to_the_vertex_normal_then_up() {
        // A real triangle and a collapsed one sharing vertex 0, each its own class.
        let positions = vec![DVec3::ZERO, DVec3::X, DVec3::Z, DVec3::ZERO, DVec3::ZERO];
        let faces = [0, 2, 1, 0, 3, 4];
        let offsets = [0, 3, 6];
        let mut smooth = Vec::new();
        vertex_normals(&positions, &faces, &offsets, &mut smooth);
        let slots = NormalSlots::new(&faces, &[0, 0, 0, 1, 1, 1]);
        let mut split = Vec::new();
        slot_normals(&positions, &faces, &offsets, &slots, &smooth, &mut split);
        for n in &split {
            assert!(n.is_finite() && (n.length() - 1.0).abs() < 1e-12, "{n}");
        }
        // The collapsed face's corner at 0 takes vertex 0's normal (+Y from the real face);
        // its vertices 3 and 4 have no area at all and take +Y.
        assert_eq!(split[slots.slot_of_corner[3] as usize], DVec3::Y);
        assert_eq!(smooth[3], DVec3::Y);
    }
}
