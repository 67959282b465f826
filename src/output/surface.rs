//! What an object's frame files hold, worked out once per topology: which of the object's
//! vertices are written and in what order, the polygons and segments in those output indices,
//! UVs per vertex or per corner, and where the normals split (docs/output-format.md).
//!
//! - A surface, cloth or rope: output vertex `k` is the object's vertex `k`.
//! - A tetrahedral object: only its boundary surface is written, with only the nodes that
//!   surface uses, in increasing node order (SPEC §5). Interior nodes would be vertices no face
//!   uses, which importers drop, shifting indices (and then OBJ and PLY of one frame disagree).
//! - A rope with `output.rope_tube`: the tube of [`crate::mesh::tube`], every tube vertex
//!   following the rope vertex it rings.
//! - A fluid's reconstructed surface (`<object>_surface`): its own mesh, new every frame.
//! - An object's render mesh ([`crate::model::RenderMesh`], written as `<object>_render`): its
//!   own topology, UVs and smoothing, its vertices placed by the binding from the object's.
//!
//! Per-vertex data (positions, velocities, PLY `id`) goes through [`Surface::source`], so it
//! follows whatever vertices are kept, dropped or repeated.

use crate::mesh::fluid_surface::FluidSurfaceMesh;
use crate::mesh::normals::NormalSlots;
use crate::mesh::tube::Tube;
use crate::mesh::{CornerUvs, Mesh};
use crate::model::{ObjectLayout, RenderMesh};
use crate::scene::types::RopeTube;
use std::sync::Arc;

/// An object's output topology (constant until the object tears).
#[derive(Debug, Clone)]
pub struct Surface {
    /// Per output vertex, the object's local vertex it shows (its position, velocity, `id`).
    pub source: Vec<u32>,
    /// `source` is `0..vertex_count`: output vertex k is the object's vertex k.
    pub identity: bool,
    /// PLY `id` per output vertex: the input vertex it is (or was split from, or rings).
    /// Written when output vertices are not simply the input vertices.
    pub ids: Option<Vec<u32>>,
    /// Polygons and segments in output indices; `uvs` per output vertex; `corner_uvs` where
    /// the input had UV seams. Its `positions` stay empty.
    pub mesh: Mesh,
    /// Normal slots where the input had hard edges (else one normal per vertex).
    pub slots: Option<NormalSlots>,
    /// Present when the object is written as a rope tube: positions and normals come from it.
    pub tube: Option<Tube>,
    /// Present for a render mesh: positions and velocities come through its binding.
    pub carried: Option<Arc<RenderMesh>>,
}

impl Surface {
    pub fn new(object: &ObjectLayout, rope_tube: Option<&RopeTube>) -> Self {
        let topology = &object.topology;
        let is_rope = topology.face_count() == 0 && !topology.segments.is_empty();
        match rope_tube {
            Some(tube) if is_rope => Self::tube(object, tube),
            _ if !topology.tets.is_empty() => Self::subset(object, used_vertices(topology)),
            _ => Self::subset(object, (0..object.vertex_count() as u32).collect()),
        }
    }

    /// The object's polygons and segments over the vertices `source` (which must hold every
    /// vertex they use), renumbered to positions in `source`.
    fn subset(object: &ObjectLayout, source: Vec<u32>) -> Self {
        let topology = &object.topology;
        let n = object.vertex_count();
        let identity =
            source.len() == n && source.iter().enumerate().all(|(k, &v)| k == v as usize);
        let mut output_of = vec![u32::MAX; n];
        for (k, &v) in source.iter().enumerate() {
            output_of[v as usize] = k as u32;
        }
        let corners = topology.face_indices.len();
        let mut mesh = Mesh {
            face_indices: topology
                .face_indices
                .iter()
                .map(|&v| output_of[v as usize])
                .collect(),
            face_offsets: topology.face_offsets.clone(),
            segments: (topology.segments.iter())
                .map(|s| s.map(|v| output_of[v as usize]))
                .collect(),
            uvs: (topology.uvs.as_ref())
                .map(|uvs| source.iter().map(|&v| uvs[v as usize]).collect()),
            // Corner data from the input stays valid through tears (corners keep their place);
            // a mismatch would be a bug, and then the corner data is left out.
            corner_uvs: topology
                .corner_uvs
                .clone()
                .filter(|c: &CornerUvs| c.corners.len() == corners),
            ..Mesh::new()
        };
        debug_assert!(mesh.face_indices.iter().all(|&k| k != u32::MAX));
        let slots = (topology.corner_smoothing.as_ref())
            .filter(|classes| classes.len() == corners)
            .map(|classes| NormalSlots::new(&mesh.face_indices, classes));
        mesh.warnings.clear();
        Surface {
            ids: (object.tearing.is_some() || !identity).then(|| ids(object, &source)),
            source,
            identity,
            mesh,
            slots,
            tube: None,
            carried: None,
        }
    }

