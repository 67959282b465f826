//! USD stage output: one animated stage (`.usda` text or `.usdc` binary) holding every object
//! of a run, encoded with the `openusd` crate (its `sdf::Data` layer, `usda::TextWriter` and
//! `usdc::CrateWriter`).
//!
//! What the stage holds:
//! - Layer metadata: `defaultPrim` (the first prim), `upAxis` (`"Y"`/`"Z"`), `metersPerUnit = 1`,
//!   `timeCodesPerSecond = framesPerSecond = fps`, `startTimeCode`/`endTimeCode`. The time code
//!   of frame `f` is `f`.
//! - Per object a root prim `def Mesh "<name>"` ([UsdGeomMesh]), `def BasisCurves "<name>"`
//!   ([UsdGeomBasisCurves], `type = "linear"`, one constant `widths` value) or, for particles
//!   without faces or segments (fluids), `def Points "<name>"` ([UsdGeomPoints], one constant
//!   `widths` value) at `/<name>`.
//! - Topology once, as default values: `faceVertexCounts`, `faceVertexIndices`,
//!   `subdivisionScheme = "none"`, `doubleSided = true`, and with UVs `texCoord2f[] primvars:st`
//!   (`interpolation = "faceVarying"`) plus `int[] primvars:st:indices`, so UV seams are kept;
//!   for curves `curveVertexCounts` and `widths`.
//! - Time samples keyed by frame number: `points`, `extent` (bounding box of the points),
//!   `velocities` ([UsdGeomPointBased] `velocities`, units per second) and, for meshes,
//!   `normals` (`interpolation = "vertex"`) when the caller gives them. Curves never get
//!   normals: on BasisCurves they would turn the tubes into oriented ribbons.
//! - Moving colliders carry `custom bool userProperties:xpbd:collider = true`. usdview lists it
//!   among the prim's properties; Blender's USD importer turns `userProperties:` attributes into
//!   custom properties of the object (import option "Custom Properties": User or All).
//!
//! Points are written as given: the caller has already converted them to the axes `up_axis`
//! names. The output is deterministic: both `openusd` writers walk specs in sorted path order,
//! children in authored order and dictionaries by sorted key, so the same input gives the same
//! bytes. Binary output then goes through `pixar_compatible`, which fixes the three places
//! where openusd 0.6's crate bytes differ from what Pixar's USD (usdview, Blender, Houdini)
//! reads; checked with `scripts/check_usd.py`.
//!
//! [UsdGeomMesh]: https://openusd.org/release/api/class_usd_geom_mesh.html
//! [UsdGeomBasisCurves]: https://openusd.org/release/api/class_usd_geom_basis_curves.html
//! [UsdGeomPointBased]: https://openusd.org/release/api/class_usd_geom_point_based.html
//! [UsdGeomPoints]: https://openusd.org/release/api/class_usd_geom_points.html

use std::io::Cursor;

use anyhow::{bail, ensure, Context, Result};
use openusd::gf::{Vec2f, Vec3f};
use openusd::sdf::{
    self, ChildrenKey, FieldKey, Path, SpecData, SpecType, Specifier, TimeSampleMap, Value,
};
use openusd::tf::Token;
use openusd::usda::TextWriter;
use openusd::usdc::{CrateFile, CrateWriter};

pub use crate::scene::types::UpAxis;

/// Stage-wide timing and orientation.
#[derive(Debug, Clone, Copy)]
pub struct StageInfo {
    /// Frames per second: both `timeCodesPerSecond` and `framesPerSecond`.
    pub fps: f64,
    /// First frame number (`startTimeCode`).
    pub start_frame: f64,
    /// Last frame number (`endTimeCode`).
    pub end_frame: f64,
    /// The stage's `upAxis`; points must already be in these axes.
    pub up_axis: UpAxis,
}

/// Face-varying texture coordinates (`primvars:st`, indexed).
#[derive(Debug, Clone)]
pub struct FaceVaryingUvs {
    /// Distinct UV values (`primvars:st`).
    pub values: Vec<[f32; 2]>,
    /// One index into `values` per face corner, in `face_vertex_indices` order
    /// (`primvars:st:indices`). A vertex on a seam has different indices in different faces.
    pub indices: Vec<i32>,
}

