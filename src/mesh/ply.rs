//! PLY reader (ascii and binary) on ply-rs-bw, the maintained ply-rs fork.
//!
//! Reads `element vertex` (`x y z`, and texture coordinates as `s t`, `u v` or
//! `texture_u texture_v`), `element face` (`vertex_indices` or `vertex_index` lists) and
//! `element edge` (`vertex1 vertex2`, rope segments). Other elements and properties are
//! ignored. The header's element counts are checked against the file size before any payload
//! is read, so a header that claims billions of vertices is refused at once. Items are read
//! one at a time into small structs and go straight into the [`Mesh`], so memory stays a
//! small multiple of the file; errors name the line (ascii) or the item (binary).

use super::obj::check_coordinate;
use super::{Mesh, MAX_POLYGON_VERTICES, MAX_VERTICES};
use crate::quote::{quoted, shown_path};
use anyhow::{anyhow, bail, Context, Result};
use glam::DVec3;
use ply_rs_bw::parser::Parser;
use ply_rs_bw::ply::{
    ElementDef, Encoding, Header, Property, PropertyAccess, PropertyType, ScalarType,
};
use std::path::Path;

pub fn read_ply(path: &Path) -> Result<Mesh> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", shown_path(path)))?;
    parse_ply(&bytes).with_context(|| format!("invalid PLY file {}", shown_path(path)))
}

/// Parses a whole PLY file held in memory: the header and its limits first, then every
/// element's items in file order, then the indices against the vertex count.
pub fn parse_ply(bytes: &[u8]) -> Result<Mesh> {
    check_unique_declarations(bytes)?;
    let mut rest = bytes;
    let header = Parser::<Ignored>::new()
        .read_header(&mut rest)
        .map_err(|e| anyhow!("header: {}", ply_message(&e, true)))?;
    let elements: Vec<&ElementDef> = header.elements.values().collect();
    check_counts_fit(&elements, header.encoding, rest.len() as u64)?;
    let uv_slots = check_vertex_element(&header)?;

    let mut payload = Payload::after_header(bytes, rest, header.encoding);
    let mut mesh = Mesh::new();
    let mut uvs = Vec::new();
    for element in elements {
        match element.name.as_str() {
            "vertex" => uvs = read_vertices(&mut payload, element, uv_slots, &mut mesh)?,
            "face" => read_faces(&mut payload, element, &mut mesh)?,
            "edge" => read_edges(&mut payload, element, &mut mesh)?,
            _ => {
                for k in 0..element.count {
                    payload.next::<Ignored>(element, k)?;
                }
            }
        }
    }
    if uv_slots.is_some() {
        mesh.uvs = Some(uvs);
    }
    check_indices_in_range(&mesh)?;
    Ok(mesh)
}

/// Checks the header's `element vertex`: present, within [`MAX_VERTICES`], with `x y z`.
/// Returns the slots in [`VERTEX_PROPERTIES`] of the first texture coordinate pair it has.
fn check_vertex_element(header: &Header) -> Result<Option<[usize; 2]>> {
    let vertex = header
        .elements
        .get("vertex")
        .context("no `element vertex` in the header")?;
    if vertex.count > MAX_VERTICES {
        bail!(
            "header declares {} vertices; at most {MAX_VERTICES} are supported",
            vertex.count
        );
    }
    for axis in ["x", "y", "z"] {
        if !vertex.properties.contains_key(axis) {
            bail!("`element vertex` has no `{axis}` property");
        }
    }
    Ok([[3, 4], [5, 6], [7, 8]].into_iter().find(|slots| {
        slots
            .iter()
            .all(|&k| vertex.properties.contains_key(VERTEX_PROPERTIES[k]))
    }))
}

/// Reads the items of `element vertex` into `mesh.positions`, every position and texture
/// coordinate a number that passes [`check_coordinate`]. Returns the texture coordinates
/// (none without `uv_slots`).
fn read_vertices(
    payload: &mut Payload,
    element: &ElementDef,
    uv_slots: Option<[usize; 2]>,
    mesh: &mut Mesh,
) -> Result<Vec<[f64; 2]>> {
    let mut uvs = Vec::new();
    mesh.positions.reserve(element.count);
    for k in 0..element.count {
        let item: VertexItem = payload.next(element, k)?;
        let value = |slot: usize| -> Result<f64> {
            let name = VERTEX_PROPERTIES[slot];
            let value = item.values[slot]
                .with_context(|| format!("{}: `{name}` is not a number", payload.at(element, k)))?;
            check_coordinate(value)
                .with_context(|| format!("{}: `{name}`", payload.at(element, k)))?;
            Ok(value)
        };
        mesh.positions
            .push(DVec3::new(value(0)?, value(1)?, value(2)?));
        if let Some([u, v]) = uv_slots {
            uvs.push([value(u)?, value(v)?]);
        }
    }
    Ok(uvs)
}

