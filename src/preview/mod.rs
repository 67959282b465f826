//! Preview images of a simulation frame: a small deterministic software rasteriser.
//!
//! [`render`] draws meshes seen by a [`Camera`] (usually [`Camera::framing`] of the scene's
//! box) over a gradient backdrop and a ground grid, with a bitmap label in the top-left
//! corner; [`contact_sheet`] tiles several renders; [`encode_png`] writes one as PNG bytes.
//!
//! Determinism: everything runs on one thread, in a fixed order, with `f32` arithmetic
//! limited to `+ − × ÷ √` (see `math`), and the PNG is written with fixed filter and
//! compression settings, so the same input gives byte-identical files on every run and every
//! machine (for the same `png`/`flate2` versions, which the lock file pins).
//!
//! Pipeline per mesh: world → view space ([`camera`]), per-vertex two-sided Lambert light
//! (`shade`), near-plane clipping and z-buffered filling (`raster`); then the ground grid and
//! the contact shadows (`shadow`) are cast per pixel where the ground is nearer than the
//! meshes (`ground`), and the label is drawn last (`font`).

pub mod camera;
mod font;
mod ground;
mod math;
mod raster;
mod shade;
mod shadow;

pub use camera::{Camera, Ground};

use camera::View;
use math::{dot, is_finite, normalize, sub, V3};
use raster::{Frame, ViewVert};
use shade::{Lights, Material};

/// One thing to draw: a triangle surface, rope lines, or both, sharing one vertex list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreviewMesh {
    /// World positions, +Y up, metres.
    pub positions: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
    /// Ropes: drawn as 1–2 px lines (2 from 400 px of image width).
    pub lines: Vec<[u32; 2]>,
    /// Particles (fluids): every position drawn as a dot of 2–3 px (3 from 400 px of image
    /// width), depth-tested, flat in `colour`.
    pub points: bool,
    /// Surface colour (sRGB); see [`object_colour`]. Not used for colliders.
    pub colour: [u8; 3],
    /// Colliders are drawn in a neutral grey with a faint 3D checker so they differ from the
    /// simulated objects.
    pub collider: bool,
}

/// An 8-bit RGB image, rows from the top, `rgb.len() == 3 · width · height`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Image {
    /// The colour at column `x`, row `y` (panics outside the image).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

/// Renders `meshes` (in order; the z-buffer decides what shows) seen by `camera` into a
/// `width`×`height` image labelled `label` at the top-left.
///
/// Sizes are the caller's to validate (it should refuse 0 and anything above 8192); a zero
/// size gives an empty image and 1×1 works. Triangles or lines touching a non-finite position
/// or an out-of-range index are skipped, and a degenerate camera draws only the backdrop and
/// label; nothing here panics on bad geometry.
pub fn render(
    meshes: &[PreviewMesh],
    camera: &Camera,
    width: u32,
    height: u32,
    label: &str,
) -> Image {
    let (w, h) = (width as usize, height as usize);
    if w == 0 || h == 0 {
        return Image {
            width,
            height,
            rgb: Vec::new(),
        };
    }
    let mut frame = Frame::new(w, h);
    ground::background(&mut frame);
    if let Some(view) = View::new(camera, width, height) {
        let lights = Lights::new();
        for mesh in meshes {
            let vpos: Vec<V3> = mesh.positions.iter().map(|p| view.view_pos(*p)).collect();
            draw_surface(&mut frame, &view, &lights, mesh, &vpos);
            draw_ropes(&mut frame, &view, &lights, mesh, &vpos);
            if mesh.points {
                draw_points(&mut frame, &view, mesh, &vpos);
            }
        }
        if let Some(g) = &camera.ground {
            let shadow = shadow::ShadowMap::new(g, meshes);
            ground::grid(&mut frame, &view, g, shadow.as_ref());
        }
    }
    font::draw_label(&mut frame, label);
    Image {
        width,
        height,
        rgb: frame.rgb,
    }
}

/// Draws a mesh's triangles. Each triangle is seen from its front when the eye is on the side
/// its face normal `(p₁ − p₀) × (p₂ − p₀)` points to; its corners are then lit with their
/// vertex normals from that side (`Lights::front`), otherwise from the back (`Lights::back`);
/// both are computed once per vertex. A corner whose vertex normal points to the face's other
/// side (a sharp fold) is lit with the face's own normal instead.
fn draw_surface(frame: &mut Frame, view: &View, lights: &Lights, mesh: &PreviewMesh, vpos: &[V3]) {
    if mesh.triangles.is_empty() {
        return;
    }
    let normals = shade::vertex_normals(&mesh.positions, &mesh.triangles);
    let lit: Vec<[f32; 2]> = normals
        .iter()
        .map(|n| [lights.front(*n), lights.back(*n)])
        .collect();
    let material = if mesh.collider {
        Material {
            base: shade::COLLIDER_GREY,
            checker: shade::checker_step(&mesh.positions),
        }
    } else {
        Material {
            base: mesh.colour,
            checker: 0.0,
        }
    };
    let shade = |a: &[f32; 4]| material.colour(a);
    for tri in &mesh.triangles {
        let Some(idx) = shade::corners(&mesh.positions, tri) else {
            continue;
        };
        let p = idx.map(|i| mesh.positions[i]);
        let face = shade::face_normal(p[0], p[1], p[2]);
        let area2 = dot(face, face);
        if !(area2 > 0.0 && area2.is_finite()) {
            continue;
        }
        let front = dot(face, sub(view.eye, p[0])) >= 0.0;
        let corner = |k: usize| {
            let i = idx[k];
            let light = if dot(normals[i], face) > 0.0 {
                lit[i][usize::from(!front)]
            } else {
                let n = normalize(face).unwrap_or(normals[i]);
                if front {
                    lights.front(n)
                } else {
                    lights.back(n)
                }
            };
            ViewVert {
                p: vpos[idx[k]],
                a: [light, p[k][0], p[k][1], p[k][2]],
            }
        };
        let verts = [corner(0), corner(1), corner(2)];
        if verts.iter().all(|v| is_finite(v.p)) {
            raster::draw_triangle(frame, view, &verts, &shade);
        }
    }
}

