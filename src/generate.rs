//! The constraints that follow from an object's topology: stretch edges, bending hinges and
//! rope bends, and long-range tethers. The scene build makes them once; tearing makes them
//! again for an object whose topology changed, from the same rest positions, so a torn object
//! keeps its material and its rest shape.

use crate::constraints::curvature::{IsometricBendingConstraint, RopeBendingConstraint};
use crate::constraints::dihedral::{dihedral_angle, DihedralConstraint};
use crate::constraints::distance::DistanceConstraint;
use crate::constraints::long_range::LongRangeConstraint;
use crate::constraints::MaterialId;
use crate::mesh::Mesh;
use glam::DVec3;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BendingKind {
    Dihedral,
    Isometric,
}

/// What an object asked for, for the kinds that follow from its topology.
#[derive(Debug, Clone, Default)]
pub struct Recipe {
    /// Materials are ids in the model's table (`Model::materials`).
    pub stretch: Option<MaterialId>,
    /// The material of the diagonals inside faces of more than three sides (`shear`); they
    /// take `stretch`'s when it is `None`.
    pub shear: Option<MaterialId>,
    /// Strain at which a polygon side or line segment tears (`stretch.tear_strain`).
    pub tear_strain: Option<f64>,
    pub bending: Option<(MaterialId, BendingKind)>,
    /// `long_range.max_stretch`.
    pub long_range: Option<f64>,
}

/// Constraints made for one object (global particle indices).
#[derive(Debug, Default)]
pub struct Generated {
    pub stretch: Vec<DistanceConstraint>,
    pub bending: Vec<DihedralConstraint>,
    pub isometric_bending: Vec<IsometricBendingConstraint>,
    pub rope_bending: Vec<RopeBendingConstraint>,
    pub long_range: Vec<LongRangeConstraint>,
    /// Edges shared by more than two triangles: no hinge.
    pub non_manifold: usize,
}

impl Generated {
    /// Adds `other`'s constraints after these.
    pub fn append(&mut self, other: Generated) {
        append(&mut self.stretch, other.stretch);
        append(&mut self.bending, other.bending);
        append(&mut self.isometric_bending, other.isometric_bending);
        append(&mut self.rope_bending, other.rope_bending);
        append(&mut self.long_range, other.long_range);
        self.non_manifold += other.non_manifold;
    }
}

/// `all.extend(more)`, but taking `more` whole when `all` is empty: the first (often the
/// only) object's constraints are not copied.
fn append<T>(all: &mut Vec<T>, more: Vec<T>) {
    if all.is_empty() {
        *all = more;
    } else {
        all.extend(more);
    }
}

/// One object's rest geometry and how its local vertices map to particles.
pub struct Source<'a> {
    /// Rest positions and topology (local indices).
    pub mesh: &'a Mesh,
    pub triangles: &'a [[u32; 3]],
    /// Local vertex → global particle.
    pub global: &'a dyn Fn(u32) -> u32,
    /// Whether a local vertex is pinned.
    pub pinned: &'a dyn Fn(u32) -> bool,
    /// Bounding-box diagonal: the scale for degeneracy thresholds.
    pub size: f64,
    /// Polygon sides (sorted pairs) torn but still shared by two faces: no edge, no hinge.
    pub torn: &'a BTreeSet<[u32; 2]>,
}

impl Source<'_> {
    /// Rest position of local vertex `i`.
    fn rest(&self, i: u32) -> DVec3 {
        self.mesh.positions[i as usize]
    }
}

/// The constraints `recipe` asks of `source`'s object: stretch edges, then bending, then
/// tethers.
pub fn generate(source: &Source, recipe: &Recipe) -> Generated {
    let mut out = Generated::default();
    if let Some(material) = recipe.stretch {
        add_stretch(source, recipe, material, &mut out);
    }
    if let Some((material, kind)) = recipe.bending {
        add_bending(source, material, kind, &mut out);
    }
    if let Some(max_stretch) = recipe.long_range {
        add_long_range(source, max_stretch, &mut out);
    }
    out
}

