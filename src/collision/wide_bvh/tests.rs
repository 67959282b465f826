use super::*;
use crate::collision::bvh::{bounds, boxes_overlap};

/// A query box with NaN corners overlaps every box in [`boxes_overlap`], and so in the
/// tree walks, whose `f32` node boxes it overlaps too.
#[test]
fn a_nan_query_box_overlaps_every_leaf() {
    let boxes: Vec<_> = (0..40u32)
        .map(|k| bounds([DVec3::new(f64::from(k), 0.0, 0.0)], 0.1))
        .collect();
    let tree = WideBvh::over_boxes(&boxes);
    for nan_query in 0..6u32 {
        let query_box = |q: u32| {
            if q == nan_query {
                (DVec3::NAN, DVec3::NAN)
            } else {
                boxes[q as usize]
            }
        };
        let mut pairs = Vec::new();
        tree.overlapping_pairs(0..6, query_box, |_, _| true, &mut pairs);
        let of_nan = pairs.iter().filter(|p| p[0] == nan_query).count();
        assert_eq!(of_nan, 40, "query {nan_query}");
        assert_eq!(pairs.len(), 40 + 5, "the others find themselves alone");
    }
}

/// A kept tree's box query finds exactly the boxes that overlap the query
/// ([`boxes_overlap`]), before and after a refill that moves them, for queries beside
/// all of them (answered by the root's box alone), across them, and with NaN corners; and a
/// box in the root with a NaN coordinate is found by a query that overlaps it on the
/// other axes.
#[test]
fn box_queries_find_exactly_the_overlapping_boxes() {
    let found = |tree: &BoxTree, query: (DVec3, DVec3)| {
        let mut leaves = Vec::new();
        tree.for_each_overlapping(&mut WalkStack::default(), query, |leaf| leaves.push(leaf));
        leaves.sort_unstable();
        leaves
    };
    let brute = |boxes: &[(DVec3, DVec3)], query| -> Vec<u32> {
        (0..boxes.len() as u32)
            .filter(|&k| boxes_overlap(query, boxes[k as usize]))
            .collect()
    };
    let queries: Vec<_> = (0..120u32)
        .map(|k| {
            let u = f64::from(k);
            let centre = DVec3::new(0.03 * u - 0.6, 0.3 * (0.2 * u).sin(), 0.05 * (k % 3) as f64);
            bounds([centre], 0.01 + 0.002 * f64::from(k % 5))
        })
        .chain([
            (DVec3::NAN, DVec3::NAN),
            (DVec3::splat(9.0), DVec3::splat(10.0)),
        ])
        .collect();
    let mut boxes = wavy_boxes(200, 1);
    let mut tree = BoxTree::refill(None, boxes.iter().copied());
    for round in 0..3 {
        let (mut beside, mut empty) = (0, 0);
        for &query in &queries {
            let expected = brute(&boxes, query);
            assert_eq!(found(&tree, query), expected, "round {round}: {query:?}");
            let root = tree.tree.root_box().expect("no NaN corner");
            beside += usize::from(!boxes_overlap(query, root));
            empty += usize::from(expected.is_empty());
        }
        let enough = beside > 10 && empty >= beside;
        assert!(enough, "round {round}: {beside} beside, {empty} empty");
        // Move the boxes, and refit the tree to them.
        boxes.iter_mut().for_each(|b| *b = (b.0 * 1.5, b.1 * 1.5));
        tree = BoxTree::refill(Some(tree), boxes.iter().copied());
    }
    // A NaN coordinate overlaps on its axis whatever the query; the others still decide.
    // In a tree of three boxes, all in the root, the walk finds box 1 (NaN `y`) from a
    // query over it in `x` and `z` but far above everything in `y`: beside the union of
    // the finite corners, so the tree must keep no root box to test it against. (Deeper
    // down, a parent's `f32` box leaves a child's NaN out, [`WideNode::union`], and the
    // walk does not reach it either.)
    let mut three = wavy_boxes(3, 1);
    three[1].1.y = f64::NAN;
    let (low, high) = three[1];
    let above = (
        DVec3::new(low.x, 9.0, low.z),
        DVec3::new(high.x, 10.0, high.z),
    );
    let tree = BoxTree::refill(None, three.iter().copied());
    assert_eq!(
        found(&tree, above),
        vec![1],
        "a NaN axis overlaps every query"
    );
}

/// Boxes along a wavy line, in index order along it (as a mesh's items mostly are) or in
/// an order unrelated to it.
fn wavy_boxes(count: u32, spread: u32) -> Vec<(DVec3, DVec3)> {
    (0..count)
        .map(|k| {
            let u = f64::from((k * spread) % count);
            let centre = DVec3::new(0.02 * u, 0.2 * (0.05 * u).sin(), 0.0);
            bounds([centre], 0.04 + 0.03 * (f64::from(k) * 0.7).sin().abs())
        })
        .collect()
}

