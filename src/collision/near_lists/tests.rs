use super::*;
use crate::collision::{edge_edge, particles, point_triangle};

/// [`Skin::covers`] the motion `x_prev` → `x` of `particles`, with the stray found as
/// the solver's threads find it, in shares: every split into two shares joined either
/// way round must give the stray of all particles at once.
fn covers(skin: &Skin, particles: &[u32], x: &[DVec3], x_prev: &[DVec3]) -> bool {
    let whole = skin.stray(particles, x, x_prev);
    for split in 0..=particles.len() {
        let (a, b) = particles.split_at(split);
        let (a, b) = (skin.stray(a, x, x_prev), skin.stray(b, x, x_prev));
        assert_eq!(format!("{:?}", a.and(b)), format!("{whole:?}"));
        assert_eq!(format!("{:?}", b.and(a)), format!("{whole:?}"));
    }
    skin.covers(whole)
}

/// Reading a part of the lists across the chunks they were found in gives the pairs of
/// that part of the joined lists, for chunks of any length (empty ones too).
#[test]
fn parts_read_across_chunks_are_the_parts_of_the_joined_list() {
    let chunks: Vec<Vec<u32>> = vec![vec![0, 1, 2], vec![], vec![3], vec![4, 5, 6, 7, 8], vec![]];
    let joined = chunks.concat();
    for parts in 1..=11 {
        for part in 0..parts {
            let read: Vec<u32> = joined_part(chunks.iter().map(|c| &c[..]), part, parts)
                .flatten()
                .copied()
                .collect();
            assert_eq!(read, joined[share(0..joined.len(), part, parts)]);
        }
    }
}

struct Everyone;

impl NearRules for Everyone {
    fn spheres(&self, _: u32, _: u32) -> bool {
        true
    }
    fn point_triangle(&self, _: u32, _: u32) -> bool {
        true
    }
    fn edges(&self, _: u32, _: u32) -> bool {
        true
    }
}