/// Reads the items of `element face` into `mesh`'s polygons: 3 to [`MAX_POLYGON_VERTICES`]
/// corners each, every index a valid `u32` (checked against the vertex count later, by
/// [`check_indices_in_range`]).
fn read_faces(payload: &mut Payload, element: &ElementDef, mesh: &mut Mesh) -> Result<()> {
    for k in 0..element.count {
        let item: FaceItem = payload.next(element, k)?;
        let at = || payload.at(element, k);
        let list = item
            .list
            .with_context(|| format!("{}: no `vertex_indices` list", at()))?;
        if list.len() < 3 || list.len() > MAX_POLYGON_VERTICES {
            bail!(
                "{}: {} corners; 3 to {MAX_POLYGON_VERTICES} are supported",
                at(),
                list.len()
            );
        }
        let corners = list
            .iter()
            .map(|&index| to_index(index).with_context(at))
            .collect::<Result<Vec<u32>>>()?;
        mesh.add_face(&corners).with_context(at)?;
    }
    Ok(())
}

/// Reads the items of `element edge` into `mesh.segments`: `vertex1` and `vertex2` may be of
/// any scalar type, but must hold whole numbers that fit a `u32`.
fn read_edges(payload: &mut Payload, element: &ElementDef, mesh: &mut Mesh) -> Result<()> {
    for k in 0..element.count {
        let item: EdgeItem = payload.next(element, k)?;
        let end = |slot: usize| -> Result<u32> {
            let name = ["vertex1", "vertex2"][slot];
            let at = payload.at(element, k);
            let value = item.ends[slot].with_context(|| format!("{at}: no `{name}`"))?;
            if value.fract() != 0.0 || !(0.0..=u32::MAX as f64).contains(&value) {
                bail!("{at}: `{name}` = {value} is not a vertex index");
            }
            to_index(value as i64).with_context(|| at.clone())
        };
        mesh.segments.push([end(0)?, end(1)?]);
    }
    Ok(())
}

/// Refuses the first face corner or segment end, in that order, that names no vertex.
fn check_indices_in_range(mesh: &Mesh) -> Result<()> {
    let vertex_count = mesh.positions.len();
    let out_of_range = mesh
        .face_indices
        .iter()
        .chain(mesh.segments.iter().flatten())
        .find(|&&k| k as usize >= vertex_count);
    if let Some(k) = out_of_range {
        bail!("vertex index {k} out of range ({vertex_count} vertices)");
    }
    Ok(())
}

/// The payload not read yet, with the line it starts on (ascii) for error messages.
struct Payload<'a> {
    rest: &'a [u8],
    encoding: Encoding,
    /// Lines read so far, the header's included.
    line: usize,
}

impl<'a> Payload<'a> {
    /// The payload `rest` that follows the header of the file `bytes`.
    fn after_header(bytes: &[u8], rest: &'a [u8], encoding: Encoding) -> Self {
        let header_bytes = &bytes[..bytes.len() - rest.len()];
        Payload {
            rest,
            encoding,
            line: header_bytes.iter().filter(|&&b| b == b'\n').count(),
        }
    }

    /// Reads item `k` of `element`: one line in ascii, its bytes in binary.
    fn next<E: PropertyAccess>(&mut self, element: &ElementDef, k: usize) -> Result<E> {
        let parser = Parser::<E>::new();
        if self.rest.is_empty() && !element.properties.is_empty() {
            bail!(
                "the file ends before {} {k} ({} declared)",
                element.name,
                element.count
            );
        }
        let item = match self.encoding {
            Encoding::Ascii => {
                let end = self
                    .rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.rest.len(), |p| p + 1);
                let (line, rest) = self.rest.split_at(end);
                self.rest = rest;
                self.line += 1;
                std::str::from_utf8(line)
                    .map_err(|_| anyhow!("not ASCII text"))
                    .and_then(|text| {
                        parser
                            .read_ascii_element(text, element)
                            .map_err(|e| anyhow!(ply_message(&e, false)))
                    })
            }
            Encoding::BinaryLittleEndian => parser
                .read_little_endian_element(&mut self.rest, element)
                .map_err(binary_error),
            Encoding::BinaryBigEndian => parser
                .read_big_endian_element(&mut self.rest, element)
                .map_err(binary_error),
        };
        item.with_context(|| self.at(element, k))
    }

    /// Where item `k` of `element` is, for an error: `line N: vertex k` or `vertex k`.
    fn at(&self, element: &ElementDef, k: usize) -> String {
        match self.encoding {
            Encoding::Ascii => format!("line {}: {} {k}", self.line, element.name),
            _ => format!("{} {k}", element.name),
        }
    }
}