/// Topology of a prim, the same in every frame.
#[derive(Debug, Clone)]
pub enum PrimShape {
    /// A polygon mesh (UsdGeomMesh).
    Mesh {
        /// Number of corners of each face (`faceVertexCounts`).
        face_vertex_counts: Vec<i32>,
        /// Point index of each face corner, face after face (`faceVertexIndices`).
        face_vertex_indices: Vec<i32>,
        /// Texture coordinates, if the object has any.
        uvs: Option<FaceVaryingUvs>,
    },
    /// Particles with no faces or segments (a fluid): a UsdGeomPoints prim, each point a
    /// sphere of `width` metres (`widths`, interpolation constant).
    Points { width: f32 },
    /// A rope: one linear BasisCurves prim, all curves listed by vertex count; width in metres (constant)
    Curves {
        /// Number of points of each curve (`curveVertexCounts`); they sum to the point count.
        curve_vertex_counts: Vec<i32>,
        /// Curve width in metres, the same everywhere (`widths`, interpolation constant).
        width: f32,
    },
}

/// One object of the stage.
#[derive(Debug, Clone)]
pub struct StagePrim {
    /// Prim name, a valid USD identifier (`[A-Za-z_][A-Za-z0-9_]*`); the prim path is `/<name>`.
    pub name: String,
    /// Mesh or curves topology.
    pub shape: PrimShape,
    /// A moving collider rather than a simulated object: marked with
    /// `userProperties:xpbd:collider = true`.
    pub collider: bool,
}

/// The data of one prim at one frame. Owned: `openusd` keeps every sample in its in-memory
/// layer until the whole stage is written, so the vectors are moved in without another copy
/// (a borrowed sample would have to be copied, and could not borrow from a buffer the callback
/// reuses).
#[derive(Debug, Clone, Default)]
pub struct PrimSample {
    /// Point positions (`points`); the count must be the same in every frame.
    pub points: Vec<[f32; 3]>,
    /// Per-point velocities in units per second (`velocities`); given in every frame or none.
    pub velocities: Option<Vec<[f32; 3]>>,
    /// Per-point normals, interpolation `vertex` (`normals`, meshes only); every frame or none.
    pub normals: Option<Vec<[f32; 3]>>,
}

/// Encodes the stage. `sample(frame_index, prim_index)` gives the data of prim k at frame
/// start_frame+frame_index; frames are 0..frame_count. It is called frame by frame, prims in
/// order within a frame. `binary` chooses `.usdc` (crate) over `.usda` (text).
pub fn encode_stage(
    info: &StageInfo,
    prims: &[StagePrim],
    frame_count: usize,
    sample: &mut dyn FnMut(usize, usize) -> Result<PrimSample>,
    binary: bool,
) -> Result<Vec<u8>> {
    ensure!(
        info.fps.is_finite() && info.fps > 0.0,
        "bad fps {}",
        info.fps
    );
    let Some(first) = prims.first() else {
        bail!("a USD stage needs at least one prim");
    };
    let mut data = sdf::Data::new();
    let root = data.create_spec(Path::abs_root(), SpecType::PseudoRoot);
    let names = prims.iter().map(|p| p.name.as_str().into()).collect();
    root.add(ChildrenKey::PrimChildren, Value::TokenVec(names));
    root.add(FieldKey::DefaultPrim, token(&first.name));
    root.add(
        "upAxis",
        token(if info.up_axis == UpAxis::Z { "Z" } else { "Y" }),
    );
    root.add("metersPerUnit", Value::Double(1.0));
    root.add(FieldKey::TimeCodesPerSecond, Value::Double(info.fps));
    root.add(FieldKey::FramesPerSecond, Value::Double(info.fps));
    root.add(FieldKey::StartTimeCode, Value::Double(info.start_frame));
    root.add(FieldKey::EndTimeCode, Value::Double(info.end_frame));

    let mut series = Vec::with_capacity(prims.len());
    for (k, prim) in prims.iter().enumerate() {
        let name = &prim.name;
        ensure!(is_identifier(name), "{name:?} is not a USD identifier");
        let unique = prims[..k].iter().all(|p| &p.name != name);
        ensure!(unique, "two objects are named {name:?}");
        let points = check_topology(&prim.shape).with_context(|| format!("object {name:?}"))?;
        series.push(Series {
            points,
            ..Series::default()
        });
    }
    let mut bytes = 4096; // the size of the arrays sampled, for the output buffer
    for frame in 0..frame_count {
        let time = info.start_frame + frame as f64;
        for (k, prim) in prims.iter().enumerate() {
            let name = &prim.name;
            let s = sample(frame, k)?;
            let len = |v: &Option<Vec<[f32; 3]>>| v.as_ref().map_or(0, Vec::len);
            bytes += 12 * (s.points.len() + len(&s.velocities) + len(&s.normals)) + 100;
            let context = || format!("object {name:?}, frame {time}");
            series[k].push(time, s, &prim.shape).with_context(context)?;
        }
    }
    for (prim, series) in prims.iter().zip(series) {
        author_prim(&mut data, prim, series)?;
    }

    // Reserved up front: the arrays dominate, and text takes about five times their size.
    let mut out = Cursor::new(Vec::with_capacity(if binary { bytes } else { 5 * bytes }));
    if binary {
        CrateWriter::write(&data, &mut out)?;
        return pixar_compatible(out.into_inner());
    }
    TextWriter::write(&data, &mut out)?;
    Ok(out.into_inner())
}

