//! Soft contact shadows on the ground grid, so it reads whether things rest on the ground or
//! hover above it.
//!
//! Everything is looked at straight from above: the triangles of all meshes are rasterised
//! onto a square grid of cells covering the ground's disc, each cell keeping the lowest height
//! `h` above the ground of the surface over its centre. A cell's darkness is
//! `(1 − h/falloff)²` for `0 ≤ h < falloff` (1 on the ground, 0 from `falloff` up), then the
//! darkness is blurred with two passes of a separable box filter (close to a Gaussian) and
//! sampled bilinearly at each ground pixel. Triangles lying on the ground (or below it) cast
//! nothing: a floor collider must not darken the whole floor.

use super::camera::Ground;
use super::math::{is_finite, V3};
use super::PreviewMesh;

/// Cells along each side of the map.
const CELLS: usize = 160;
/// Half-width of the box filter, in cells.
const BLUR: usize = 2;
/// Height (in grid steps) above which a surface casts no shadow.
const FALLOFF_STEPS: f32 = 2.0;
/// Height (in grid steps) up to which a triangle counts as lying on the ground.
const ON_GROUND_STEPS: f32 = 0.01;

/// Darkness in `[0, 1]` over a square of the ground plane.
pub(crate) struct ShadowMap {
    /// World `x` and `z` of the map's corner cell's outer corner.
    origin: [f32; 2],
    /// Cells per metre.
    inv_cell: f32,
    /// Row-major (`z` rows, `x` columns) darkness.
    dark: Vec<f32>,
}

impl ShadowMap {
    /// The map of `meshes` over `ground`'s disc; `None` when the ground is not usable.
    pub fn new(ground: &Ground, meshes: &[PreviewMesh]) -> Option<ShadowMap> {
        let cell = 2.0 * ground.radius / CELLS as f32;
        if !(cell > 0.0 && cell.is_finite() && ground.y.is_finite() && ground.step.is_finite()) {
            return None;
        }
        let origin = [
            ground.centre[0] - ground.radius,
            ground.centre[1] - ground.radius,
        ];
        let mut map = ShadowMap {
            origin,
            inv_cell: 1.0 / cell,
            dark: vec![f32::INFINITY; CELLS * CELLS],
        };
        for mesh in meshes {
            map.splat_mesh(mesh, ground);
        }
        let falloff = FALLOFF_STEPS * ground.step;
        for d in &mut map.dark {
            let t = (1.0 - *d / falloff).clamp(0.0, 1.0);
            *d = t * t;
        }
        for _ in 0..2 {
            map.dark = blur(&map.dark, 1, CELLS);
            map.dark = blur(&map.dark, CELLS, 1);
        }
        Some(map)
    }

    /// Cell coordinates of world `(x, z)`: cell `(i, j)` spans `[i, i+1) × [j, j+1)`.
    fn cell_of(&self, x: f32, z: f32) -> [f32; 2] {
        [
            (x - self.origin[0]) * self.inv_cell,
            (z - self.origin[1]) * self.inv_cell,
        ]
    }

    /// Lowers the cells under a mesh to its height above the ground: the cell holding each
    /// vertex (so triangles smaller than a cell still count) and the cells whose centres each
    /// triangle covers. Vertices are mapped to `(cell x, cell z, height)` once; triangles with
    /// a bad index or a non-finite corner, and those lying on the ground, are skipped.
    fn splat_mesh(&mut self, mesh: &PreviewMesh, ground: &Ground) {
        let flat = ON_GROUND_STEPS * ground.step;
        let pts: Vec<Option<V3>> = mesh
            .positions
            .iter()
            .map(|p| {
                let [u, v] = self.cell_of(p[0], p[2]);
                is_finite(*p).then_some([u, v, p[1] - ground.y])
            })
            .collect();
        for q in pts.iter().flatten() {
            if q[2] > flat {
                self.lower(q[0].floor(), q[1].floor(), q[2]);
            }
        }
        for tri in &mesh.triangles {
            let get = |i: u32| pts.get(i as usize).copied().flatten();
            let (Some(a), Some(b), Some(c)) = (get(tri[0]), get(tri[1]), get(tri[2])) else {
                continue;
            };
            if a[2] > flat || b[2] > flat || c[2] > flat {
                self.fill([a, b, c]);
            }
        }
    }