/// Why a binary item, or a list inside one, could not be read when its bytes run out.
const ENDS_INSIDE: &str = "the file ends inside it";

/// A binary item that could not be read: the file ends inside it, or ply-rs-bw says why.
fn binary_error(error: std::io::Error) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::UnexpectedEof {
        anyhow!(ENDS_INSIDE)
    } else {
        anyhow!(ply_message(&error, false))
    }
}

/// ply-rs-bw's message on one line: the text it quotes clipped, its parser's internal state
/// dropped, and its `Line N` kept only for the header (in the payload it counts from the
/// element, not the file; [`Payload::at`] names the line there).
fn ply_message(error: &std::io::Error, in_header: bool) -> String {
    let text = error.to_string();
    let mut parts = text.split("\n\t");
    let first = parts.next().unwrap_or_default().trim();
    let mut message = match first.split_once(": ") {
        Some((line, rest)) if line.starts_with("Line ") && in_header => {
            format!("l{}: {rest}", &line[1..])
        }
        Some((line, rest)) if line.starts_with("Line ") => rest.to_string(),
        _ => first.to_string(),
    };
    for part in parts {
        let part = part.trim_end_matches([',', ' ']);
        if let Some(quoted_text) = part
            .strip_prefix("String: ")
            .or_else(|| part.strip_prefix("Value: "))
        {
            let quoted_text = quoted_text.trim_matches('\'').trim_end();
            message = format!(
                "{} `{}`",
                message.trim_end_matches('.'),
                quoted(quoted_text)
            );
        } else if let Some(detail) = part.strip_prefix("Error: ") {
            if let Some(reason) = inner_reason(detail, in_header) {
                message = format!("{message} ({reason})");
            }
        }
    }
    message
}

/// What the error under ply-rs-bw's message says, in words, or nothing. The parser prints it
/// in Rust's debug form (`Error { kind: UnexpectedEof, … }`, `ParseIntError { kind:
/// PosOverflow }`, its own `ParseError { … }` state, its ascii grammar's expectations), which
/// tells a user nothing; other text is kept, quoted.
fn inner_reason(detail: &str, in_header: bool) -> Option<String> {
    if detail.contains("UnexpectedEof") {
        return Some(ENDS_INSIDE.to_string());
    }
    if detail.contains("PosOverflow") || detail.contains("NegOverflow") {
        return Some("out of range for the property's type".to_string());
    }
    // The ascii element grammar's complaint, `error at 1:3: expected one of "\r\n", EOF, …`:
    // the element line holds something that is not a number there.
    if !in_header {
        let column = (detail.strip_prefix("error at "))
            .and_then(|rest| rest.split_once(':'))
            .and_then(|(_, rest)| rest.split_once(':'))
            .map(|(column, _)| column);
        if let Some(column) = column {
            return Some(format!("not a number at column {column}"));
        }
    }
    let debug_form = (detail.split_once(" {")).is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric())
    });
    (!debug_form).then(|| quoted(detail).to_string())
}

/// Refuses a header that declares an element, or a property of one element, twice: the
/// parser keeps such declarations in a map by name, so the last one would silently stand for
/// both while the payload still holds both.
fn check_unique_declarations(bytes: &[u8]) -> Result<()> {
    let mut elements = std::collections::BTreeSet::new();
    let mut properties = std::collections::BTreeSet::new();
    let mut element = String::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_ascii_whitespace();
        match words.next() {
            Some("element") => {
                element = words.next().unwrap_or_default().to_string();
                properties.clear();
                if !elements.insert(element.clone()) {
                    bail!(
                        "header: line {}: `element {}` is declared twice",
                        index + 1,
                        quoted(&element)
                    );
                }
            }
            Some("property") => {
                let name = words.last().unwrap_or_default().to_string();
                if !properties.insert(name.clone()) {
                    bail!(
                        "header: line {}: property `{}` of `element {}` is declared twice",
                        index + 1,
                        quoted(&name),
                        quoted(&element)
                    );
                }
            }
            Some("end_header") => break,
            _ => {}
        }
    }
    Ok(())
}

