//! A rope's line segments as a renderable tube: a ring of `sides` vertices around every rope
//! vertex, quads between consecutive rings and, at the open ends, optional triangle-fan caps
//! (so the tube is closed). Loose edges render as nothing; a tube renders as a rope.
//!
//! **Chains.** The segments are cut into chains: maximal paths through vertices with exactly
//! two segments. A chain starts and ends at a vertex with one segment or with three or more (a
//! branch point, where each chain gets its own end); segments left over form closed loops. The
//! order is deterministic: open chains from their lowest end vertex, in vertex order, then
//! loops from their first segment in file order.
//!
//! **Frames (parallel transport).** Ring `i` is `p_i + r (u_i cos θ_s + w_i sin θ_s)` with
//! `θ_s = 2π s / sides`, `w_i = t_i × u_i` and the unit tangent `t_i` along
//! `p_i+1 − p_i−1` (one-sided at the ends). `u_i` is `u_i−1` carried by the smallest rotation
//! that takes `t_i−1` to `t_i` (the discrete parallel transport of Bergou et al. 2008): the
//! frame never spins about the rope, however it bends, so the rings do not twist or flip. The
//! first frame is the rest shape's (`u` = the world axis least aligned with the rest tangent,
//! made perpendicular to it) carried by the smallest rotation from the rest tangent to the
//! current one, so each frame is a function of that frame's positions alone (no state: resumed
//! runs write the same bytes) and turns smoothly with the rope. On a closed loop, the angle by
//! which transport around the loop misses the first frame is spread evenly over the rings.
//! Normals are the radial directions; a cap's centre has `∓t`.

use glam::DVec3;
use std::f64::consts::TAU;

/// A path through the rope's vertices.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    pub vertices: Vec<u32>,
    /// The last vertex connects back to the first.
    pub closed: bool,
}

/// Cuts `segments` (over `vertex_count` vertices) into chains; see the module notes.
pub fn chains(segments: &[[u32; 2]], vertex_count: usize) -> Vec<Chain> {
    let mut incident: Vec<Vec<usize>> = vec![Vec::new(); vertex_count];
    for (k, &[a, b]) in segments.iter().enumerate() {
        if a != b {
            incident[a as usize].push(k);
            incident[b as usize].push(k);
        }
    }
    let mut used = vec![false; segments.len()];
    let other = |k: usize, v: u32| {
        let [a, b] = segments[k];
        if a == v {
            b
        } else {
            a
        }
    };
    let walk = |start: u32, first: usize, used: &mut Vec<bool>| {
        let mut vertices = vec![start];
        let (mut at, mut via) = (start, first);
        loop {
            used[via] = true;
            at = other(via, at);
            vertices.push(at);
            let next = incident[at as usize].iter().copied().find(|&k| !used[k]);
            match next {
                Some(k) if incident[at as usize].len() == 2 => via = k,
                _ => break,
            }
        }
        vertices
    };
    let mut out = Vec::new();
    for v in 0..vertex_count as u32 {
        if incident[v as usize].len() == 2 {
            continue;
        }
        for k in incident[v as usize].clone() {
            if !used[k] {
                let vertices = walk(v, k, &mut used);
                out.push(Chain {
                    vertices,
                    closed: false,
                });
            }
        }
    }
    for k in 0..segments.len() {
        let [a, b] = segments[k];
        if !used[k] && a != b {
            let mut vertices = walk(a, k, &mut used);
            vertices.pop(); // back at `a`
            out.push(Chain {
                vertices,
                closed: true,
            });
        }
    }
    out
}

/// The smallest rotation taking unit `from` to unit `to`, applied to `v`. Opposite
/// directions turn by π about `v`'s own axis when `v` is perpendicular to `from` (so `v` is
/// kept), a deterministic choice.
fn rotate_between(from: DVec3, to: DVec3, v: DVec3) -> DVec3 {
    let c = from.dot(to);
    let k = from.cross(to);
    if 1.0 + c < 1e-12 {
        // Half turn about the axis perpendicular to `from` closest to `v`.
        let axis = (v - from * v.dot(from))
            .try_normalize()
            .unwrap_or_else(|| least_aligned_perpendicular(from));
        return axis * (2.0 * v.dot(axis)) - v;
    }
    v * c + k.cross(v) + k * (k.dot(v) / (1.0 + c))
}

