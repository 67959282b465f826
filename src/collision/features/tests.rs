//! The collider-feature search against a brute-force listing.

use super::*;
use crate::collision::bvh::{bounds, boxes_overlap, swept_bounds};
use crate::collision::MeshPose;
use crate::model::Model;
use crate::solver::step::Solver;
use std::sync::Mutex;

/// Every pair [`FeatureContacts::search`] promises, found by testing every collider vertex
/// (of some triangle) and every collider edge against every cloth triangle's and edge's
/// grown swept box: the joined list's order, collider by collider, vertex–triangle pairs
/// then edge–edge pairs, each in cloth order and then collider order.
fn brute_pairs(
    features: &FeatureContacts,
    posed: &[PosedCollider],
    x: &[DVec3],
    x_prev: &[DVec3],
    margin: impl Fn(usize) -> f64,
) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for (c, posed) in posed.iter().enumerate() {
        let (Some(pose), Some(mesh)) = (posed.mesh, &posed.collider.mesh) else {
            continue;
        };
        let reach = 2.0 * margin(c) + pose.max_motion;
        let mut in_a_triangle = vec![false; pose.end.len()];
        mesh.triangles
            .as_flattened()
            .iter()
            .for_each(|&v| in_a_triangle[v as usize] = true);
        for (t, &triangle) in features.triangles.iter().enumerate() {
            let swept = swept_bounds(triangle, x, x_prev, 0.0);
            let (min, max) = (swept.0 - reach, swept.1 + reach);
            for (v, p) in pose.end.iter().enumerate() {
                if in_a_triangle[v] && p.cmpge(min).all() && p.cmple(max).all() {
                    pairs.push(Pair::VertexTriangle(c as u32, v as u32, t as u32));
                }
            }
        }
        for (f, &edge) in features.edges.iter().enumerate() {
            let swept = swept_bounds(edge, x, x_prev, 0.0);
            let cloth_box = (swept.0 - reach, swept.1 + reach);
            for (e, ends) in features.collider_edges[c].0.iter().enumerate() {
                let ends = ends.map(|v| pose.end[v as usize]);
                if boxes_overlap(bounds(ends, 0.0), cloth_box) {
                    pairs.push(Pair::EdgeEdge(c as u32, e as u32, f as u32));
                }
            }
        }
    }
    pairs
}

/// The cloth of `scenes/body.toml` lying on the bending body after 8 frames (`x_prev`), then
/// moved 2 cm down into it (`x`), with the colliders posed then: `check` gets the model, the
/// posed colliders, `x`, `x_prev` and each collider's contact margin.
fn pressed_into_the_body(
    check: impl FnOnce(&Model, &[PosedCollider], &[DVec3], &[DVec3], &dyn Fn(usize) -> f64),
) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/body.toml");
    let scene = crate::scene::load::load(&path, &[]).expect("body");
    let built = crate::scene::build::build(&scene).expect("model");
    let mut solver = Solver::new(built.model, 1).expect("threads");
    for _ in 0..8 {
        solver.step_frame().expect("no divergence");
    }
    let model = &solver.model;
    let x_prev = model.particles.x.clone();
    let x: Vec<DVec3> = (x_prev.iter())
        .map(|p| *p - DVec3::new(0.0, 0.02, 0.0))
        .collect();
    let time = 8.0 / model.params.fps;
    let poses: Vec<Option<MeshPose>> = (model.colliders.iter())
        .map(|c| MeshPose::new(c, time))
        .collect();
    let posed: Vec<PosedCollider> = (model.colliders.iter().zip(&poses))
        .map(|(c, pose)| PosedCollider {
            mesh: pose.as_ref(),
            ..c.posed(time, time)
        })
        .collect();
    let margin = |c: usize| model.colliders[c].contact_margin(model.params.particle_radius);
    check(model, &posed, &x, &x_prev, &margin);
}