/// Vertex properties the reader uses: position, then the texture coordinate pairs in order of
/// preference.
const VERTEX_PROPERTIES: [&str; 9] = ["x", "y", "z", "s", "t", "u", "v", "texture_u", "texture_v"];

/// A vertex as read: the value of each of [`VERTEX_PROPERTIES`] that is a number.
struct VertexItem {
    values: [Option<f64>; 9],
}

impl PropertyAccess for VertexItem {
    fn new() -> Self {
        VertexItem { values: [None; 9] }
    }
    fn set_property(&mut self, name: &str, property: Property) {
        if let Some(slot) = VERTEX_PROPERTIES.iter().position(|&n| n == name) {
            self.values[slot] = scalar(&property);
        }
    }
}

/// A face as read: its `vertex_indices` list, or else its `vertex_index` list.
struct FaceItem {
    list: Option<Vec<i64>>,
    /// Whether `list` came from `vertex_indices`, which wins over `vertex_index`.
    preferred: bool,
}

impl PropertyAccess for FaceItem {
    fn new() -> Self {
        FaceItem {
            list: None,
            preferred: false,
        }
    }
    fn set_property(&mut self, name: &str, property: Property) {
        match name {
            "vertex_indices" => {
                self.list = index_list(&property);
                self.preferred = true;
            }
            "vertex_index" if !self.preferred => self.list = index_list(&property),
            _ => {}
        }
    }
}

/// An edge as read: `vertex1` and `vertex2` when they are numbers.
struct EdgeItem {
    ends: [Option<f64>; 2],
}

impl PropertyAccess for EdgeItem {
    fn new() -> Self {
        EdgeItem { ends: [None; 2] }
    }
    fn set_property(&mut self, name: &str, property: Property) {
        match name {
            "vertex1" => self.ends[0] = scalar(&property),
            "vertex2" => self.ends[1] = scalar(&property),
            _ => {}
        }
    }
}

/// An item of an element the reader skips: parsed (to move past it) and dropped.
struct Ignored;

impl PropertyAccess for Ignored {
    fn new() -> Self {
        Ignored
    }
}

/// Refuses element counts that cannot fit in the `payload_len` bytes after the header: every
/// binary item takes at least the bytes of its scalars and list counts, every ascii item at
/// least two characters (a digit and a separator) per property.
fn check_counts_fit(elements: &[&ElementDef], encoding: Encoding, payload_len: u64) -> Result<()> {
    let mut needed: u128 = 0;
    for element in elements {
        let min_bytes: u128 = match encoding {
            Encoding::Ascii => 2 * element.properties.len() as u128,
            _ => element
                .properties
                .values()
                .map(|p| match &p.data_type {
                    PropertyType::Scalar(t) | PropertyType::List(t, _) => scalar_size(t),
                })
                .sum::<u128>(),
        };
        needed += element.count as u128 * min_bytes.max(1);
    }
    if needed > payload_len as u128 {
        let counts: Vec<String> = elements
            .iter()
            .map(|e| format!("{} {}", e.count, e.name))
            .collect();
        bail!(
            "header declares {} which needs at least {needed} bytes, but the file has {payload_len} after its header",
            counts.join(", ")
        );
    }
    Ok(())
}

fn scalar_size(t: &ScalarType) -> u128 {
    match t {
        ScalarType::Char | ScalarType::UChar => 1,
        ScalarType::Short | ScalarType::UShort => 2,
        ScalarType::Int | ScalarType::UInt | ScalarType::Float => 4,
        ScalarType::Double => 8,
    }
}

fn scalar(property: &Property) -> Option<f64> {
    Some(match *property {
        Property::Char(v) => v as f64,
        Property::UChar(v) => v as f64,
        Property::Short(v) => v as f64,
        Property::UShort(v) => v as f64,
        Property::Int(v) => v as f64,
        Property::UInt(v) => v as f64,
        Property::Float(v) => v as f64,
        Property::Double(v) => v,
        _ => return None,
    })
}

