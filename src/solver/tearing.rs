//! Tearing (`stretch.tear_strain`): after a substep, every polygon side shared by two faces,
//! and every line segment, longer than `rest length × (1 + tear_strain)` tears (a border side
//! or a diagonal inside a polygon cannot: there is nothing on its other side).
//!
//! - A torn line segment is removed: the rope parts there.
//! - A torn polygon side is marked torn; then around each of its two vertices the faces are
//!   grouped, two faces joining when they share an untorn side at that vertex. A vertex whose
//!   faces fall into several groups is split: the group with the lowest face keeps it, every
//!   other group gets a new particle at the same place with the same velocity (the mass is
//!   shared equally, a pinned vertex's copies stay pinned). So one torn edge inside a sheet
//!   only weakens it; a tear that reaches the border, or two torn edges meeting at a vertex,
//!   cut it, and the cut shows in the written mesh.
//! - The object's stretch, bending and tether constraints are made again from its topology
//!   and rest positions (torn sides still shared by two faces get neither edge nor hinge), a
//!   torn object's global volume constraint is switched off (a torn balloon does not hold
//!   air), and every block is coloured again.
//!
//! New vertices are appended after the object's others, in the order they were made; their
//! source vertex (the PLY `id`) is the input vertex they split from. Everything runs on one
//! thread in a fixed order (constraints in block order, objects, vertices and faces in
//! index order), so tearing is as deterministic as the rest.

use super::colouring::ConstraintBlock;
use super::step::Solver;
use crate::generate::{generate, Generated, Source};
use crate::mesh::Mesh;
use crate::model::{Model, ObjectLayout};
use std::collections::{BTreeMap, BTreeSet};

impl Solver {
    /// Whether any object has a `tear_strain`.
    pub fn can_tear(&self) -> bool {
        self.model.objects.iter().any(|o| o.tearing.is_some())
    }

    /// Tears every edge beyond its tear length; returns how many tore.
    pub fn tear(&mut self) -> usize {
        let model = &mut self.model;
        let x = &model.particles.x;
        // Object index → torn local pairs.
        let mut torn: BTreeMap<usize, BTreeSet<[u32; 2]>> = BTreeMap::new();
        for edge in model.stretch.items.iter().filter(|e| e.tearable) {
            let [a, b] = edge.particles.map(|i| i as usize);
            let object = &model.objects[model.owner[a] as usize];
            let strain = (object.tearing.as_ref())
                .and_then(|t| t.recipe.tear_strain)
                .expect("a tearable edge's object tears");
            if x[a].distance(x[b]) > edge.tear_length(strain) {
                let (object, la) = model.vertex_of(a);
                let lb = object.local(b).expect("an edge stays within its object");
                torn.entry(model.owner[a] as usize)
                    .or_default()
                    .insert([la.min(lb), la.max(lb)]);
            }
        }
        if torn.is_empty() {
            return 0;
        }
        let mut count = 0;
        for (&object_index, pairs) in &torn {
            count += pairs.len();
            cut(model, object_index, pairs);
        }
        remake_constraints(model, &torn.keys().copied().collect());
        self.grow_to(self.model.particles.len());
        count
    }
}

/// Applies the torn `pairs` to one object's topology, splitting vertices where it comes apart.
fn cut(model: &mut Model, object_index: usize, pairs: &BTreeSet<[u32; 2]>) {
    let object = &mut model.objects[object_index];
    let tearing = object
        .tearing
        .as_mut()
        .expect("only tearable objects have tear lengths");
    tearing.torn_count += pairs.len();
    let mut ends = BTreeSet::new();
    for &[a, b] in pairs {
        let segments = &mut object.topology.segments;
        let before = segments.len();
        segments.retain(|&[p, q]| [p.min(q), p.max(q)] != [a, b]);
        if segments.len() == before {
            tearing.torn_sides.insert([a, b]);
            ends.extend([a, b]);
        }
    }
    for v in ends {
        split_vertex(model, object_index, v);
    }
    let object = &mut model.objects[object_index];
    // A side no longer shared by two faces has come apart: it is an ordinary edge again.
    let shared = shared_sides(object);
    if let Some(tearing) = object.tearing.as_mut() {
        tearing.torn_sides.retain(|side| shared.contains(side));
    }
    object.triangles = object.topology.triangles();
    object.topology_version += 1;
}