/// All pairs `[i, j]` (`j > i` only, if `later`) whose boxes overlap and `keep` accepts,
/// sorted: what a tree search must find. Overlap is tested on the boxes rounded outward
/// to `f32` (`rounded`) or exactly ([`boxes_overlap`]).
fn brute_pairs(
    boxes: &[(DVec3, DVec3)],
    later: bool,
    rounded: bool,
    keep: impl Fn(u32, u32) -> bool,
) -> Vec<[u32; 2]> {
    let overlap = |a: (DVec3, DVec3), b: (DVec3, DVec3)| {
        if !rounded {
            return boxes_overlap(a, b);
        }
        let ((a_low, a_high), (b_low, b_high)) = (outward(a.0, a.1), outward(b.0, b.1));
        (0..3).all(|k| !(a_low[k] > b_high[k] || a_high[k] < b_low[k]))
    };
    let n = boxes.len() as u32;
    let mut pairs = Vec::new();
    for i in 0..n {
        for j in (if later { i + 1 } else { 0 })..n {
            if overlap(boxes[i as usize], boxes[j as usize]) && keep(i, j) {
                pairs.push([i, j]);
            }
        }
    }
    pairs
}

/// Exactly the pairs of the rounded boxes, and among them every pair of the `f64` boxes.
fn assert_found(found: &[[u32; 2]], boxes: &[(DVec3, DVec3)], later: bool, why: &str) {
    let keep = |i: u32, j: u32| !(i + j).is_multiple_of(3);
    assert_eq!(found, brute_pairs(boxes, later, true, keep), "{why}");
    for pair in brute_pairs(boxes, later, false, keep) {
        assert!(found.binary_search(&pair).is_ok(), "{why}: {pair:?}");
    }
}

#[test]
fn later_pairs_are_the_overlapping_pairs_after_each_query() {
    for spread in [1, 37] {
        let boxes = wavy_boxes(200, spread);
        let tree = WideBvh::over_boxes(&boxes);
        let keep = |i: u32, j: u32| !(i + j).is_multiple_of(3);
        let mut later = vec![[7, 7]]; // appended to
        tree.later_overlapping_pairs(0..200, |q| boxes[q as usize], keep, &mut later);
        assert_eq!(later.remove(0), [7, 7]);
        assert!(later.len() > 100, "{} pairs: too few to test", later.len());
        assert_found(&later, &boxes, true, &format!("later, spread {spread}"));
        let mut all = Vec::new();
        tree.overlapping_pairs(0..200, |q| boxes[q as usize], keep, &mut all);
        assert_found(&all, &boxes, false, &format!("all, spread {spread}"));
    }
}

/// Boxes that touch at one face exactly, and boxes apart by a gap the `f32` rounding
/// closes (found) or by one it does not (not found).
#[test]
fn touching_boxes_are_found_and_boxes_apart_are_not() {
    let unit = |x: f64| (DVec3::new(x, 0.0, 0.0), DVec3::new(x + 1.0, 1.0, 1.0));
    for (gap, found) in [(0.0, true), (1e-9, true), (1e-4, false)] {
        let boxes = [unit(0.0), unit(1.0 + gap)];
        let tree = WideBvh::over_boxes(&boxes);
        let mut pairs = Vec::new();
        tree.later_overlapping_pairs(0..2, |q| boxes[q as usize], |_, _| true, &mut pairs);
        assert_eq!(pairs == [[0, 1]], found, "gap {gap}");
    }
}

/// The levels a tree heads grow as half the binary tree's depth: a million boxes take
/// 10 of the 16 the walk's stack is made for, and every level count a run can meet
/// passes the check in `over_boxes`.
#[test]
fn wide_levels_are_half_the_binary_depth() {
    for (count, expected) in [(1, 1), (4, 1), (5, 2), (16, 2), (17, 3), (1 << 20, 10)] {
        let boxes = wavy_boxes(count, 1);
        let mut tree = WideBvh::default();
        let (_, levels) = tree.collapse(&Bvh::over_boxes(&boxes), 0);
        assert_eq!(levels, expected, "{count} boxes");
    }
}

/// Trees of every size up to a few levels (one leaf, slots left unused, binary leaves
/// at odd depths), refitted to boxes that moved far from where they were built, find
/// what brute force finds; a refit with another number of boxes is refused.
#[test]
fn every_size_refitted_finds_what_brute_force_finds() {
    for count in 1..=70u32 {
        let built = wavy_boxes(count, 1);
        let mut tree = WideBvh::over_boxes(&built);
        let moved = wavy_boxes(count, 37);
        assert!(tree.refit_boxes(&moved));
        let keep = |i: u32, j: u32| !(i + j).is_multiple_of(3);
        let mut later = Vec::new();
        tree.later_overlapping_pairs(0..count, |q| moved[q as usize], keep, &mut later);
        assert_found(&later, &moved, true, &format!("{count} boxes"));
        assert!(!tree.refit_boxes(&moved[1..]), "{count} boxes");
    }
    let mut empty = WideBvh::over_boxes(&[]);
    let mut pairs = Vec::new();
    empty.overlapping_pairs(0..3, |_| unreachable!(), |_, _| true, &mut pairs);
    assert!(pairs.is_empty());
    assert!(empty.refit_boxes(&[]) && !empty.refit_boxes(&wavy_boxes(2, 1)));
}