/// The world axis least aligned with unit `t` (first of X, Y, Z on a tie), made perpendicular
/// to `t` and unit length.
fn least_aligned_perpendicular(t: DVec3) -> DVec3 {
    let a = t.abs();
    let axis = if a.x <= a.y && a.x <= a.z {
        DVec3::X
    } else if a.y <= a.z {
        DVec3::Y
    } else {
        DVec3::Z
    };
    (axis - t * axis.dot(t)).normalize()
}

/// `u` made perpendicular to unit `t` and unit length (any perpendicular when `u ∥ t`).
fn perpendicular(u: DVec3, t: DVec3) -> DVec3 {
    (u - t * u.dot(t))
        .try_normalize()
        .unwrap_or_else(|| least_aligned_perpendicular(t))
}

/// Unit tangents of one chain at `positions`: central differences, one-sided at open ends;
/// where points coincide, the neighbour's tangent or, for the first, `fallback`.
fn tangents(chain: &Chain, positions: &[DVec3], fallback: DVec3, out: &mut Vec<DVec3>) {
    let n = chain.vertices.len();
    let p = |i: usize| positions[chain.vertices[i] as usize];
    out.clear();
    for i in 0..n {
        let (prev, next) = if chain.closed {
            ((i + n - 1) % n, (i + 1) % n)
        } else {
            (i.saturating_sub(1), (i + 1).min(n - 1))
        };
        let previous = out.last().copied().unwrap_or(fallback);
        let t = (p(next) - p(prev))
            .try_normalize()
            .or_else(|| (p(next) - p(i)).try_normalize())
            .or_else(|| (p(i) - p(prev)).try_normalize())
            .unwrap_or(previous);
        out.push(t);
    }
}

/// A tube around every chain of a rope, with its rest frames.
#[derive(Debug, Clone)]
pub struct Tube {
    pub chains: Vec<Chain>,
    pub sides: usize,
    pub radius: f64,
    pub caps: bool,
    /// Per chain, the rest tangent and rest `u` at its first vertex.
    rest: Vec<(DVec3, DVec3)>,
}

impl Tube {
    pub fn new(
        segments: &[[u32; 2]],
        rest_positions: &[DVec3],
        sides: usize,
        radius: f64,
        caps: bool,
    ) -> Self {
        let chains = chains(segments, rest_positions.len());
        let mut t = Vec::new();
        let rest = chains
            .iter()
            .map(|chain| {
                tangents(chain, rest_positions, DVec3::X, &mut t);
                (t[0], least_aligned_perpendicular(t[0]))
            })
            .collect();
        Tube {
            chains,
            sides,
            radius,
            caps,
            rest,
        }
    }

    fn capped(&self, chain: &Chain) -> bool {
        self.caps && !chain.closed
    }

    /// The rope vertex each tube vertex belongs to (velocities and `id` come from it), in
    /// tube vertex order: per chain its rings, then its start and end cap centres.
    pub fn sources(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for chain in &self.chains {
            for &v in &chain.vertices {
                out.extend(std::iter::repeat_n(v, self.sides));
            }
            if self.capped(chain) {
                out.push(chain.vertices[0]);
                out.push(*chain.vertices.last().expect("a chain has two vertices"));
            }
        }
        out
    }

