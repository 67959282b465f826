//! Scenes for the tests: grids, spheres, a draped cloth, box edges.

use super::super::math::{self, normalize};
use super::super::{object_colour, PreviewMesh};

/// A `n`×`n`-vertex grid over `[-half, half]²` in x/z with height `y(x, z)`, as triangles.
pub(super) fn grid_mesh(
    n: usize,
    half: f32,
    y: impl Fn(f32, f32) -> f32,
    colour: [u8; 3],
) -> PreviewMesh {
    let mut positions = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            let x = -half + 2.0 * half * i as f32 / (n - 1) as f32;
            let z = -half + 2.0 * half * j as f32 / (n - 1) as f32;
            positions.push([x, y(x, z), z]);
        }
    }
    let mut triangles = Vec::with_capacity(2 * (n - 1) * (n - 1));
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let a = (j * n + i) as u32;
            let (b, c, d) = (a + 1, a + n as u32, a + n as u32 + 1);
            triangles.push([a, c, b]);
            triangles.push([b, c, d]);
        }
    }
    PreviewMesh {
        positions,
        triangles,
        colour,
        ..PreviewMesh::default()
    }
}

/// A UV sphere of `rings`×`segments` quads, outward-facing, marked as a collider.
pub(super) fn sphere(centre: [f32; 3], r: f32, rings: usize, segments: usize) -> PreviewMesh {
    use std::f32::consts::PI;
    let mut positions = Vec::new();
    for j in 0..=rings {
        let theta = PI * j as f32 / rings as f32;
        for i in 0..segments {
            let phi = 2.0 * PI * i as f32 / segments as f32;
            let (s, c) = (theta.sin(), theta.cos());
            positions.push([
                centre[0] + r * s * phi.cos(),
                centre[1] + r * c,
                centre[2] + r * s * phi.sin(),
            ]);
        }
    }
    let mut triangles = Vec::new();
    for j in 0..rings {
        for i in 0..segments {
            let at = |jj: usize, ii: usize| (jj * segments + ii % segments) as u32;
            let (a, b, c, d) = (at(j, i), at(j, i + 1), at(j + 1, i), at(j + 1, i + 1));
            triangles.push([a, b, c]);
            triangles.push([b, d, c]);
        }
    }
    PreviewMesh {
        positions,
        triangles,
        collider: true,
        colour: [255, 0, 255],
        ..PreviewMesh::default()
    }
}

/// A cloth draped over a ball with a hanging rope: what a preview of a real frame looks like.
pub(super) fn draped_scene(n: usize) -> (Vec<PreviewMesh>, [f32; 3], [f32; 3]) {
    use std::f32::consts::PI;
    let cloth = grid_mesh(
        n,
        1.0,
        |x, z| {
            let r = (x * x + z * z).sqrt();
            let bump = if r < 1.1 {
                0.5 + 0.5 * (PI * r / 1.1).cos()
            } else {
                0.0
            };
            let folds = 0.1 * (7.0 * z.atan2(x)).sin() * (r / 1.4).min(1.0);
            0.45 + 0.6 * bump + folds - 0.25 * (r - 1.1).max(0.0)
        },
        object_colour(0),
    );
    let ball = sphere([0.0, 0.5, 0.0], 0.5, 16, 32);
    let pebble = sphere([-0.9, 0.25, 0.9], 0.25, 12, 24);
    let mut rope = PreviewMesh {
        colour: object_colour(1),
        ..PreviewMesh::default()
    };
    for k in 0..=30 {
        let t = k as f32 / 30.0;
        rope.positions
            .push([1.3, 1.4 - 0.9 * t - 0.3 * (PI * t).sin(), -0.6 + 1.2 * t]);
        if k > 0 {
            rope.lines.push([k - 1, k]);
        }
    }
    (
        vec![ball, cloth, rope, pebble],
        [-1.3, 0.0, -1.3],
        [1.3, 1.6, 1.3],
    )
}

/// The 12 edges of a box as grey lines, to see the framing.
pub(super) fn box_edges(lo: [f32; 3], hi: [f32; 3]) -> PreviewMesh {
    let positions = (0..8)
        .map(|k| {
            let pick = |bit: usize, a: usize| if k & bit == 0 { lo[a] } else { hi[a] };
            [pick(1, 0), pick(2, 1), pick(4, 2)]
        })
        .collect();
    let mut lines = Vec::new();
    for a in 0..8u32 {
        for bit in [1, 2, 4] {
            if a & bit == 0 {
                lines.push([a, a | bit]);
            }
        }
    }
    PreviewMesh {
        positions,
        lines,
        collider: true,
        ..PreviewMesh::default()
    }
}

/// An octahedron subdivided `levels` times and pushed onto the sphere with `sqrt` only (no
/// platform `sin`/`cos`, so the mesh itself is the same on every machine), as a collider.
pub(super) fn ball(centre: [f32; 3], r: f32, levels: usize) -> PreviewMesh {
    let mut tris: Vec<[[f32; 3]; 3]> = Vec::new();
    let axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for sx in [1.0f32, -1.0] {
        for sy in [1.0f32, -1.0] {
            for sz in [1.0f32, -1.0] {
                let (x, y, z) = (
                    math::scale(axes[0], sx),
                    math::scale(axes[1], sy),
                    math::scale(axes[2], sz),
                );
                tris.push(if sx * sy * sz > 0.0 {
                    [x, y, z]
                } else {
                    [x, z, y]
                });
            }
        }
    }
    for _ in 0..levels {
        let mid = |a: [f32; 3], b: [f32; 3]| normalize(math::add(a, b)).unwrap();
        tris = tris
            .iter()
            .flat_map(|&[a, b, c]| {
                let (ab, bc, ca) = (mid(a, b), mid(b, c), mid(c, a));
                [[a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca]]
            })
            .collect();
    }
    let positions = tris
        .iter()
        .flatten()
        .map(|p| math::add(centre, math::scale(*p, r)))
        .collect();
    let triangles = (0..tris.len() as u32)
        .map(|k| [3 * k, 3 * k + 1, 3 * k + 2])
        .collect();
    PreviewMesh {
        positions,
        triangles,
        collider: true,
        ..PreviewMesh::default()
    }
}