/// Makes openusd 0.6's crate bytes readable by Pixar's USD. Three differences, all in the
/// values of fields (the only place this module puts such values):
/// - the children lists `primChildren` and `properties` are typed `token[]`; Pixar takes only a
///   `TokenVector` and otherwise sees no prims or properties. Both have the same bytes on the
///   heap, so only the ValueRep's type changes;
/// - int arrays of 4 to 15 elements are compressed, while Pixar compresses only 16 or more and
///   reads shorter ones raw: they are written again, raw, after the heap;
/// - the header says crate version 0.12.0; nothing here needs more than 0.8.0, the version
///   Pixar itself writes, which older USD builds (DCC tools) also read.
///
/// The FIELDS section is rebuilt (its reps LZ4-compressed again), every section is copied
/// behind the grown heap and the table of contents rewritten. Drop once openusd writes crate
/// files like Pixar does.
fn pixar_compatible(mut bytes: Vec<u8>) -> Result<Vec<u8>> {
    const PAYLOAD: u64 = (1 << 48) - 1;
    const ARRAY: u64 = 1 << 63;
    const COMPRESSED: u64 = 1 << 61;
    const TOKEN: u64 = 11;
    const TOKEN_VECTOR: u64 = 41;
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut file = CrateFile::open(Cursor::new(bytes.as_slice()))?;
    let sections = file
        .sections
        .iter()
        .map(|s| (s.name().to_owned(), s.start, s.size));
    let sections: Vec<(String, u64, u64)> = sections.collect();
    let heap_end = sections.iter().map(|s| s.1).min().context("no sections")? as usize;
    let (mut reps, mut moved) = (Vec::with_capacity(file.fields.len() * 8), Vec::new());
    for k in 0..file.fields.len() {
        let (token, mut rep) = (file.fields[k].token_index, file.fields[k].value_rep);
        let children = matches!(file.tokens[token].as_str(), "primChildren" | "properties");
        if children && rep.0 >> 48 == ARRAY >> 48 | TOKEN {
            rep.0 = TOKEN_VECTOR << 48 | rep.0 & PAYLOAD;
        } else if rep.0 & (ARRAY | COMPRESSED) == ARRAY | COMPRESSED {
            let count = u64_at(&bytes, (rep.0 & PAYLOAD) as usize);
            if count < 16 {
                let raw: Vec<u8> = match file.value(rep)? {
                    Value::IntVec(v) => v.iter().flat_map(|i| i.to_le_bytes()).collect(),
                    Value::UintVec(v) => v.iter().flat_map(|i| i.to_le_bytes()).collect(),
                    Value::Int64Vec(v) => v.iter().flat_map(|i| i.to_le_bytes()).collect(),
                    Value::Uint64Vec(v) => v.iter().flat_map(|i| i.to_le_bytes()).collect(),
                    other => bail!("unexpected compressed array {other:?}"),
                };
                rep.0 = rep.0 & !(COMPRESSED | PAYLOAD) | (heap_end + moved.len()) as u64;
                moved.extend(count.to_le_bytes());
                moved.extend(raw);
            }
        }
        reps.extend(rep.0.to_le_bytes());
    }
    drop(file);
    // The heap stays where it is (no copy); the small sections behind it are moved.
    let tail = bytes.split_off(heap_end);
    bytes[8..11].copy_from_slice(&[0, 8, 0]);
    bytes.extend(moved);
    let mut toc = Vec::with_capacity(sections.len());
    for (name, at, size) in sections {
        let (from, start) = (at as usize - heap_end, bytes.len() as u64);
        if name == "FIELDS" {
            // u64 count, then u64 size + compressed token indices, then the same for the reps.
            bytes.extend_from_slice(&tail[from..from + 16 + u64_at(&tail, from + 8) as usize]);
            let packed = lz4_flex::block::compress(&reps);
            bytes.extend((packed.len() as u64 + 1).to_le_bytes());
            bytes.push(0); // one LZ4 chunk
            bytes.extend(packed);
        } else {
            bytes.extend_from_slice(&tail[from..from + size as usize]);
        }
        toc.push((name, start, bytes.len() as u64 - start));
    }
    let toc_at = bytes.len() as u64;
    bytes[16..24].copy_from_slice(&toc_at.to_le_bytes());
    bytes.extend((toc.len() as u64).to_le_bytes());
    for (name, start, size) in toc {
        let mut padded = [0u8; 16];
        padded[..name.len()].copy_from_slice(name.as_bytes());
        bytes.extend(padded);
        bytes.extend(start.to_le_bytes());
        bytes.extend(size.to_le_bytes());
    }
    Ok(bytes)
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what USD accepts as a prim name.
fn is_identifier(name: &str) -> bool {
    let ok = |c: char, first: bool| {
        c == '_' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit())
    };
    name.chars().enumerate().all(|(i, c)| ok(c, i == 0)) && !name.is_empty()
}