/// Sides (sorted local pairs) that two or more faces share.
fn shared_sides(object: &ObjectLayout) -> BTreeSet<[u32; 2]> {
    let mut sides: Vec<[u32; 2]> = Vec::new();
    for face in object.topology.faces() {
        for k in 0..face.len() {
            let (a, b) = (face[k], face[(k + 1) % face.len()]);
            sides.push([a.min(b), a.max(b)]);
        }
    }
    sides.sort_unstable();
    sides
        .chunk_by(|p, q| p == q)
        .filter(|g| g.len() > 1)
        .map(|g| g[0])
        .collect()
}

/// Groups the faces around local vertex `v` by untorn shared sides and gives every group but
/// the first a new vertex.
fn split_vertex(model: &mut Model, object_index: usize, v: u32) {
    let object = &model.objects[object_index];
    let torn = &object.tearing.as_ref().expect("tearable").torn_sides;
    let Some((faces, roots)) = fans_around(&object.topology, torn, v) else {
        return;
    };
    let mut groups: Vec<usize> = roots.clone();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() < 2 {
        return;
    }

    let global = object.global(v);
    let share = groups.len() as f64;
    let particles = &mut model.particles;
    let mass = particles.mass[global] / share;
    let inv_mass = if particles.inv_mass[global] == 0.0 {
        0.0
    } else {
        1.0 / mass
    };
    particles.mass[global] = mass;
    particles.inv_mass[global] = inv_mass;
    for &group in &groups[1..] {
        let particles = &mut model.particles;
        let new_global = particles.len();
        particles.x.push(particles.x[global]);
        particles.x_prev.push(particles.x_prev[global]);
        particles.v.push(particles.v[global]);
        particles.mass.push(mass);
        particles.inv_mass.push(inv_mass);
        model.owner.push(object_index as u32);
        let object = &mut model.objects[object_index];
        let new_local = object.vertex_count() as u32;
        object.split_particles.push(new_global);
        let source = object.source_vertex[v as usize];
        object.source_vertex.push(source);
        let topology = &mut object.topology;
        topology.positions.push(topology.positions[v as usize]);
        if let Some(uvs) = topology.uvs.as_mut() {
            uvs.push(uvs[v as usize]);
        }
        for (k, &f) in faces.iter().enumerate() {
            if roots[k] == group {
                let start = topology.face_offsets[f] as usize;
                let end = topology.face_offsets[f + 1] as usize;
                for corner in &mut topology.face_indices[start..end] {
                    if *corner == v {
                        *corner = new_local;
                    }
                }
            }
        }
    }
}

/// The faces around vertex `v` (none when fewer than two) and, for each, the place in that
/// list of the first face of its fan: the faces it stays joined to through edges that are not
/// torn (union–find over the faces that share a neighbour of `v`). Each fan keeps one copy
/// of `v`.
fn fans_around(
    topology: &Mesh,
    torn: &BTreeSet<[u32; 2]>,
    v: u32,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let faces: Vec<usize> = (0..topology.face_count())
        .filter(|&f| topology.face(f).contains(&v))
        .collect();
    if faces.len() < 2 {
        return None;
    }
    // Union-find over the faces around v.
    let mut parent: Vec<usize> = (0..faces.len()).collect();
    fn root(parent: &mut [usize], mut k: usize) -> usize {
        while parent[k] != k {
            parent[k] = parent[parent[k]];
            k = parent[k];
        }
        k
    }
    let mut by_neighbour: Vec<(u32, usize)> = Vec::new();
    for (k, &f) in faces.iter().enumerate() {
        let face = topology.face(f);
        let n = face.len();
        let at = face.iter().position(|&c| c == v).expect("face holds v");
        for u in [face[(at + 1) % n], face[(at + n - 1) % n]] {
            if !torn.contains(&[v.min(u), v.max(u)]) {
                by_neighbour.push((u, k));
            }
        }
    }
    by_neighbour.sort_unstable();
    for group in by_neighbour.chunk_by(|p, q| p.0 == q.0) {
        for pair in group.windows(2) {
            let (a, b) = (root(&mut parent, pair[0].1), root(&mut parent, pair[1].1));
            parent[a.max(b)] = a.min(b);
        }
    }
    let roots: Vec<usize> = (0..faces.len()).map(|k| root(&mut parent, k)).collect();
    Some((faces, roots))
}