    /// An object's render mesh: the fine mesh's own topology, UVs and smoothing.
    pub fn render(render: &Arc<RenderMesh>) -> Self {
        let fine = &render.mesh;
        let mesh = Mesh {
            positions: Vec::new(),
            warnings: Vec::new(),
            ..fine.clone()
        };
        let slots = (fine.corner_smoothing.as_ref())
            .filter(|classes| classes.len() == fine.face_indices.len())
            .map(|classes| NormalSlots::new(&fine.face_indices, classes));
        Surface {
            source: Vec::new(),
            identity: false,
            ids: None,
            mesh,
            slots,
            tube: None,
            carried: Some(render.clone()),
        }
    }

    /// A fluid's reconstructed surface in one frame: its own triangles over its own vertices.
    pub fn fluid(surface: &FluidSurfaceMesh) -> Self {
        let mut mesh = Mesh::new();
        for t in &surface.triangles {
            mesh.face_indices.extend_from_slice(t);
            mesh.face_offsets.push(mesh.face_indices.len() as u32);
        }
        Surface {
            source: (0..surface.positions.len() as u32).collect(),
            identity: true,
            ids: None,
            mesh,
            slots: None,
            tube: None,
            carried: None,
        }
    }

    fn tube(object: &ObjectLayout, options: &RopeTube) -> Self {
        let topology = &object.topology;
        let tube = Tube::new(
            &topology.segments,
            &topology.positions,
            options.sides as usize,
            options.radius,
            options.caps,
        );
        let source = tube.sources();
        let mut mesh = Mesh::new();
        tube.faces(&mut mesh.face_indices, &mut mesh.face_offsets);
        Surface {
            ids: Some(ids(object, &source)),
            identity: false,
            source,
            mesh,
            slots: None,
            tube: Some(tube),
            carried: None,
        }
    }

    pub fn vertex_count(&self) -> usize {
        match &self.carried {
            Some(render) => render.binding.len(),
            None => self.source.len(),
        }
    }
}

/// The input vertex each output vertex is or came from.
fn ids(object: &ObjectLayout, source: &[u32]) -> Vec<u32> {
    source
        .iter()
        .map(|&v| object.source_vertex[v as usize])
        .collect()
}

/// Every vertex some polygon or segment uses, in increasing order.
fn used_vertices(mesh: &Mesh) -> Vec<u32> {
    let mut used = vec![false; mesh.positions.len()];
    for &v in mesh
        .face_indices
        .iter()
        .chain(mesh.segments.iter().flatten())
    {
        used[v as usize] = true;
    }
    (0..used.len() as u32)
        .filter(|&v| used[v as usize])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::primitives;

    fn layout(topology: Mesh) -> ObjectLayout {
        let n = topology.positions.len();
        ObjectLayout {
            name: "o".into(),
            particles: 0..n,
            split_particles: Vec::new(),
            source_vertex: (0..n as u32).collect(),
            triangles: topology.triangles(),
            topology,
            collide: true,
            self_collision: false,
            pinned: 0,
            tearing: None,
            topology_version: 0,
            animation: None,
            pinned_to: None,
            fluid: None,
            fluid_surface: None,
            pivot: glam::DVec3::ZERO,
            rest_volume: None,
            count_self_intersections: false,
            render: None,
        }
    }

    #[test]
    fn a_tet_box_writes_only_its_boundary_nodes_in_node_order() {
        let mesh = primitives::box_tets([1.0; 3], [4, 4, 4]);
        let nodes = mesh.positions.len();
        let surface = Surface::new(&layout(mesh.clone()), None);
        // A 4³ lattice: 64 nodes, of which the 2³ inside are dropped.
        assert_eq!(nodes, 64);
        assert_eq!(surface.vertex_count(), 64 - 8);
        assert!(surface.source.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(surface.ids.as_deref(), Some(&surface.source[..]));
        // Same polygons, renumbered: output corner → node is the input corner.
        let back: Vec<u32> = (surface.mesh.face_indices.iter())
            .map(|&k| surface.source[k as usize])
            .collect();
        assert_eq!(back, mesh.face_indices);
        let mut used = vec![false; surface.vertex_count()];
        for &k in &surface.mesh.face_indices {
            used[k as usize] = true;
        }
        assert!(used.iter().all(|&u| u), "an output vertex no face uses");
    }

    #[test]
    fn a_cloth_is_written_as_it_is_and_a_rope_as_a_tube_when_asked() {
        let grid = primitives::grid([1.0, 1.0], 2, 2);
        let surface = Surface::new(&layout(grid.clone()), None);
        assert!(surface.identity && surface.ids.is_none());
        assert_eq!(surface.mesh.face_indices, grid.face_indices);
        let rope = primitives::rope(glam::DVec3::ZERO, glam::DVec3::X, 4);
        let tube = RopeTube {
            radius: 0.01,
            sides: 6,
            caps: true,
        };
        let surface = Surface::new(&layout(rope), Some(&tube));
        assert_eq!(surface.vertex_count(), 5 * 6 + 2);
        assert!(surface.mesh.segments.is_empty());
        assert_eq!(surface.mesh.face_count(), 4 * 6 + 2 * 6);
    }
}