/// Checks counts and indices; returns the point count the topology fixes (`None`: a mesh,
/// fixed by the first frame, which must cover every index).
fn check_topology(shape: &PrimShape) -> Result<Option<usize>> {
    let total = |counts: &[i32], min: i32| -> Result<usize> {
        ensure!(counts.iter().all(|&c| c >= min), "a count below {min}");
        Ok(counts.iter().map(|&c| c as usize).sum())
    };
    match shape {
        PrimShape::Mesh {
            face_vertex_counts,
            face_vertex_indices: indices,
            uvs,
        } => {
            let corners = total(face_vertex_counts, 3)?;
            ensure!(
                corners == indices.len(),
                "{corners} face corners, {} indices",
                indices.len()
            );
            ensure!(
                indices.iter().all(|&i| i >= 0),
                "negative face vertex index"
            );
            if let Some(uvs) = uvs {
                let (n, m) = (uvs.indices.len(), uvs.values.len());
                ensure!(n == corners, "{n} UV indices for {corners} face corners");
                let in_range = uvs.indices.iter().all(|&i| i >= 0 && (i as usize) < m);
                ensure!(in_range, "UV index out of 0..{m}");
            }
            Ok(None)
        }
        PrimShape::Curves {
            curve_vertex_counts,
            width,
        } => {
            ensure!(width.is_finite() && *width > 0.0, "rope width {width}");
            Ok(Some(total(curve_vertex_counts, 2)?))
        }
        PrimShape::Points { width } => {
            ensure!(width.is_finite() && *width > 0.0, "point width {width}");
            Ok(None)
        }
    }
}

/// The time samples of one prim, gathered frame by frame.
#[derive(Default)]
struct Series {
    /// Point count: fixed by the topology (curves) or by the first frame (meshes).
    points: Option<usize>,
    positions: TimeSampleMap,
    extent: TimeSampleMap,
    velocities: TimeSampleMap,
    normals: TimeSampleMap,
}

impl Series {
    fn push(&mut self, time: f64, s: PrimSample, shape: &PrimShape) -> Result<()> {
        let n = s.points.len();
        let expected = *self.points.get_or_insert(n);
        ensure!(n == expected, "{n} points, expected {expected}");
        let first = self.positions.is_empty();
        if let (
            true,
            PrimShape::Mesh {
                face_vertex_indices: fvi,
                ..
            },
        ) = (first, shape)
        {
            let max = fvi.iter().max().map_or(-1, |&i| i as i64);
            ensure!(max < n as i64, "face vertex index {max}, {n} points");
        }
        let attrs = [
            ("velocities", s.velocities, &mut self.velocities),
            ("normals", s.normals, &mut self.normals),
        ];
        for (name, given, map) in attrs {
            ensure!(
                first || given.is_some() != map.is_empty(),
                "{name} in some frames only"
            );
            if let Some(v) = given {
                ensure!(v.len() == n, "{} {name} for {n} points", v.len());
                map.push((time, vec3s(v)));
            }
        }
        let (mut lo, mut hi) = if n == 0 {
            ([0.0; 3], [0.0; 3])
        } else {
            (s.points[0], s.points[0])
        };
        for p in &s.points {
            for a in 0..3 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        self.extent
            .push((time, Value::Vec3fVec(vec![lo.into(), hi.into()])));
        self.positions.push((time, vec3s(s.points)));
        Ok(())
    }
}

/// Moves `[f32; 3]`s into a USD float3 array (same layout, so the allocation is reused).
fn vec3s(v: Vec<[f32; 3]>) -> Value {
    Value::Vec3fVec(v.into_iter().map(Vec3f::from).collect())
}

/// The attribute specs of one prim, gathered in authored order.
struct Attributes<'d> {
    data: &'d mut sdf::Data,
    prim: Path,
    names: Vec<Token>,
}