/// Makes the topology-derived constraints of the `changed` objects again and recolours. A
/// torn object is no longer closed, so it loses its volume constraint.
pub(super) fn remake_constraints(model: &mut Model, changed: &BTreeSet<usize>) {
    let torn_ranges: Vec<_> = changed
        .iter()
        .map(|&k| model.objects[k].particles.clone())
        .collect();
    model
        .volumes
        .retain(|v| !torn_ranges.contains(&v.particles));
    let mut generated = Generated::default();
    for &k in changed {
        let object = &model.objects[k];
        let tearing = object.tearing.as_ref().expect("tearable");
        let global = |i: u32| object.global(i) as u32;
        let inv_mass = &model.particles.inv_mass;
        let pinned = |i: u32| inv_mass[object.global(i)] == 0.0;
        let made = generate(
            &Source {
                mesh: &object.topology,
                triangles: &object.triangles,
                global: &global,
                pinned: &pinned,
                size: tearing.size,
                torn: &tearing.torn_sides,
            },
            &tearing.recipe,
        );
        generated.append(made);
    }
    let owner = &model.owner;
    let inv_mass = &model.particles.inv_mass;
    let keep = |first: u32| !changed.contains(&(owner[first as usize] as usize));
    // Items stay grouped by object in object order (a stable sort), as the build made them:
    // the block, and so its colouring and solve order, is then a function of the current
    // topology alone, not of the order tears happened in — which `--resume` relies on when it
    // remakes every torn object's constraints at once.
    fn rebuild<const N: usize, K: crate::constraints::Constraint<N> + Clone>(
        block: &mut ConstraintBlock<K>,
        keep: &dyn Fn(u32) -> bool,
        made: Vec<K>,
        owner: &[u32],
        inv_mass: &[f64],
    ) {
        let mut items: Vec<K> = block
            .items
            .iter()
            .filter(|c| keep(c.particles()[0]))
            .cloned()
            .collect();
        items.extend(made);
        items.sort_by_key(|c| owner[c.particles()[0] as usize]);
        *block = ConstraintBlock::new(items, inv_mass);
    }
    let made = generated;
    rebuild(&mut model.stretch, &keep, made.stretch, owner, inv_mass);
    rebuild(&mut model.bending, &keep, made.bending, owner, inv_mass);
    let isometric = made.isometric_bending;
    rebuild(
        &mut model.isometric_bending,
        &keep,
        isometric,
        owner,
        inv_mass,
    );
    let rope = made.rope_bending;
    rebuild(&mut model.rope_bending, &keep, rope, owner, inv_mass);
    rebuild(
        &mut model.long_range,
        &keep,
        made.long_range,
        owner,
        inv_mass,
    );
}