/// The cloth pressed into the body ([`pressed_into_the_body`]): the search in one, two or
/// five chunks lists exactly the brute-force pairs, each once, in order. A collider vertex is
/// held by several of the triangles a walk finds, and a collider edge by two, so a search
/// that lists one twice, or skips one it has met in an earlier query, fails. In one chunk
/// every cloth edge is answered from a holding triangle's query; in more, the edges at the
/// chunks' borders whose triangles lie in another chunk walk the tree themselves, so a
/// search that reads another query's triangles, or a triangle of another chunk, fails too.
#[test]
fn the_search_lists_every_pair_once_in_order() {
    pressed_into_the_body(|model, posed, x, x_prev, margin| {
        let mut features = FeatureContacts::new(model);
        let expected = brute_pairs(&features, posed, x, x_prev, margin);
        let count = |vertex: bool| {
            let kind = |p: &&Pair| matches!(p, Pair::VertexTriangle(..)) == vertex;
            expected.iter().filter(kind).count()
        };
        assert!(
            count(true) > 50 && count(false) > 500,
            "{} vertex–triangle and {} edge–edge pairs",
            count(true),
            count(false)
        );
        for chunks in [1, 2, 5] {
            let chunks: Vec<_> = (0..chunks)
                .map(|_| Mutex::new(SearchChunk::default()))
                .collect();
            // Twice, so the second search runs on the chunks' kept buffers and marks.
            for _ in 0..2 {
                for (k, chunk) in chunks.iter().enumerate() {
                    let mut out = chunk.lock().unwrap();
                    features.search_chunk(posed, x, x_prev, margin, (k, chunks.len()), &mut out);
                }
                features.join(&chunks);
                assert_eq!(features.pairs, expected, "{} chunks", chunks.len());
            }
        }
    });
}

/// The pairs of the cloth pressed into the body ([`pressed_into_the_body`]), projected colour
/// by colour in shares taken in any order, move every particle to the same bits as projected
/// in sequence.
#[test]
fn colours_split_anywhere_give_the_same_bits() {
    // The cloth lying on the bending body after 8 frames, then pushed 2 cm down into it: its
    // faces meet the collider's vertices and edges in a thousand pairs that share particles,
    // so the order they are projected in matters (projecting each colour's pairs last
    // first moves a particle differently if two of them share one).
    pressed_into_the_body(|model, posed, x, x_prev, margin| {
        let inv_mass = &model.particles.inv_mass;
        let mut features = FeatureContacts::new(model);
        let chunk = Mutex::new(SearchChunk::default());
        features.search_chunk(posed, x, x_prev, margin, (0, 1), &mut chunk.lock().unwrap());
        features.join(std::slice::from_ref(&chunk));
        let colours = features.colours();
        assert!(
            colours.colour_count() > 8,
            "{} colours",
            colours.colour_count()
        );
        assert!(colours.worth_sharing());
        let mut by_colour = x.to_vec();
        let mut touching = 0;
        for c in 0..colours.colour_count() {
            // A colour's pairs in any order: 64 shares, the last first.
            for share in (0..64).rev() {
                touching += features.solve_share(
                    colours.colour(c),
                    (share, 64),
                    posed,
                    by_colour.as_mut_slice(),
                    x_prev,
                    inv_mass,
                    margin,
                );
            }
        }
        let overflow = colours.overflow();
        touching += features.solve_share(
            overflow,
            (0, 1),
            posed,
            &mut by_colour[..],
            x_prev,
            inv_mass,
            margin,
        );
        let mut in_sequence = x.to_vec();
        features.solve(posed, &mut in_sequence, x_prev, inv_mass, margin);
        let in_sequence_touching = features.touching();
        assert!(
            in_sequence_touching > 100,
            "{in_sequence_touching} pairs pushed"
        );
        assert_eq!(touching, in_sequence_touching);
        let bits = |x: &[DVec3]| -> Vec<u64> {
            x.iter()
                .flat_map(|p| p.to_array())
                .map(f64::to_bits)
                .collect()
        };
        let moved = (in_sequence.iter().zip(x)).filter(|(a, b)| a != b).count();
        assert!(moved > 50, "{moved} particles moved");
        assert!(
            bits(&by_colour) == bits(&in_sequence),
            "shares differ from the sequence"
        );
    });
}