impl Attributes<'_> {
    /// Adds attribute `name` of type `ty` holding `value`: its time samples, or else its default.
    fn add(&mut self, name: &str, ty: &str, value: Value) -> Result<&mut SpecData> {
        let spec = self
            .data
            .create_spec(self.prim.append_property(name)?, SpecType::Attribute);
        spec.add(FieldKey::TypeName, token(ty));
        let field = match value {
            Value::TimeSamples(_) => FieldKey::TimeSamples,
            _ => FieldKey::Default,
        };
        spec.add(field, value);
        self.names.push(name.into());
        Ok(spec)
    }
}

fn token(t: &str) -> Value {
    Value::Token(t.into())
}

/// Writes one prim spec and its attribute specs.
fn author_prim(data: &mut sdf::Data, prim: &StagePrim, series: Series) -> Result<()> {
    let path = Path::new(&format!("/{}", prim.name))?;
    let mut a = Attributes {
        data,
        prim: path.clone(),
        names: Vec::new(),
    };
    let ints = |v: &[i32]| Value::IntVec(v.to_vec());
    let (uniform, interpolation) = (FieldKey::Variability, "interpolation");
    let uniform_value = || Value::Variability(sdf::Variability::Uniform);
    if prim.collider {
        let mark = a.add("userProperties:xpbd:collider", "bool", Value::Bool(true))?;
        mark.add(FieldKey::Custom, Value::Bool(true));
    }
    let type_name = match &prim.shape {
        PrimShape::Mesh {
            face_vertex_counts,
            face_vertex_indices,
            uvs,
        } => {
            a.add("faceVertexCounts", "int[]", ints(face_vertex_counts))?;
            a.add("faceVertexIndices", "int[]", ints(face_vertex_indices))?;
            a.add("subdivisionScheme", "token", token("none"))?
                .add(uniform, uniform_value());
            a.add("doubleSided", "bool", Value::Bool(true))?
                .add(uniform, uniform_value());
            if let Some(uvs) = uvs {
                let st = Value::Vec2fVec(uvs.values.iter().map(|&uv| Vec2f::from(uv)).collect());
                let spec = a.add("primvars:st", "texCoord2f[]", st)?;
                spec.add(interpolation, token("faceVarying"));
                a.add("primvars:st:indices", "int[]", ints(&uvs.indices))?;
            }
            "Mesh"
        }
        PrimShape::Curves {
            curve_vertex_counts,
            width,
        } => {
            a.add("type", "token", token("linear"))?
                .add(uniform, uniform_value());
            a.add("curveVertexCounts", "int[]", ints(curve_vertex_counts))?;
            let widths = a.add("widths", "float[]", Value::FloatVec(vec![*width]))?;
            widths.add(interpolation, token("constant"));
            "BasisCurves"
        }
        PrimShape::Points { width } => {
            let widths = a.add("widths", "float[]", Value::FloatVec(vec![*width]))?;
            widths.add(interpolation, token("constant"));
            "Points"
        }
    };
    a.add("extent", "float3[]", Value::TimeSamples(series.extent))?;
    a.add("points", "point3f[]", Value::TimeSamples(series.positions))?;
    if !series.velocities.is_empty() {
        a.add(
            "velocities",
            "vector3f[]",
            Value::TimeSamples(series.velocities),
        )?;
    }
    if !series.normals.is_empty() && type_name == "Mesh" {
        let normals = a.add("normals", "normal3f[]", Value::TimeSamples(series.normals))?;
        normals.add(interpolation, token("vertex"));
    }

    let names = a.names;
    let spec = data.create_spec(path, SpecType::Prim);
    spec.add(FieldKey::Specifier, Value::Specifier(Specifier::Def));
    spec.add(FieldKey::TypeName, token(type_name));
    spec.add(ChildrenKey::PropertyChildren, Value::TokenVec(names));
    Ok(())
}

#[cfg(test)]
mod tests;