    /// The tube's polygons, outward facing, into `face_indices`/`face_offsets` (which must
    /// start as `[]` and `[0]`): quads between rings, triangle fans at the caps.
    pub fn faces(&self, face_indices: &mut Vec<u32>, face_offsets: &mut Vec<u32>) {
        let s = self.sides as u32;
        let mut push = |corners: &[u32]| {
            face_indices.extend_from_slice(corners);
            face_offsets.push(face_indices.len() as u32);
        };
        let mut base = 0u32;
        for chain in &self.chains {
            let n = chain.vertices.len() as u32;
            let rings = if chain.closed { n } else { n - 1 };
            for i in 0..rings {
                let (a, b) = (base + i * s, base + ((i + 1) % n) * s);
                for k in 0..s {
                    let k1 = (k + 1) % s;
                    push(&[a + k, a + k1, b + k1, b + k]);
                }
            }
            base += n * s;
            if self.capped(chain) {
                let (start, end) = (base, base + 1);
                let last = base - s;
                let first = last - (n - 1) * s;
                for k in 0..s {
                    let k1 = (k + 1) % s;
                    push(&[start, first + k1, first + k]);
                }
                for k in 0..s {
                    let k1 = (k + 1) % s;
                    push(&[end, last + k, last + k1]);
                }
                base += 2;
            }
        }
    }

    /// Tube vertex positions and normals for rope vertex positions `positions`.
    pub fn frame(&self, positions: &[DVec3], out: &mut Vec<DVec3>, normals: &mut Vec<DVec3>) {
        out.clear();
        normals.clear();
        let mut t = Vec::new();
        for (chain, &(rest_t, rest_u)) in self.chains.iter().zip(&self.rest) {
            tangents(chain, positions, rest_t, &mut t);
            let frames = self.transport(chain, &t, rotate_between(rest_t, t[0], rest_u));
            for (i, &v) in chain.vertices.iter().enumerate() {
                let (u, w) = frames[i];
                for k in 0..self.sides {
                    let theta = TAU * k as f64 / self.sides as f64;
                    let radial = u * libm::cos(theta) + w * libm::sin(theta);
                    out.push(positions[v as usize] + radial * self.radius);
                    normals.push(radial);
                }
            }
            if self.capped(chain) {
                let last = chain.vertices.len() - 1;
                out.push(positions[chain.vertices[0] as usize]);
                normals.push(-t[0]);
                out.push(positions[chain.vertices[last] as usize]);
                normals.push(t[last]);
            }
        }
    }