    /// Lowers the cells whose centres the triangle `(cell x, cell z, height)` covers to its
    /// height there, `Σ bᵢ hᵢ` with barycentric weights `bᵢ`.
    fn fill(&mut self, c: [V3; 3]) {
        let lo = |k: usize| (c[0][k].min(c[1][k]).min(c[2][k]) - 0.5).ceil().max(0.0);
        let hi = |k: usize| {
            let top = c[0][k].max(c[1][k]).max(c[2][k]) - 0.5;
            top.floor().min(CELLS as f32 - 1.0)
        };
        let (x0, x1, y0, y1) = (lo(0), hi(0), lo(1), hi(1));
        if !(x0 <= x1 && y0 <= y1) {
            return;
        }
        let edge =
            |a: V3, b: V3, x: f32, y: f32| (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0]);
        let area = edge(c[0], c[1], c[2][0], c[2][1]);
        if !(area.abs() > 1e-12 && area.is_finite()) {
            return;
        }
        for j in y0 as usize..=y1 as usize {
            for i in x0 as usize..=x1 as usize {
                let (x, y) = (i as f32 + 0.5, j as f32 + 0.5);
                let b0 = edge(c[1], c[2], x, y) / area;
                let b1 = edge(c[2], c[0], x, y) / area;
                let b2 = edge(c[0], c[1], x, y) / area;
                if b0 >= 0.0 && b1 >= 0.0 && b2 >= 0.0 {
                    self.lower(
                        i as f32,
                        j as f32,
                        b0 * c[0][2] + b1 * c[1][2] + b2 * c[2][2],
                    );
                }
            }
        }
    }

    /// `height[i, j] ← min(height[i, j], max(h, 0))` when `(i, j)` is a cell of the map.
    fn lower(&mut self, i: f32, j: f32, h: f32) {
        let n = CELLS as f32;
        if i >= 0.0 && j >= 0.0 && i < n && j < n && !h.is_nan() {
            let k = j as usize * CELLS + i as usize;
            self.dark[k] = self.dark[k].min(h.max(0.0));
        }
    }

    /// Darkness at world `(x, z)`, bilinear between cell centres, 0 outside the map.
    pub fn darkness(&self, x: f32, z: f32) -> f32 {
        let [u, v] = self.cell_of(x, z);
        let (u, v) = (u - 0.5, v - 0.5);
        let n = CELLS as f32;
        if !(u >= 0.0 && v >= 0.0 && u < n - 1.0 && v < n - 1.0) {
            return 0.0;
        }
        let (i, j) = (u as usize, v as usize);
        let (fu, fv) = (u - i as f32, v - j as f32);
        let at = |i: usize, j: usize| self.dark[j * CELLS + i];
        let top = at(i, j) + (at(i + 1, j) - at(i, j)) * fu;
        let bottom = at(i, j + 1) + (at(i + 1, j + 1) - at(i, j + 1)) * fu;
        top + (bottom - top) * fv
    }
}

/// Box blur of half-width `BLUR` along one axis of a `CELLS`² grid: `stride` 1 blurs along
/// rows with `lane` `CELLS`, and `stride` `CELLS` with `lane` 1 along columns. Cells past the
/// edge count as 0; the sum runs in a fixed order.
fn blur(src: &[f32], stride: usize, lane: usize) -> Vec<f32> {
    let mut out = vec![0.0; src.len()];
    let norm = 1.0 / (2 * BLUR + 1) as f32;
    for line in 0..CELLS {
        for k in 0..CELLS {
            let mut sum = 0.0;
            for m in k.saturating_sub(BLUR)..(k + BLUR + 1).min(CELLS) {
                sum += src[line * lane + m * stride];
            }
            out[line * lane + k * stride] = sum * norm;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ground() -> Ground {
        Ground {
            y: 0.0,
            step: 0.5,
            centre: [0.0, 0.0],
            radius: 4.0,
        }
    }

    fn quad(y: f32) -> PreviewMesh {
        PreviewMesh {
            positions: vec![
                [-0.5, y, -0.5],
                [0.5, y, -0.5],
                [0.5, y, 0.5],
                [-0.5, y, 0.5],
            ],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
            ..PreviewMesh::default()
        }
    }

    #[test]
    fn shadows_are_dark_under_low_things_and_absent_elsewhere() {
        let low = ShadowMap::new(&ground(), &[quad(0.05)]).unwrap();
        let high = ShadowMap::new(&ground(), &[quad(0.8)]).unwrap();
        let none = ShadowMap::new(&ground(), &[quad(1.5)]).unwrap();
        let floor = ShadowMap::new(&ground(), &[quad(0.0), quad(-0.3)]).unwrap();
        assert_eq!(floor.darkness(0.0, 0.0), 0.0);
        assert!(low.darkness(0.0, 0.0) > 0.8, "{}", low.darkness(0.0, 0.0));
        assert!(high.darkness(0.0, 0.0) > 0.0 && high.darkness(0.0, 0.0) < 0.5);
        assert_eq!(none.darkness(0.0, 0.0), 0.0);
        assert_eq!(low.darkness(2.0, 2.0), 0.0);
        assert_eq!(low.darkness(50.0, 0.0), 0.0);
        assert_eq!(low.darkness(f32::NAN, 0.0), 0.0);
    }

    #[test]
    fn bad_ground_gives_no_map() {
        let mut g = ground();
        g.radius = f32::NAN;
        assert!(ShadowMap::new(&g, &[quad(0.0)]).is_none());
    }
}