fn index_list(property: &Property) -> Option<Vec<i64>> {
    Some(match property {
        Property::ListChar(v) => v.iter().map(|&k| k as i64).collect(),
        Property::ListUChar(v) => v.iter().map(|&k| k as i64).collect(),
        Property::ListShort(v) => v.iter().map(|&k| k as i64).collect(),
        Property::ListUShort(v) => v.iter().map(|&k| k as i64).collect(),
        Property::ListInt(v) => v.iter().map(|&k| k as i64).collect(),
        Property::ListUInt(v) => v.iter().map(|&k| k as i64).collect(),
        _ => return None,
    })
}

fn to_index(value: i64) -> Result<u32> {
    u32::try_from(value).map_err(|_| anyhow!("vertex index {value} is not valid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Mesh> {
        parse_ply(text.as_bytes())
    }

    #[test]
    fn reads_ascii_quads_uvs_and_edges() {
        let text = "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n\
                    property float z\nproperty float s\nproperty float t\nelement face 1\n\
                    property list uchar int vertex_indices\nelement edge 1\nproperty int vertex1\n\
                    property int vertex2\nend_header\n0 0 0 0 0\n1 0 0 1 0\n1 0 1 1 1\n0 0 1 0 1\n\
                    4 0 1 2 3\n0 2\n";
        let mesh = parse(text).unwrap();
        assert_eq!(mesh.positions[2], DVec3::new(1.0, 0.0, 1.0));
        assert_eq!(mesh.face(0), &[0, 1, 2, 3]);
        assert_eq!(mesh.segments, vec![[0, 2]]);
        assert_eq!(mesh.uvs.unwrap()[3], [0.0, 1.0]);
    }

    #[test]
    fn refuses_a_header_that_cannot_fit_the_file() {
        let text = "ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\n\
                    property float x\nproperty float y\nproperty float z\nend_header\n";
        // Refused from the header alone (the message names the claimed count), before any
        // allocation; how fast that is is measured in docs/scene-format.md, not asserted here.
        let message = format!("{:#}", parse(text).unwrap_err());
        assert!(message.contains("4000000000 vertex"), "{message}");
    }

    #[test]
    fn refuses_bad_indices_and_values() {
        let header = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n\
                      property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
        for (body, needle) in [
            ("0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n", "out of range"),
            ("0 0 0\n1 0 1e39\n0 1 0\n3 0 1 2\n", "vertex 1"),
            ("0 0 0\n1 0 0\n0 1 0\n3 0 1 -2\n", "not valid"),
            ("0 0 0\n1 0 0\n0 1 0\n2 0 1\n", "2 corners"),
        ] {
            let message = format!("{:#}", parse(&format!("{header}{body}")).unwrap_err());
            assert!(message.contains(needle), "{body:?}: {message}");
        }
    }

    /// The parser's inner errors come out in words, not in Rust's debug form.
    #[test]
    fn says_why_a_value_cannot_be_read() {
        let ascii = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n\
                     property float z\nelement material 1\nproperty uchar red\nend_header\n\
                     0 0 0\n1 0 0\n0 1 0\n999\n";
        let message = format!("{:#}", parse(ascii).unwrap_err());
        assert!(
            message.contains("`999` (out of range for the property's type)"),
            "{message}"
        );
        // A binary face list cut short: three corners announced, one there.
        let mut binary = b"ply\nformat binary_little_endian 1.0\nelement vertex 3\n\
                           property float x\nproperty float y\nproperty float z\nelement face 1\n\
                           property list uchar int vertex_indices\nend_header\n"
            .to_vec();
        for corner in [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
            binary.extend(corner.iter().flat_map(|c| c.to_le_bytes()));
        }
        binary.push(3);
        binary.extend(0i32.to_le_bytes());
        let message = format!("{:#}", parse_ply(&binary).unwrap_err());
        assert!(message.contains("the file ends inside it"), "{message}");
        let nan = ascii.replace("\n1 0 0\n", "\n1 nan 0\n");
        let not_a_number = format!("{:#}", parse(&nan).unwrap_err());
        assert!(
            not_a_number.contains("`1 nan 0` (not a number at column 3)"),
            "{not_a_number}"
        );
        for message in [
            &message,
            &format!("{:#}", parse(ascii).unwrap_err()),
            &not_a_number,
        ] {
            assert!(
                !message.contains("kind:") && !message.contains(" { "),
                "{message}"
            );
        }
    }
}