/// Whether `[a, b]` can (still) tear in `object` (for tests).
#[cfg(test)]
fn is_side(object: &ObjectLayout, pair: [u32; 2]) -> bool {
    crate::generate::tearable_edges(&object.topology).contains(&pair)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::build::build;
    use crate::scene::load::{parse, LoadedScene};

    fn solver(text: &str) -> Solver {
        let file = parse(text).unwrap();
        let built = build(&LoadedScene {
            path: "t.toml".into(),
            base_dir: ".".into(),
            sha256: String::new(),
            file,
        })
        .unwrap();
        Solver::new(built.model, 1).unwrap()
    }

    const STRIP: &str =
        "[[object]]\nname = \"s\"\ngrid = { size = [3.0, 1.0], resolution = [4, 2] }\n\
                         density = 1.0\nstretch = { tear_strain = 0.5 }\nbending = {}\n";

    #[test]
    fn cutting_across_a_strip_splits_it_in_two() {
        // A 4 × 2 grid: vertices 0..3 along the bottom, 4..7 along the top. Pull the right
        // half away along +X so the rung between columns 1 and 2 tears.
        let mut solver = solver(STRIP);
        let before = solver.model.stretch.len();
        for i in [2usize, 3, 6, 7] {
            solver.model.particles.x[i].x += 2.0;
        }
        // Only the diagonal 1–6 is shared by two faces; the rungs 1–2 and 5–6 are border
        // sides. Tearing the diagonal isolates the middle triangle at vertices 1 and 6.
        let torn = solver.tear();
        assert_eq!(torn, 1);
        let object = &solver.model.objects[0];
        assert!(object.vertex_count() > 8, "vertices were split");
        assert_eq!(object.source_vertex.len(), object.vertex_count());
        // The two halves share no vertex any more.
        let left: BTreeSet<u32> = (0..object.topology.face_count())
            .filter(|&f| object.topology.face(f).contains(&0))
            .flat_map(|f| object.topology.face(f).to_vec())
            .collect();
        let right: BTreeSet<u32> = (0..object.topology.face_count())
            .filter(|&f| object.topology.face(f).contains(&3))
            .flat_map(|f| object.topology.face(f).to_vec())
            .collect();
        assert!(left.is_disjoint(&right), "{left:?} {right:?}");
        assert!(solver.model.stretch.len() <= before + 4);
        // Border sides never tear; the torn diagonal is no longer shared.
        assert!(!is_side(object, [1, 2]));
        assert!(!is_side(object, [1, 6]));
    }

    #[test]
    fn a_single_inner_tear_weakens_without_splitting() {
        let text = "[[object]]\nname = \"c\"\ngrid = { size = [2.0, 2.0], resolution = [3, 3] }\n\
                    density = 1.0\nstretch = { tear_strain = 0.5 }\n";
        let mut solver = solver(text);
        // Stretch the inner edge 4–5 (centre to the right middle) alone.
        solver.model.particles.x[5].x += 3.0;
        let torn = solver.tear();
        assert!(torn >= 1);
        let object = &solver.model.objects[0];
        assert_eq!(object.tearing.as_ref().unwrap().torn_count, torn);
    }

    #[test]
    fn torn_off_pieces_lose_their_tethers() {
        // A rope pinned at 0 with tethers: once segment 1–2 tears, particles 2 and 3 have no
        // pin in their piece and must fall freely.
        let text = "[[object]]\nname = \"r\"\nrope = { start = [0.0, 0.0, 0.0], end = [3.0, 0.0, 0.0], segments = 3 }\n\
                    density = 1.0\npin = [0]\nstretch = { tear_strain = 0.2 }\nlong_range = { max_stretch = 1.1 }\n";
        let mut solver = solver(text);
        assert_eq!(solver.model.long_range.len(), 3);
        solver.model.particles.x[2].x += 1.0;
        solver.model.particles.x[3].x += 1.0;
        assert_eq!(solver.tear(), 1);
        let tethered: Vec<u32> = solver
            .model
            .long_range
            .items
            .iter()
            .map(|c| c.particles[0])
            .collect();
        assert_eq!(tethered, vec![1]);
    }

    #[test]
    fn a_rope_parts_where_a_segment_tears() {
        let text = "[[object]]\nname = \"r\"\nrope = { start = [0.0, 0.0, 0.0], end = [3.0, 0.0, 0.0], segments = 3 }\n\
                    density = 1.0\nstretch = { tear_strain = 0.2 }\nbending = {}\n";
        let mut solver = solver(text);
        assert_eq!(solver.model.rope_bending.len(), 2);
        solver.model.particles.x[3].x += 1.0;
        assert_eq!(solver.tear(), 1);
        let object = &solver.model.objects[0];
        assert_eq!(object.topology.segments, vec![[0, 1], [1, 2]]);
        assert_eq!(solver.model.stretch.len(), 2);
        assert_eq!(solver.model.rope_bending.len(), 1);
    }
}
