//! TetGen `.node` / `.ele` reader: `mesh = "jelly.node"` reads `jelly.node` and `jelly.ele`.
//!
//! `.node`: a header `N 3 attributes markers`, then `index x y z [attributes] [marker]`.
//! `.ele`: a header `T nodes_per_tet attributes`, then `index n1 n2 n3 n4 …` (4 or 10 nodes per
//! tetrahedron; the first four are the corners). Indices start at the first node's number
//! (usually 0 or 1; any number is taken, and the rest must follow it in order). `#` starts a
//! comment. The written surface is the boundary of the tetrahedra
//! ([`super::Mesh::set_boundary_faces`]); every node stays a vertex, in file order.

use super::obj::parse_coordinate;
use super::{Mesh, MAX_VERTICES};
use crate::constraints::tet_volume::tet_volume;
use crate::quote::{quoted, shown_path};
use anyhow::{bail, Context, Result};
use glam::DVec3;
use std::path::Path;

pub fn read_tetgen(node_path: &Path) -> Result<Mesh> {
    let ele_path = node_path.with_extension("ele");
    let nodes = super::text::read(node_path)?;
    let elements = super::text::read(&ele_path)?;
    parse_tetgen(&nodes, &elements).with_context(|| {
        format!(
            "invalid TetGen mesh {} / {}",
            shown_path(node_path),
            shown_path(&ele_path)
        )
    })
}

/// Lines without comments, with their 1-based numbers.
fn records(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(k, line)| {
        let words: Vec<&str> = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        (!words.is_empty()).then_some((k + 1, words))
    })
}

fn count(word: Option<&&str>, what: &str, line: usize) -> Result<usize> {
    word.with_context(|| format!("line {line}: missing {what}"))?
        .parse()
        .map_err(|_| anyhow::anyhow!("line {line}: {what} is not a whole number"))
}

/// Parses a TetGen mesh from the texts of its `.node` and `.ele` files: the nodes, then the
/// tetrahedra, then the surface as their boundary.
pub fn parse_tetgen(nodes: &str, elements: &str) -> Result<Mesh> {
    let (positions, base) = parse_nodes(nodes)?;
    let (tets, tet_lines) = parse_elements(elements, base, positions.len())?;
    let mut mesh = Mesh {
        positions,
        tets,
        ..Mesh::new()
    };
    if let Some(warning) = orientation_warning(&mesh, &tet_lines) {
        mesh.warnings.push(warning);
    }
    mesh.set_boundary_faces();
    Ok(mesh)
}

/// The nodes of a `.node` file, in file order, and the first node's number (0 when there are
/// none), from which the `.ele` file numbers them.
fn parse_nodes(nodes: &str) -> Result<(Vec<DVec3>, usize)> {
    let mut node_lines = records(nodes);
    let (line, header) = node_lines.next().context(".node: empty file")?;
    let node_count = count(header.first(), "the node count", line).context(".node")?;
    if header.get(1).is_some_and(|&d| d != "3") {
        bail!(".node line {line}: only 3-dimensional meshes are supported");
    }
    // A node line (`i x y z`) takes at least 8 bytes of text; a bound of one node per 4
    // bytes refuses any count the file cannot hold, with room to spare (docs/scene-format.md).
    if node_count > nodes.len() / 4 + 1 {
        bail!(".node line {line}: header claims {node_count} nodes, more than the file can hold");
    }
    if node_count > MAX_VERTICES {
        bail!(".node line {line}: {node_count} nodes; at most {MAX_VERTICES} are supported");
    }
    let mut positions = Vec::with_capacity(node_count);
    let mut first_index = None;
    for (line, words) in node_lines.take(node_count) {
        let at = || format!(".node line {line}");
        if words.len() < 4 {
            bail!("{}: expected `index x y z`", at());
        }
        let index = count(words.first(), "the node index", line).context(".node")?;
        let base = *first_index.get_or_insert(index);
        if base.checked_add(positions.len()) != Some(index) {
            bail!(
                "{}: node {index} is out of order (expected {})",
                at(),
                base as u128 + positions.len() as u128
            );
        }
        let xyz = [1, 2, 3].map(|k| parse_coordinate(words[k]));
        let [x, y, z] = [xyz[0].as_ref(), xyz[1].as_ref(), xyz[2].as_ref()];
        let (x, y, z) = match (x, y, z) {
            (Ok(x), Ok(y), Ok(z)) => (*x, *y, *z),
            _ => bail!("{}: coordinates must be finite numbers within ±1e9", at()),
        };
        positions.push(DVec3::new(x, y, z));
    }
    if positions.len() != node_count {
        bail!(
            ".node: header says {node_count} nodes, the file has {}",
            positions.len()
        );
    }
    Ok((positions, first_index.unwrap_or(0)))
}