/// Every candidate a search of all pairs finds after the particles moved by a common
/// shift, along their extrapolated motions, and up to the skin relative to each other is
/// in the lists built before.
#[test]
fn lists_hold_every_candidate_while_the_skin_covers_the_motion() {
    let (r, skin_width) = (0.02, 0.08);
    let distance = 2.0 * r;
    let mesh = crate::mesh::primitives::grid([1.0, 1.0], 8, 8);
    let triangles = mesh.triangles();
    let edges = mesh.unique_edges();
    // A crumpled grid, still at the reference substep.
    let wave = |k: usize, f: f64| (k as f64 * f).sin();
    let reference: Vec<DVec3> = (mesh.positions.iter().enumerate())
        .map(|(k, p)| DVec3::new(p.x + 0.1 * wave(k, 1.7), 0.2 * wave(k, 2.3), p.z))
        .collect();
    let particles: Vec<u32> = (0..reference.len() as u32).collect();
    // Each particle's motion in the reference substep, different for each.
    let motion = |k: usize| 0.01 * DVec3::new(wave(k, 0.9), wave(k, 1.1), wave(k, 1.3));
    let before: Vec<DVec3> = (reference.iter().enumerate())
        .map(|(k, &p)| p - motion(k))
        .collect();
    let mut skin = Skin::new(skin_width);
    skin.reset(&particles, &reference, &before);
    let mut lists = NearLists::default();
    TriangleSearch::new(&skin, &triangles, distance, None).pairs(
        &particles,
        &triangles,
        &Everyone,
        &mut lists.point_triangle,
    );
    EdgeSearch::new(&skin, &edges, distance, None).pairs(
        0..edges.len(),
        &edges,
        &Everyone,
        &mut lists.edges,
    );
    // Spheres of the particles that take part (not all of them, so that the search's
    // places in the list differ from the particles' indices), with the solver's reach.
    let taking: Vec<u32> = particles.iter().copied().filter(|k| k % 5 != 2).collect();
    let reach = 2.0 * distance;
    SphereSearch::new(&skin, &taking, reach, None).pairs(
        0..taking.len(),
        &taking,
        &Everyone,
        &mut lists.spheres,
    );
    // Later: everything shifted, each particle 5 substeps further along its motion and
    // moved up to S/2 per axis at both ends.
    let shift = DVec3::new(0.7, -1.3, 0.4);
    let moved = |f: f64, substeps: f64| -> Vec<DVec3> {
        (reference.iter().enumerate())
            .map(|(k, &p)| {
                let jitter = DVec3::new(wave(k, f), wave(k, f + 0.31), wave(k, f + 0.57));
                p + substeps * motion(k) + shift + 0.49 * skin_width * jitter
            })
            .collect()
    };
    let (x, x_prev) = (moved(3.1, 5.0), moved(5.3, 4.0));
    assert!(covers(&skin, &particles, &x, &x_prev));
    let n = particles.len() as u32;
    let mut found = 0;
    for (k, &i) in taking.iter().enumerate() {
        for &j in &taking[k + 1..] {
            if particles::close([i, j], &x, reach) {
                assert!(lists.spheres.contains(&[i, j]), "spheres {i} {j}");
                found += 1;
            }
        }
    }
    assert!(
        lists
            .spheres
            .iter()
            .all(|[i, j]| [i, j].iter().all(|k| taking.contains(k))),
        "only particles that take part"
    );
    let triangle_boxes: Vec<_> = (triangles.iter())
        .map(|&t| point_triangle::swept_box(t, &x, &x_prev, distance))
        .collect();
    for (t, triangle) in (0..).zip(&triangles) {
        for p in (0..n).filter(|p| !triangle.contains(p)) {
            let pair = [p, t];
            if point_triangle::contact(pair, &triangles, &triangle_boxes, &x, &x_prev, distance)
                .is_some()
            {
                assert!(
                    lists.point_triangle.contains(&[p, t]),
                    "point {p} triangle {t}"
                );
                found += 1;
            }
        }
    }
    let boxes: Vec<_> = (edges.iter())
        .map(|&e| edge_edge::swept_box(e, &x, &x_prev, distance))
        .collect();
    for i in 0..edges.len() as u32 {
        for j in i + 1..edges.len() as u32 {
            let (ei, ej) = (edges[i as usize], edges[j as usize]);
            if !ei.iter().any(|k| ej.contains(k))
                && edge_edge::contact([i, j], &edges, &boxes, &x, &x_prev).is_some()
            {
                assert!(lists.edges.contains(&[i, j]), "edges {i} {j}");
                found += 1;
            }
        }
    }
    assert!(
        found > 100,
        "the motion made {found} candidates: too few to test anything"
    );
    let all_point_triangle = n as usize * triangles.len();
    assert!(
        lists.point_triangle.len() < all_point_triangle / 4,
        "the lists are not near pairs only"
    );
    for list in [&lists.spheres, &lists.point_triangle, &lists.edges] {
        assert!(list.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
    }
}

/// A search refilled from one made where the cloth lay flat (its buffers, and its tree
/// refitted where it uses one) finds the same pairs as one made new on the crumpled
/// cloth, in the same order.
#[test]
fn a_refitted_search_finds_what_a_new_one_finds() {
    let (distance, skin_width) = (0.04, 0.08);
    let mesh = crate::mesh::primitives::grid([1.0, 1.0], 12, 12);
    let triangles = mesh.triangles();
    let edges = mesh.unique_edges();
    let particles: Vec<u32> = (0..mesh.positions.len() as u32).collect();
    let skin_at = |x: &[DVec3]| {
        let mut skin = Skin::new(skin_width);
        skin.reset(&particles, x, x);
        skin
    };
    let flat = skin_at(&mesh.positions);
    // Folded in half along x and crumpled: far parts of the grid now lie on each other.
    let crumpled: Vec<DVec3> = (mesh.positions.iter().enumerate())
        .map(|(k, p)| {
            let wave = 0.03 * (k as f64 * 1.9).sin();
            DVec3::new(p.x.abs(), 0.02 * p.x.signum() + wave, p.z)
        })
        .collect();
    let crumpled = skin_at(&crumpled);
    let searches = |kept_triangles, kept_edges| {
        let t = TriangleSearch::new(&crumpled, &triangles, distance, kept_triangles);
        let e = EdgeSearch::new(&crumpled, &edges, distance, kept_edges);
        let mut lists = NearLists::default();
        t.pairs(&particles, &triangles, &Everyone, &mut lists.point_triangle);
        e.pairs(0..edges.len(), &edges, &Everyone, &mut lists.edges);
        (lists.point_triangle, lists.edges)
    };
    let fresh = searches(None, None);
    let refitted = searches(
        Some(TriangleSearch::new(&flat, &triangles, distance, None)),
        Some(EdgeSearch::new(&flat, &edges, distance, None)),
    );
    assert!(
        fresh.0.len() > 1000 && fresh.1.len() > 1000,
        "folds on each other"
    );
    assert_eq!(fresh, refitted);
}

#[test]
fn lists_last_while_a_particle_keeps_its_motion_and_expire_when_it_turns() {
    let particles = [0, 1];
    let x_prev = vec![DVec3::ZERO, DVec3::X];
    let step = DVec3::new(0.0, -0.06, 0.0); // one particle falls past the other
    let mut x = x_prev.clone();
    x[1] += step;
    let mut skin = Skin::new(0.01);
    skin.reset(&particles, &x, &x_prev);
    let k = EXTRAPOLATED_SUBSTEPS as usize;
    let (mut start, mut end) = (x.clone(), x.clone());
    end[1] += step;
    for substep in 1..=k {
        assert!(
            covers(&skin, &particles, &end, &start),
            "substep {substep} of the same motion"
        );
        start = end.clone();
        end[1] += step;
    }
    assert!(
        !covers(&skin, &particles, &end, &start),
        "past the extrapolated substeps"
    );
    // Turning aside by more than the skin ends the lists at once.
    let mut turned = x.clone();
    turned[1] += DVec3::new(0.011, 0.0, 0.0);
    assert!(!covers(&skin, &particles, &turned, &x));
    turned[1].x -= 0.002; // 9 mm aside: within S
    assert!(covers(&skin, &particles, &turned, &x));
}

#[test]
fn a_common_motion_keeps_the_lists_and_a_relative_one_beyond_the_skin_does_not() {
    let particles = [0, 1];
    let x = vec![DVec3::ZERO, DVec3::X];
    let mut skin = Skin::new(0.1);
    assert!(!covers(&skin, &particles, &x, &x), "no lists yet");
    skin.reset(&particles, &x, &x);
    let shifted: Vec<DVec3> = x.iter().map(|&p| p + DVec3::new(5.0, -3.0, 2.0)).collect();
    assert!(covers(&skin, &particles, &shifted, &shifted));
    let mut apart = shifted.clone();
    apart[1].x += 0.09;
    assert!(covers(&skin, &particles, &apart, &shifted));
    apart[1].x += 0.02;
    assert!(!covers(&skin, &particles, &apart, &shifted));
    apart[1] = DVec3::NAN;
    assert!(!covers(&skin, &particles, &apart, &shifted));
    apart[1] = shifted[1];
    apart[1].y = f64::NAN; // one coordinate is enough
    assert!(!covers(&skin, &particles, &apart, &shifted));
    apart[1] = DVec3::splat(1e14); // beyond what the rounding slack is made for
    assert!(!covers(&skin, &particles, &apart, &shifted));
}

#[test]
fn the_extrapolation_shortens_when_motion_turns_and_grows_back_when_it_does_not() {
    let particles = [0, 1];
    let mut skin = Skin::new(0.01);
    let mut x = vec![DVec3::ZERO, DVec3::X];
    // Particle 1 moves 5 cm per substep: it turns a right angle every substep, then
    // goes straight.
    let mut rebuilds = Vec::new();
    for substep in 0..20 {
        let motion = match substep {
            0..6 if substep % 2 == 1 => DVec3::new(0.05, 0.0, 0.0),
            0..6 => DVec3::new(0.0, 0.05, 0.0),
            _ => DVec3::new(0.0, 0.0, 0.05),
        };
        let x_prev = x.clone();
        x[1] += motion;
        let stray = skin.stray(&particles, &x, &x_prev);
        if skin.update(stray, &particles, &x, &x_prev) {
            rebuilds.push((substep, skin.extrapolated));
        }
    }
    // Every turn rebuilds and leaves K = 1; going straight, lists last K substeps and K
    // doubles up to 8 (the turn at substep 6 sets K = 1 first).
    let expected = [(0, 8), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)];
    assert_eq!(&rebuilds[..7], &expected);
    assert_eq!(&rebuilds[7..], &[(8, 2), (11, 4), (16, 8)]);
}
