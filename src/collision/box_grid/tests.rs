//! The grid against the tree and brute force, and the break-even of the two.

use super::*;
use crate::collision::bvh::bounds;

/// A fixed xorshift sequence in [0, 1).
fn uniform(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// Boxes about `size` wide around points of a wavy sheet `2 × 1` (folded over itself
/// once), in a random order; the query boxes are of the same kind.
fn sheet(count: usize, size: f64, seed: u64) -> Vec<(DVec3, DVec3)> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            let (u, v) = (2.0 * uniform(&mut state), uniform(&mut state));
            let fold = if u > 1.0 { 2.0 - u } else { u };
            let height = 0.05 * (7.0 * u).sin() + if u > 1.0 { 0.03 } else { 0.0 };
            let centre = DVec3::new(fold, height, v);
            let grow = size * (0.5 + 0.5 * uniform(&mut state));
            let stretch = DVec3::new(uniform(&mut state), 0.0, uniform(&mut state)) * size;
            let (min, max) = bounds([centre], grow);
            (min, max + stretch)
        })
        .collect()
}

/// Every `[q, item]` whose boxes rounded outward overlap (as the tree compares them),
/// `item > q` if `later`, kept by `keep`, sorted.
fn brute(
    queries: &[(DVec3, DVec3)],
    boxes: &[(DVec3, DVec3)],
    later: bool,
    keep: impl Fn(u32, u32) -> bool,
) -> Vec<[u32; 2]> {
    let mut pairs = Vec::new();
    for (q, &(qmin, qmax)) in queries.iter().enumerate() {
        let (ql, qu) = outward(qmin, qmax);
        let query = Query {
            lower: ql,
            upper: qu,
            first: 0,
        };
        for (k, &(min, max)) in boxes.iter().enumerate() {
            let (l, u) = outward(min, max);
            let (q, k) = (q as u32, k as u32);
            if !apart(l, u, &query) && (!later || k > q) && keep(q, k) {
                pairs.push([q, k]);
            }
        }
    }
    pairs
}

/// The pairs of `index` (both kinds of search) on every scan, which must be the brute
/// force's and the tree's; returns whether the index used the grid.
fn check(index: &BoxIndex, queries: &[(DVec3, DVec3)], what: &str) -> bool {
    let keep = |q: u32, k: u32| (q + k) % 7 != 3;
    let query_box = |q: u32| queries[q as usize];
    let count = queries.len() as u32;
    let tree = WideBvh::over_boxes(&index.boxes);
    for later in [false, true] {
        let expected = brute(queries, &index.boxes, later, keep);
        let mut from_tree = Vec::new();
        let mut from_index = Vec::new();
        if later {
            tree.later_overlapping_pairs(0..count, query_box, keep, &mut from_tree);
            index.later_overlapping_pairs(0..count, query_box, keep, &mut from_index);
        } else {
            tree.overlapping_pairs(0..count, query_box, keep, &mut from_tree);
            index.overlapping_pairs(0..count, query_box, keep, &mut from_index);
        }
        // The tree's walk may miss a box with a NaN corner under a node whose box left
        // it out (`WideNode::union`); otherwise it finds the same pairs.
        let finite = |b: &(DVec3, DVec3)| b.0.is_finite() && b.1.is_finite();
        if index.boxes.iter().chain(queries).all(finite) {
            assert_eq!(from_tree, expected, "{what}: the tree, later {later}");
        }
        assert_eq!(from_index, expected, "{what}: the index, later {later}");
        if index.on_grid {
            let first = |q: u32| if later { q.saturating_add(1) } else { 0 };
            for scan in scans() {
                let mut found = Vec::new();
                index
                    .grid
                    .pairs_from(scan, 0..count, query_box, first, keep, &mut found);
                assert_eq!(found, expected, "{what}: {scan:?}, later {later}");
            }
        }
    }
    index.on_grid
}

fn scans() -> Vec<Scan> {
    let mut scans = vec![Scan::Portable];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        scans.push(Scan::Avx2);
    }
    scans
}

#[test]
fn a_sheet_of_like_boxes_is_searched_on_the_grid_with_the_trees_answers() {
    for (count, size, seed) in [(1, 0.01, 1), (40, 0.05, 2), (700, 0.02, 3), (3000, 0.01, 4)] {
        let boxes = sheet(count, size, seed);
        let index = BoxIndex::refill(None, boxes.iter().copied());
        let what = format!("{count} boxes of {size}");
        assert!(check(&index, &boxes, &what), "{what}: on the grid");
        // Queries of other sizes, some beside the sheet, against the same boxes.
        let mut queries = sheet(300, 4.0 * size, seed + 10);
        queries.extend(sheet(100, 0.2 * size, seed + 20));
        queries.push((DVec3::splat(-5.0), DVec3::splat(-4.0)));
        queries.push((DVec3::splat(4.0), DVec3::splat(5.0)));
        check(&index, &queries, &format!("{what}, other queries"));
    }
}

