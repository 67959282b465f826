//! Pairs that are close in the rest shape, found once: a self-colliding object's particles,
//! triangles and edges closer than `2r` at rest start out in contact and are held apart by
//! the object's own constraints, so they never become contacts
//! ([`crate::solver::contacts`]). The near-list searches ask that question for every pair
//! of boxes that overlap; answering it from this table (a binary search in a short sorted
//! row) instead of measuring the rest distance again each time gives the same answers at a
//! fraction of the cost.

use super::wide_bvh::WideBvh;
use glam::DVec3;

/// For every query (a particle, an edge), the items (triangles, edges) it is close to at
/// rest, ascending.
#[derive(Debug, Clone, Default)]
pub struct RestClose {
    /// Row `q` is `items[offsets[q]..offsets[q + 1]]`.
    offsets: Vec<u32>,
    items: Vec<u32>,
}

impl RestClose {
    /// The table for queries `0..queries`, each with its rest box `query_box(q)`, against
    /// items with rest boxes `item_boxes`. Boxes must be grown so that a close pair's boxes
    /// overlap (by `r` each for pairs closer than `2r`); `close(q, i)` decides exactly.
    pub fn build(
        queries: usize,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        item_boxes: &[(DVec3, DVec3)],
        close: impl Fn(u32, u32) -> bool,
    ) -> RestClose {
        let tree = WideBvh::over_boxes(item_boxes);
        // Pairs come out grouped by query, ascending, each query's items ascending.
        let mut pairs = Vec::new();
        tree.overlapping_pairs(0..queries as u32, query_box, close, &mut pairs);
        let mut offsets = vec![0u32; queries + 1];
        for &[q, _] in &pairs {
            offsets[q as usize + 1] += 1;
        }
        for q in 0..queries {
            offsets[q + 1] += offsets[q];
        }
        RestClose {
            offsets,
            items: pairs.iter().map(|&[_, item]| item).collect(),
        }
    }

    /// Whether `item` is close to `query` at rest.
    pub fn contains(&self, query: u32, item: u32) -> bool {
        let q = query as usize;
        match (self.offsets.get(q), self.offsets.get(q + 1)) {
            (Some(&start), Some(&end)) => self.items[start as usize..end as usize]
                .binary_search(&item)
                .is_ok(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::bvh::bounds;

    #[test]
    fn finds_exactly_the_close_pairs() {
        // Points along x every 0.1 against themselves: close when within 0.25.
        let points: Vec<DVec3> = (0..20)
            .map(|k| DVec3::new(0.1 * k as f64, 0.0, 0.0))
            .collect();
        let boxes: Vec<_> = points.iter().map(|&p| bounds([p], 0.13)).collect();
        let close =
            |q: u32, i: u32| q != i && points[q as usize].distance(points[i as usize]) < 0.25;
        let table = RestClose::build(points.len(), |q| boxes[q as usize], &boxes, close);
        for q in 0..20u32 {
            for i in 0..20u32 {
                assert_eq!(table.contains(q, i), close(q, i), "{q} {i}");
            }
        }
        assert!(
            !table.contains(25, 0),
            "queries past the end are close to nothing"
        );
    }
}
