//! PLY reader (ascii and binary) on ply-rs-bw, the maintained ply-rs fork.
//!
//! Reads `element vertex` (`x y z`, and texture coordinates as `s t`, `u v` or
//! `texture_u texture_v`), `element face` (`vertex_indices` or `vertex_index` lists) and
//! `element edge` (`vertex1 vertex2`, rope segments). Other elements and properties are
//! ignored. The header's element counts are checked against the file size before any payload
//! is read, so a header that claims billions of vertices is refused at once.

use super::obj::check_coordinate;
use super::{Mesh, MAX_POLYGON_VERTICES};
use anyhow::{bail, Context, Result};
use glam::DVec3;
use ply_rs_bw::parser::Parser;
use ply_rs_bw::ply::{DefaultElement, ElementDef, Encoding, Property, PropertyType, ScalarType};
use std::io::{BufRead, BufReader};
use std::path::Path;

pub fn read_ply(path: &Path) -> Result<Mesh> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    parse_ply(BufReader::new(file), file_len)
        .with_context(|| format!("invalid PLY file {}", path.display()))
}

/// Parses a PLY stream of `total_len` bytes (used to refuse impossible element counts).
pub fn parse_ply(mut reader: impl BufRead, total_len: u64) -> Result<Mesh> {
    let parser = Parser::<DefaultElement>::new();
    let header = parser
        .read_header(&mut reader)
        .map_err(|e| anyhow::anyhow!("header: {e}"))?;
    check_counts_fit(
        &header.elements.values().collect::<Vec<_>>(),
        header.encoding,
        total_len,
    )?;
    if !header.elements.contains_key("vertex") {
        bail!("no `element vertex` in the header");
    }

    let mut mesh = Mesh::new();
    for (name, element) in &header.elements {
        let items = parser
            .read_payload_for_element(&mut reader, element, &header)
            .map_err(|e| anyhow::anyhow!("element `{name}`: {e}"))?;
        match name.as_str() {
            "vertex" => read_vertices(&items, element, &mut mesh)?,
            "face" => read_faces(&items, &mut mesh)?,
            "edge" => read_edges(&items, &mut mesh)?,
            _ => {}
        }
    }
    let vertex_count = mesh.positions.len();
    let out_of_range = mesh
        .face_indices
        .iter()
        .chain(mesh.segments.iter().flatten())
        .find(|&&k| k as usize >= vertex_count);
    if let Some(k) = out_of_range {
        bail!("vertex index {k} out of range ({vertex_count} vertices)");
    }
    Ok(mesh)
}

/// Refuses element counts that cannot fit in the file: every binary element takes at least the
/// bytes of its scalars and list counts, every ascii element at least two bytes.
fn check_counts_fit(elements: &[&ElementDef], encoding: Encoding, total_len: u64) -> Result<()> {
    let mut needed: u128 = 0;
    for element in elements {
        let min_bytes: u128 = match encoding {
            Encoding::Ascii => 2,
            _ => element
                .properties
                .values()
                .map(|p| match &p.data_type {
                    PropertyType::Scalar(t) | PropertyType::List(t, _) => scalar_size(t),
                })
                .sum::<u128>()
                .max(1),
        };
        needed += element.count as u128 * min_bytes;
    }
    if needed > total_len as u128 {
        let counts: Vec<String> = elements
            .iter()
            .map(|e| format!("{} {}", e.count, e.name))
            .collect();
        bail!(
            "header declares {} which needs at least {needed} bytes, but the file has {total_len}",
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
    u32::try_from(value).map_err(|_| anyhow::anyhow!("vertex index {value} is not valid"))
}

fn read_vertices(items: &[DefaultElement], def: &ElementDef, mesh: &mut Mesh) -> Result<()> {
    for axis in ["x", "y", "z"] {
        if !def.properties.contains_key(axis) {
            bail!("`element vertex` has no `{axis}` property");
        }
    }
    let uv_names = [["s", "t"], ["u", "v"], ["texture_u", "texture_v"]]
        .into_iter()
        .find(|[u, v]| def.properties.contains_key(*u) && def.properties.contains_key(*v));
    let mut uvs = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let get = |name: &str| -> Result<f64> {
            let value = item
                .get(name)
                .and_then(scalar)
                .with_context(|| format!("vertex {k}: `{name}` is not a number"))?;
            check_coordinate(value).with_context(|| format!("vertex {k}: `{name}`"))?;
            Ok(value)
        };
        mesh.positions
            .push(DVec3::new(get("x")?, get("y")?, get("z")?));
        if let Some([u, v]) = uv_names {
            uvs.push([get(u)?, get(v)?]);
        }
    }
    if uv_names.is_some() {
        mesh.uvs = Some(uvs);
    }
    Ok(())
}

fn read_faces(items: &[DefaultElement], mesh: &mut Mesh) -> Result<()> {
    let mut corners = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let list = item
            .get("vertex_indices")
            .or_else(|| item.get("vertex_index"))
            .and_then(index_list)
            .with_context(|| format!("face {k}: no `vertex_indices` list"))?;
        if list.len() < 3 || list.len() > MAX_POLYGON_VERTICES {
            bail!(
                "face {k} has {} corners; 3 to {MAX_POLYGON_VERTICES} are supported",
                list.len()
            );
        }
        corners.clear();
        for &index in &list {
            corners.push(to_index(index).with_context(|| format!("face {k}"))?);
        }
        mesh.push_face(&corners);
    }
    Ok(())
}

fn read_edges(items: &[DefaultElement], mesh: &mut Mesh) -> Result<()> {
    for (k, item) in items.iter().enumerate() {
        let end = |name: &str| -> Result<u32> {
            let value = item
                .get(name)
                .and_then(scalar)
                .with_context(|| format!("edge {k}: no `{name}`"))?;
            if value.fract() != 0.0 || !(0.0..=u32::MAX as f64).contains(&value) {
                bail!("edge {k}: `{name}` = {value} is not a vertex index");
            }
            to_index(value as i64).with_context(|| format!("edge {k}"))
        };
        mesh.segments.push([end("vertex1")?, end("vertex2")?]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Mesh> {
        parse_ply(text.as_bytes(), text.len() as u64)
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
        let start = std::time::Instant::now();
        let message = format!("{:#}", parse(text).unwrap_err());
        assert!(message.contains("4000000000 vertex"), "{message}");
        assert!(start.elapsed().as_secs() < 1);
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
}