/// Draws a mesh's lines as ropes, each segment lit by its own direction (`Lights::rope`).
fn draw_ropes(frame: &mut Frame, view: &View, lights: &Lights, mesh: &PreviewMesh, vpos: &[V3]) {
    let thickness = if frame.width >= 400 { 2 } else { 1 };
    let base = if mesh.collider {
        shade::COLLIDER_GREY
    } else {
        mesh.colour
    };
    for line in &mesh.lines {
        let (a, b) = (line[0] as usize, line[1] as usize);
        if a >= vpos.len() || b >= vpos.len() {
            continue;
        }
        let (pa, pb) = (mesh.positions[a], mesh.positions[b]);
        if !(is_finite(pa) && is_finite(pb) && is_finite(vpos[a]) && is_finite(vpos[b])) {
            continue;
        }
        let light = normalize(sub(pb, pa)).map_or(1.0, |t| lights.rope(t));
        let colour = shade::tone(base, light);
        raster::draw_segment(frame, view, [vpos[a], vpos[b]], colour, thickness);
    }
}

/// Draws every position of a particle mesh as a small square dot, flat in its colour.
fn draw_points(frame: &mut Frame, view: &View, mesh: &PreviewMesh, vpos: &[V3]) {
    let size = if frame.width >= 400 { 3 } else { 2 };
    for (p, v) in mesh.positions.iter().zip(vpos) {
        if is_finite(*p) && is_finite(*v) {
            raster::draw_dot(frame, view, *v, mesh.colour, size);
        }
    }
}

/// Width of the gutters around and between the tiles of a contact sheet, in pixels.
const GUTTER: u32 = 4;
const GUTTER_RGB: [u8; 3] = [18, 19, 22];

/// Tiles `images` in reading order (left to right, then top to bottom), `columns` per row
/// (clamped to `1..=images.len()`), in cells as large as the largest image, with `GUTTER`
/// pixels around and between them: `columns·cell_w + (columns + 1)·GUTTER` wide and
/// `rows·cell_h + (rows + 1)·GUTTER` tall for `rows = ⌈n / columns⌉`. Smaller images sit at
/// the top-left of their cell. No images give a 1×1 gutter-coloured image.
pub fn contact_sheet(images: &[Image], columns: u32) -> Image {
    let n = images.len() as u32;
    if n == 0 {
        return Image {
            width: 1,
            height: 1,
            rgb: GUTTER_RGB.to_vec(),
        };
    }
    let cols = columns.clamp(1, n);
    let rows = n.div_ceil(cols);
    let cell_w = images.iter().map(|i| i.width).max().unwrap_or(0);
    let cell_h = images.iter().map(|i| i.height).max().unwrap_or(0);
    let width = cols * cell_w + (cols + 1) * GUTTER;
    let height = rows * cell_h + (rows + 1) * GUTTER;
    let mut rgb = GUTTER_RGB.repeat(width as usize * height as usize);
    for (k, img) in images.iter().enumerate() {
        let (col, row) = (k as u32 % cols, k as u32 / cols);
        let x0 = (GUTTER + col * (cell_w + GUTTER)) as usize;
        let y0 = (GUTTER + row * (cell_h + GUTTER)) as usize;
        let line = 3 * img.width as usize;
        for y in 0..img.height as usize {
            let src = &img.rgb[y * line..(y + 1) * line];
            let at = 3 * ((y0 + y) * width as usize + x0);
            rgb[at..at + line].copy_from_slice(src);
        }
    }
    Image { width, height, rgb }
}

/// PNG bytes of `image`: 8-bit RGB, no metadata, the Paeth filter on every row and zlib
/// level 6, so equal images give equal bytes.
///
/// # Panics
/// When the image has a zero side or `rgb` does not hold `3 · width · height` bytes (an
/// [`Image`] from this module always does, except from [`render`] with a zero size).
pub fn encode_png(image: &Image) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, image.width, image.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_filter(png::Filter::Paeth);
    encoder.set_deflate_compression(png::DeflateCompression::Level(6));
    let mut writer = encoder
        .write_header()
        .expect("PNG header of a non-empty image");
    writer
        .write_image_data(&image.rgb)
        .expect("RGB data matching the image size");
    writer.finish().expect("PNG written to memory");
    out
}

/// Eight well-separated, medium-bright colours that read well under the preview's lighting,
/// cycling: object `index` gets `PALETTE[index % 8]`.
pub fn object_colour(index: usize) -> [u8; 3] {
    const PALETTE: [[u8; 3]; 8] = [
        [231, 111, 81],  // coral
        [42, 157, 143],  // teal
        [233, 196, 106], // saffron
        [94, 129, 212],  // cornflower
        [186, 104, 200], // orchid
        [138, 190, 64],  // leaf
        [244, 162, 97],  // apricot
        [86, 182, 214],  // sky
    ];
    PALETTE[index % PALETTE.len()]
}

#[cfg(test)]
mod tests;