#[test]
fn wide_and_nan_boxes_are_tested_against_every_query() {
    let mut boxes = sheet(2000, 0.02, 5);
    // A few long boxes (a fast particle's), one with a NaN corner, one infinite.
    for k in [3, 500, 1200, 1999] {
        boxes[k].1.x += 0.7;
    }
    boxes[42].0.y = f64::NAN;
    boxes[43].1.z = f64::INFINITY;
    boxes[44].0.x = f64::NAN; // a grid axis
    let mut index = BoxIndex::refill(None, boxes.iter().copied());
    assert!(check(&index, &boxes, "wide boxes"), "still on the grid");
    assert_eq!(index.grid.wide.len(), 6, "kept aside");
    let mut queries = boxes.clone();
    queries.push((DVec3::NAN, DVec3::NAN));
    queries.push((DVec3::new(f64::NAN, 0.0, 0.0), DVec3::new(0.1, 0.1, 0.1)));
    queries.push((DVec3::ZERO, DVec3::new(0.1, f64::NAN, 0.1)));
    check(&index, &queries, "NaN queries");
    // Refilled with the boxes moved: the same buffers, the same answers.
    boxes.iter_mut().for_each(|b| *b = (b.0 * 1.3, b.1 * 1.3));
    index = BoxIndex::refill(Some(index), boxes.iter().copied());
    assert!(check(&index, &boxes, "moved"), "still on the grid");
}

#[test]
fn boxes_a_grid_would_search_slowly_go_into_the_tree() {
    // A far box spreads the cells over empty space.
    let mut far = sheet(1000, 0.01, 6);
    far[10] = bounds([DVec3::new(500.0, 0.0, 300.0)], 0.01);
    let index = BoxIndex::refill(None, far.iter().copied());
    assert!(!check(&index, &far, "a far box"), "a far box: the tree");
    // Half the boxes many times wider than the others.
    let mut mixed = sheet(1000, 0.01, 7);
    mixed.iter_mut().step_by(2).for_each(|b| b.1.x += 0.5);
    let index = BoxIndex::refill(None, mixed.iter().copied());
    assert!(
        !check(&index, &mixed, "mixed sizes"),
        "mixed sizes: the tree"
    );
    // Every box in one place.
    let piled: Vec<_> = (0..1000).map(|_| bounds([DVec3::ZERO], 0.01)).collect();
    let index = BoxIndex::refill(Some(index), piled.iter().copied());
    assert!(!check(&index, &piled, "piled"), "piled: the tree");
    // Back to a sheet: the grid again.
    let boxes = sheet(1000, 0.01, 8);
    let index = BoxIndex::refill(Some(index), boxes.iter().copied());
    assert!(
        check(&index, &boxes, "a sheet after"),
        "a sheet after: the grid"
    );
    // No boxes at all, and no finite ones.
    let index = BoxIndex::refill(Some(index), std::iter::empty());
    check(&index, &[(DVec3::ZERO, DVec3::ONE)], "no boxes");
    let nan = vec![(DVec3::NAN, DVec3::NAN); 3];
    let index = BoxIndex::refill(Some(index), nan.iter().copied());
    assert!(!check(&index, &nan, "all NaN"), "all NaN: the tree");
}

/// Not a test: the break-even of the grid and the tree (docs/benchmarks.md, "Issue 13:
/// the near-list searches on a grid"). Sheets of 2 000 boxes 3 cm wide on a square
/// metre (about a cloth's edges), stacked in layers 1 mm apart (touching), 10 cm apart
/// (the layers' axis then one of the grid's), or 1.5–3.1 cm apart with the layers' axis
/// left out of the grid (each layer alone, which the tree's walks tell and the grid's
/// cells do not), searched for their later pairs both ways, alternated; prints whether
/// the grid would be chosen, the estimated reads, the pairs and the times per query.
/// `cargo test --release --lib box_grid::tests::break_even -- --ignored --nocapture`
#[test]
#[ignore]
fn break_even() {
    use std::time::Instant;
    for (layers, gap) in [
        (1, 0.001),
        (4, 0.001),
        (16, 0.001),
        (32, 0.001),
        (8, 0.1),
        (16, 0.1),
        (32, 0.031),
        (48, 0.02),
        (64, 0.015),
    ] {
        let per_layer = 2000;
        let mut boxes = Vec::new();
        for layer in 0..layers {
            let mut state = 99 + layer as u64;
            boxes.extend((0..per_layer).map(|_| {
                let (u, v) = (uniform(&mut state), uniform(&mut state));
                let centre = DVec3::new(u, gap * layer as f64, v);
                bounds([centre], 0.015)
            }));
        }
        let count = boxes.len() as u32;
        let query_box = |q: u32| boxes[q as usize];
        let mut grid = BoxGrid::default();
        let chosen = grid.fill(&boxes);
        let estimate = grid.estimated_reads();
        let tree = WideBvh::over_boxes(&boxes);
        let (mut on_grid, mut on_tree) = (Vec::new(), Vec::new());
        let (mut grid_times, mut tree_times) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            let start = Instant::now();
            on_tree.clear();
            tree.later_overlapping_pairs(0..count, query_box, |_, _| true, &mut on_tree);
            tree_times.push(start.elapsed().as_secs_f64());
            let start = Instant::now();
            on_grid.clear();
            let after = |q: u32| q + 1;
            let keep = |_, _| true;
            let scan = Scan::chosen();
            grid.pairs_from(scan, 0..count, query_box, after, keep, &mut on_grid);
            grid_times.push(start.elapsed().as_secs_f64());
        }
        assert_eq!(on_grid, on_tree);
        let median = |t: &mut Vec<f64>| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        };
        let (g, t) = (median(&mut grid_times), median(&mut tree_times));
        println!(
            "{layers:2} layers {gap:5.3} m apart: grid chosen {chosen:5}, \
             estimated reads {estimate:4}, pairs per query {:5.1}, \
             grid {:5.0} ns, tree {:5.0} ns per query, grid / tree {:.2}",
            on_grid.len() as f64 / f64::from(count),
            g * 1e9 / f64::from(count),
            t * 1e9 / f64::from(count),
            g / t
        );
    }
}