/// The tetrahedra of an `.ele` file (their first four nodes, as indices from 0 into the
/// `node_count` nodes numbered from `base`), and the line each one is on.
fn parse_elements(
    elements: &str,
    base: usize,
    node_count: usize,
) -> Result<(Vec<[u32; 4]>, Vec<usize>)> {
    let mut element_lines = records(elements);
    let (line, header) = element_lines.next().context(".ele: empty file")?;
    let tet_count = count(header.first(), "the tetrahedron count", line).context(".ele")?;
    let corners = count(header.get(1), "nodes per tetrahedron", line).context(".ele")?;
    if corners != 4 && corners != 10 {
        bail!(".ele line {line}: {corners} nodes per tetrahedron; 4 or 10 are supported");
    }
    if tet_count > elements.len() / 8 + 1 {
        bail!(
            ".ele line {line}: header claims {tet_count} tetrahedra, more than the file can hold"
        );
    }
    let mut tets = Vec::with_capacity(tet_count);
    let mut tet_lines = Vec::with_capacity(tet_count);
    for (line, words) in element_lines.take(tet_count) {
        if words.len() < 5 {
            bail!(".ele line {line}: expected `index n1 n2 n3 n4`");
        }
        let mut tet = [0u32; 4];
        for (slot, word) in tet.iter_mut().zip(&words[1..5]) {
            let node: usize = word.parse().map_err(|_| {
                anyhow::anyhow!(".ele line {line}: `{}` is not a node index", quoted(word))
            })?;
            if node < base || node - base >= node_count {
                bail!(
                    ".ele line {line}: node {node} does not exist ({node_count} nodes from {base})"
                );
            }
            *slot = (node - base) as u32;
        }
        tets.push(tet);
        tet_lines.push(line);
    }
    if tets.len() != tet_count {
        bail!(
            ".ele: header says {tet_count} tetrahedra, the file has {}",
            tets.len()
        );
    }
    Ok((tets, tet_lines))
}

/// A warning when some tetrahedra are flat or turned the other way from the rest.
///
/// A file may orient all its tetrahedra either way (the volume constraint keeps each one's
/// signed rest volume, and the boundary faces are turned outward either way). A tetrahedron
/// oriented against the majority overlaps its neighbours: the mesh folds over itself there,
/// and the solve keeps it folded. A flat one (volume below 10⁻¹² of the largest) has no
/// volume to keep and no mass to give its nodes. Neither stops the import; both are almost
/// always a broken export, so `check` says where the first one is.
fn orientation_warning(mesh: &Mesh, tet_lines: &[usize]) -> Option<String> {
    let volumes: Vec<f64> = mesh
        .tets
        .iter()
        .map(|tet| tet_volume(&tet.map(|i| mesh.positions[i as usize])))
        .collect();
    let largest = volumes.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let flat = |v: f64| v.abs() <= 1e-12 * largest;
    let positive = volumes.iter().filter(|&&v| !flat(v) && v > 0.0).count();
    let negative = volumes.iter().filter(|&&v| !flat(v) && v < 0.0).count();
    let majority_sign = if positive >= negative { 1.0 } else { -1.0 };
    let odd = |v: f64| flat(v) || v * majority_sign < 0.0;
    let first = volumes.iter().position(|&v| odd(v))?;
    let count = volumes.iter().filter(|&&v| odd(v)).count();
    Some(format!(
        "{count} of {} tetrahedra are flat or inverted against the rest (first: .ele line {}); \
         the mesh folds over itself there and the solve keeps it so",
        volumes.len(),
        tet_lines[first]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_two_tets_and_their_boundary() {
        let nodes =
            "# two tets sharing a face\n5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n";
        let elements = "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n";
        let mesh = parse_tetgen(nodes, elements).unwrap();
        assert_eq!(mesh.positions.len(), 5);
        assert_eq!(mesh.tets, vec![[0, 1, 2, 3], [1, 2, 3, 4]]);
        // 8 faces in all, the shared one is inside.
        assert_eq!(mesh.face_count(), 6);
    }

    #[test]
    fn warns_about_inverted_and_flat_tets_not_about_a_consistent_orientation() {
        let nodes = "6 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n6 0.5 0.5 0\n";
        // Both tets turned one way, or both the other: no warning.
        for elements in [
            "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n",
            "2 4 0\n1 1 3 2 4\n2 3 2 4 5\n",
        ] {
            let mesh = parse_tetgen(nodes, elements).unwrap();
            assert!(mesh.warnings.is_empty(), "{:?}", mesh.warnings);
        }
        // Two tets one way, the third turned against them, a fourth flat.
        let elements = "4 4 0\n1 1 2 3 4\n2 2 3 4 5\n# comment\n3 1 3 2 5\n4 1 2 3 6\n";
        let mesh = parse_tetgen(nodes, elements).unwrap();
        assert_eq!(mesh.warnings.len(), 1);
        assert!(
            mesh.warnings[0].starts_with("2 of 4 tetrahedra are flat or inverted")
                && mesh.warnings[0].contains(".ele line 5"),
            "{}",
            mesh.warnings[0]
        );
    }

    #[test]
    fn refuses_bad_files_with_the_line() {
        let good_nodes = "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n";
        for (nodes, elements, needle) in [
            (good_nodes, "1 4 0\n0 0 1 2 9\n", "node 9 does not exist"),
            (
                "4 3 0 0\n0 0 0 0\n1 1 nan 0\n2 0 1 0\n3 0 0 1\n",
                "1 4 0\n0 0 1 2 3\n",
                ".node line 3",
            ),
            (
                "4000000000 3 0 0\n",
                "1 4 0\n0 0 1 2 3\n",
                "more than the file can hold",
            ),
            (
                good_nodes,
                "1 6 0\n0 0 1 2 3 0 0\n",
                "6 nodes per tetrahedron",
            ),
            (good_nodes, "2 4 0\n0 0 1 2 3\n", "the file has 1"),
            // The line said once (the context named it again: ".node line 3: line 3: …").
            (
                "4 3 0 0\n0 0 0 0\n1.5 1 0 0\n2 0 1 0\n3 0 0 1\n",
                "1 4 0\n0 0 1 2 3\n",
                ".node: line 3: the node index is not a whole number",
            ),
            // A first index of usize::MAX: adding the node count to it overflowed.
            (
                "2 3 0 0\n18446744073709551615 0 0 0\n0 0 0 0\n",
                "1 4 0\n0 0 1 2 3\n",
                "node 0 is out of order (expected 18446744073709551616)",
            ),
        ] {
            let message = format!("{:#}", parse_tetgen(nodes, elements).unwrap_err());
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }
}