    /// `(u_i, w_i)` along a chain from `u0`, by parallel transport (module notes).
    fn transport(&self, chain: &Chain, t: &[DVec3], u0: DVec3) -> Vec<(DVec3, DVec3)> {
        let mut u = perpendicular(u0, t[0]);
        let mut frames = Vec::with_capacity(t.len());
        frames.push(u);
        for i in 1..t.len() {
            u = perpendicular(rotate_between(t[i - 1], t[i], u), t[i]);
            frames.push(u);
        }
        if chain.closed && t.len() > 2 {
            // Around the loop and back to the start: spread the miss over the rings.
            let back = perpendicular(rotate_between(t[t.len() - 1], t[0], u), t[0]);
            let miss = libm::atan2(back.cross(frames[0]).dot(t[0]), back.dot(frames[0]));
            for (i, f) in frames.iter_mut().enumerate() {
                let angle = miss * i as f64 / t.len() as f64;
                let w = t[i].cross(*f);
                *f = *f * libm::cos(angle) + w * libm::sin(angle);
            }
        }
        frames
            .into_iter()
            .zip(t)
            .map(|(u, &t)| (u, t.cross(u)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_into_chains_at_ends_and_branches_and_loops() {
        // 0-1-2-3 with a branch 2-4, and a loop 5-6-7.
        let segments = [[0, 1], [1, 2], [2, 3], [2, 4], [5, 6], [6, 7], [7, 5]];
        let chains = chains(&segments, 8);
        let paths: Vec<(Vec<u32>, bool)> =
            chains.into_iter().map(|c| (c.vertices, c.closed)).collect();
        assert_eq!(
            paths,
            vec![
                (vec![0, 1, 2], false),
                (vec![2, 3], false),
                (vec![2, 4], false),
                (vec![5, 6, 7], true)
            ]
        );
    }

    #[test]
    fn a_straight_rope_gives_round_outward_rings_and_closed_caps() {
        let positions: Vec<DVec3> = (0..4).map(|i| DVec3::new(i as f64, 1.0, 0.0)).collect();
        let tube = Tube::new(&[[0, 1], [1, 2], [2, 3]], &positions, 6, 0.1, true);
        let (mut out, mut normals) = (Vec::new(), Vec::new());
        tube.frame(&positions, &mut out, &mut normals);
        assert_eq!(out.len(), 4 * 6 + 2);
        assert_eq!(tube.sources().len(), out.len());
        for (k, (p, n)) in out.iter().zip(&normals).enumerate().take(24) {
            let axis = positions[k / 6];
            assert!(((*p - axis).length() - 0.1).abs() < 1e-12);
            assert!((((*p - axis) / 0.1) - *n).length() < 1e-12);
        }
        let (mut faces, mut offsets) = (Vec::new(), vec![0]);
        tube.faces(&mut faces, &mut offsets);
        assert_eq!(offsets.len() - 1, 3 * 6 + 2 * 6);
        // Closed: every edge is shared by exactly two faces, in opposite directions.
        let mut directed = std::collections::BTreeSet::new();
        for w in offsets.windows(2) {
            let face = &faces[w[0] as usize..w[1] as usize];
            for k in 0..face.len() {
                assert!(directed.insert((face[k], face[(k + 1) % face.len()])));
            }
        }
        for &(a, b) in &directed {
            assert!(directed.contains(&(b, a)), "edge {a}-{b} is open");
        }
        // Outward: each face's normal points away from the rope axis or along it at caps.
        for w in offsets.windows(2) {
            let face = &faces[w[0] as usize..w[1] as usize];
            let [a, b, c] = [0, 1, 2].map(|k| out[face[k] as usize]);
            let n = (b - a).cross(c - a);
            let centre = face.iter().map(|&k| out[k as usize]).sum::<DVec3>() / face.len() as f64;
            let outward = centre - DVec3::new(centre.x.clamp(0.0, 3.0), 1.0, 0.0);
            assert!(n.dot(outward) > 0.0 || n.dot(DVec3::X * (centre.x - 1.5)) > 0.0);
        }
    }

    #[test]
    fn frames_do_not_twist_or_flip_along_a_bent_rope() {
        // A quarter circle in the XY plane: transport keeps u in the binormal direction ±Z
        // or in-plane, never rotating about the tangent.
        let positions: Vec<DVec3> = (0..=16)
            .map(|i| {
                let a = std::f64::consts::FRAC_PI_2 * i as f64 / 16.0;
                DVec3::new(a.cos(), a.sin(), 0.0)
            })
            .collect();
        let segments: Vec<[u32; 2]> = (0..16).map(|i| [i, i + 1]).collect();
        let tube = Tube::new(&segments, &positions, 4, 0.05, false);
        let (mut out, mut normals) = (Vec::new(), Vec::new());
        tube.frame(&positions, &mut out, &mut normals);
        // The first ring's u is in the plane (least aligned axis Z is perpendicular to the
        // plane, so u = Z); transport about in-plane bends keeps it Z.
        for i in 0..=16 {
            assert!((normals[i * 4] - DVec3::Z).length() < 1e-9, "ring {i}");
        }
        // The same rope rotated about its own start tangent keeps its frames continuous:
        // consecutive rings' u differ by little.
        for i in 1..=16 {
            assert!(normals[i * 4].dot(normals[(i - 1) * 4]) > 0.99);
        }
    }

    #[test]
    fn degenerate_ropes_stay_finite() {
        let positions = vec![DVec3::ONE; 3];
        let tube = Tube::new(&[[0, 1], [1, 2]], &positions, 3, 0.01, true);
        let (mut out, mut normals) = (Vec::new(), Vec::new());
        tube.frame(&positions, &mut out, &mut normals);
        assert!(out.iter().chain(&normals).all(|v| v.is_finite()));
        // Reversed entirely: a half turn, still finite and unit.
        let positions: Vec<DVec3> = (0..3).map(|i| DVec3::X * i as f64).collect();
        let tube = Tube::new(&[[0, 1], [1, 2]], &positions, 3, 0.01, true);
        let reversed: Vec<DVec3> = positions.iter().map(|p| -*p).collect();
        tube.frame(&reversed, &mut out, &mut normals);
        assert!(normals.iter().all(|n| (n.length() - 1.0).abs() < 1e-12));
    }
}
