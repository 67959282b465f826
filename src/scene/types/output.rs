//! `[output]`: what a run writes and where (formats, file names, stats, checkpoints, rope
//! tubes, previews).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Output {
    pub dir: String,
    pub formats: Vec<Format>,
    pub name: String,
    pub stats: String,
    pub normals: bool,
    pub up_axis: UpAxis,
    pub velocities: bool,
    pub checkpoint_every: u64,
    /// Keep `DIR/checkpoints/` after a successful run (it is removed otherwise).
    pub keep_checkpoints: bool,
    /// Write every rope (an object of line segments only) as a tube mesh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rope_tube: Option<RopeTube>,
    /// Preview PNGs every few frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
}

/// `output.preview`: a PNG of the shot every `every` frames (`src/output/preview.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preview {
    /// Frames between previews (the first frame always has one).
    #[serde(default = "default_preview_every")]
    pub every: u64,
    /// Width and height in pixels.
    #[serde(default = "default_preview_size")]
    pub size: [u64; 2],
}

fn default_preview_every() -> u64 {
    1
}

fn default_preview_size() -> [u64; 2] {
    [640, 360]
}

/// `output.rope_tube`: the tube a rope is written as (`src/mesh/tube.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RopeTube {
    /// Tube radius, m.
    pub radius: f64,
    /// Vertices around every ring, 3 to [`MAX_TUBE_SIDES`].
    #[serde(default = "default_tube_sides")]
    pub sides: u64,
    /// Close the open ends with triangle fans.
    #[serde(default = "super::default_true")]
    pub caps: bool,
}

/// Most vertices around one tube ring.
pub const MAX_TUBE_SIDES: u64 = 256;

fn default_tube_sides() -> u64 {
    8
}

impl Default for Output {
    fn default() -> Self {
        Output {
            dir: "cache".into(),
            formats: vec![Format::Obj],
            name: "{object}.{frame:04}".into(),
            stats: "stats.jsonl".into(),
            normals: true,
            up_axis: UpAxis::Y,
            velocities: true,
            checkpoint_every: 10,
            keep_checkpoints: false,
            rope_tube: None,
            preview: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Obj,
    Ply,
    /// One binary USD stage for the whole run, `DIR/<scene stem>.usdc`.
    Usd,
    /// The same stage as text, `DIR/<scene stem>.usda`.
    Usda,
    /// One big-endian MDD point cache per object, `DIR/<object>.mdd`.
    Mdd,
    /// One little-endian PC2 point cache per object, `DIR/<object>.pc2`.
    Pc2,
}

impl Format {
    /// The file name extension (`usd` writes `.usdc`).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Obj => "obj",
            Format::Ply => "ply",
            Format::Usd => "usdc",
            Format::Usda => "usda",
            Format::Mdd => "mdd",
            Format::Pc2 => "pc2",
        }
    }

    /// The name in `output.formats` and `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Usd => "usd",
            other => other.extension(),
        }
    }

    /// One file per object per frame (OBJ, PLY); the others hold every frame in one file.
    pub fn per_frame(self) -> bool {
        matches!(self, Format::Obj | Format::Ply)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpAxis {
    Y,
    Z,
}