/// A distance constraint on every edge of the mesh (polygon sides, the diagonals inside
/// polygons, tetrahedron edges, segments) but the degenerate (shorter than 10⁻¹² of the
/// object's size) and torn ones. Diagonals take the `shear` material when there is one; with
/// a `tear_strain`, the edges that can tear are marked so.
fn add_stretch(source: &Source, recipe: &Recipe, material: MaterialId, out: &mut Generated) {
    let mesh = source.mesh;
    let tearable = recipe.tear_strain.map(|_| tearable_edges(mesh));
    let diagonals = fan_diagonals(mesh);
    let edges = mesh.unique_edges();
    out.stretch.reserve_exact(edges.len());
    for [a, b] in edges {
        let rest_length = source.rest(a).distance(source.rest(b));
        if rest_length <= 1e-12 * source.size || source.torn.contains(&[a, b]) {
            continue;
        }
        let diagonal = diagonals.contains(&[a, b]);
        let tearable = (tearable.as_ref()).is_some_and(|sides| sides.contains(&[a, b]));
        out.stretch.push(DistanceConstraint {
            particles: [(source.global)(a), (source.global)(b)],
            rest_length,
            material: match recipe.shear {
                Some(shear) if diagonal => shear,
                _ => material,
            },
            tearable,
            diagonal,
        });
    }
}

/// Bending of `kind` across every untorn edge shared by exactly two triangles, and rope
/// bending along the polylines; `out.non_manifold` counts the edges shared by more.
fn add_bending(source: &Source, material: MaterialId, kind: BendingKind, out: &mut Generated) {
    let (stencils, non_manifold) = hinges(source.triangles);
    out.non_manifold = non_manifold;
    match kind {
        BendingKind::Dihedral => out.bending.reserve_exact(stencils.len()),
        BendingKind::Isometric => out.isometric_bending.reserve_exact(stencils.len()),
    }
    for stencil in stencils {
        let edge = [stencil[0].min(stencil[1]), stencil[0].max(stencil[1])];
        if source.torn.contains(&edge) {
            continue;
        }
        let rest = stencil.map(|i| source.rest(i));
        let particles = stencil.map(source.global);
        match kind {
            BendingKind::Dihedral => {
                if let Some((rest_angle, _)) = dihedral_angle(&rest) {
                    out.bending.push(DihedralConstraint {
                        particles,
                        rest_angle,
                        material,
                    });
                }
            }
            BendingKind::Isometric => {
                out.isometric_bending
                    .extend(IsometricBendingConstraint::isometric(
                        particles, &rest, material,
                    ))
            }
        }
    }
    for bend in polyline_bends(&source.mesh.segments) {
        let particles = bend.map(source.global);
        out.rope_bending.extend(RopeBendingConstraint::rope(
            particles,
            &bend.map(|i| source.rest(i)),
            material,
        ));
    }
}

/// A tether from every free vertex to its nearest pinned one, at most `max_stretch` times
/// their rest distance apart.
fn add_long_range(source: &Source, max_stretch: f64, out: &mut Generated) {
    let mesh = source.mesh;
    let n = mesh.positions.len() as u32;
    let anchors: Vec<u32> = (0..n).filter(|&i| (source.pinned)(i)).collect();
    // A tether only reaches pins of its own connected piece: a torn-off piece falls.
    let piece = connected_pieces(mesh);
    for i in (0..n).filter(|&i| !(source.pinned)(i)) {
        // Nearest pinned vertex of the same piece by rest distance; the lower index on a tie.
        let same_piece = |&&a: &&u32| piece[a as usize] == piece[i as usize];
        let nearest = anchors
            .iter()
            .filter(same_piece)
            .map(|&a| (source.rest(i).distance(source.rest(a)), a))
            .fold(None, |best: Option<(f64, u32)>, c| match best {
                Some(b) if b.0 <= c.0 => Some(b),
                _ => Some(c),
            });
        if let Some((distance, anchor)) = nearest {
            out.long_range.push(LongRangeConstraint {
                particles: [(source.global)(i), (source.global)(anchor)],
                max_length: max_stretch * distance,
            });
        }
    }
}

/// The diagonals that fan-triangulate faces of more than three sides and are no side of any
/// face (sorted pairs): a quad mesh's shear edges.
fn fan_diagonals(mesh: &Mesh) -> BTreeSet<[u32; 2]> {
    let key = |a: u32, b: u32| [a.min(b), a.max(b)];
    let sides: BTreeSet<[u32; 2]> = mesh
        .faces()
        .flat_map(|face| (0..face.len()).map(move |k| key(face[k], face[(k + 1) % face.len()])))
        .collect();
    mesh.faces()
        .filter(|face| face.len() > 3)
        .flat_map(|face| (2..face.len() - 1).map(move |k| key(face[0], face[k])))
        .filter(|edge| !sides.contains(edge))
        .collect()
}

/// The edges that can tear, as sorted pairs: polygon sides shared by two or more faces, and
/// line segments. A diagonal that triangulates a polygon cannot tear (the polygon is one
/// face), nor can a border side: with one face there is nothing to separate.
pub fn tearable_edges(mesh: &Mesh) -> BTreeSet<[u32; 2]> {
    let mut sides: Vec<[u32; 2]> = Vec::new();
    for face in mesh.faces() {
        for k in 0..face.len() {
            let (a, b) = (face[k], face[(k + 1) % face.len()]);
            sides.push([a.min(b), a.max(b)]);
        }
    }
    sides.sort_unstable();
    let mut edges: BTreeSet<[u32; 2]> = sides
        .chunk_by(|p, q| p == q)
        .filter(|group| group.len() > 1)
        .map(|group| group[0])
        .collect();
    for &[a, b] in &mesh.segments {
        edges.insert([a.min(b), a.max(b)]);
    }
    edges
}

/// For every vertex, the smallest vertex index of its connected piece (vertices joined by
/// faces, tetrahedra or segments).
pub fn connected_pieces(mesh: &Mesh) -> Vec<u32> {
    let mut parent: Vec<u32> = (0..mesh.positions.len() as u32).collect();
    fn root(parent: &mut [u32], mut k: u32) -> u32 {
        while parent[k as usize] != k {
            parent[k as usize] = parent[parent[k as usize] as usize];
            k = parent[k as usize];
        }
        k
    }
    let mut join = |a: u32, b: u32| {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        parent[ra.max(rb) as usize] = ra.min(rb);
    };
    for face in mesh.faces() {
        for pair in face.windows(2) {
            join(pair[0], pair[1]);
        }
    }
    for tet in &mesh.tets {
        for &k in &tet[1..] {
            join(tet[0], k);
        }
    }
    for &[a, b] in &mesh.segments {
        join(a, b);
    }
    (0..mesh.positions.len() as u32)
        .map(|k| root(&mut parent, k))
        .collect()
}

/// Bending stencils `[e0, e1, o0, o1]` for every edge shared by exactly two triangles, in
/// sorted edge order, and the number of non-manifold edges (more than two triangles).
pub fn hinges(triangles: &[[u32; 3]]) -> (Vec<[u32; 4]>, usize) {
    // (undirected edge, directed start, opposite vertex), sorted so equal edges are adjacent.
    let mut sides: Vec<([u32; 2], u32, u32)> = Vec::with_capacity(triangles.len() * 3);
    for &[a, b, c] in triangles {
        for (e0, e1, o) in [(a, b, c), (b, c, a), (c, a, b)] {
            sides.push(([e0.min(e1), e0.max(e1)], e0, o));
        }
    }
    sides.sort_unstable();
    let mut stencils = Vec::new();
    let mut non_manifold = 0;
    for group in sides.chunk_by(|x, y| x.0 == y.0) {
        match group {
            [(_, start_a, o0), (edge, _, o1)] => {
                // Triangle A holds the edge as start_a → other; B the other way round.
                let other = if *start_a == edge[0] {
                    edge[1]
                } else {
                    edge[0]
                };
                stencils.push([*start_a, other, *o0, *o1]);
            }
            [_] => {}
            _ => non_manifold += 1,
        }
    }
    (stencils, non_manifold)
}

/// For every vertex joined to exactly two others by line segments, `[first, vertex, second]`
/// (neighbours in index order): where rope bending acts.
pub fn polyline_bends(segments: &[[u32; 2]]) -> Vec<[u32; 3]> {
    let mut ends: Vec<(u32, u32)> = segments
        .iter()
        .flat_map(|&[a, b]| [(a, b), (b, a)])
        .filter(|(a, b)| a != b)
        .collect();
    ends.sort_unstable();
    ends.dedup();
    ends.chunk_by(|x, y| x.0 == y.0)
        .filter_map(|group| match group {
            [(middle, a), (_, b)] => Some([*a, *middle, *b]),
            _ => None,
        })
        .collect()
}
