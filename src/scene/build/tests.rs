use super::*;
use crate::scene::load::parse;

/// Builds the scene `text`, with mesh paths relative to the working directory.
pub(in crate::scene) fn build_text(text: &str) -> Result<Built> {
    let file = parse(text).map_err(|e| anyhow!("{e:#}"))?;
    build(&LoadedScene {
        path: "test.toml".into(),
        base_dir: ".".into(),
        sha256: String::new(),
        file,
    })
}

#[test]
fn grid_masses_are_lumped_by_area() {
    // 2 x 2 quads of 0.5 m: corner (0,0) touches 2 triangles of area 1/8, an edge-middle
    // vertex 3, the centre 6; density 2 kg/m².
    let built = build_text(
            "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [3, 3] }\ndensity = 2.0\n",
        )
        .unwrap();
    let m = &built.model.particles.mass;
    let tri = 0.125 / 3.0 * 2.0;
    assert!((m[0] - 2.0 * tri).abs() < 1e-15); // corner with a split diagonal: 2 triangles
    assert!((m[2] - tri).abs() < 1e-15); // the other diagonal's corner: 1 triangle
    assert!((m[4] - 6.0 * tri).abs() < 1e-15);
    assert!((m.iter().sum::<f64>() - 2.0).abs() < 1e-12);
}

#[test]
fn rope_mass_by_length_total_mass_and_pins() {
    let built = build_text(
            "[[object]]\nname = \"r\"\nrope = { start = [0.0, 0.0, 0.0], end = [3.0, 0.0, 0.0], segments = 3 }\n\
             mass = 6.0\npin = [0]\nstretch = {}\n",
        )
        .unwrap();
    let p = &built.model.particles;
    assert_eq!(p.mass, vec![1.0, 2.0, 2.0, 1.0]);
    assert_eq!(p.inv_mass, vec![0.0, 0.5, 0.5, 1.0]);
    assert_eq!(built.model.stretch.len(), 3);
}

#[test]
fn placement_scales_rotates_then_translates() {
    // Rotating +X by 90° about Z gives +Y.
    let r = rotation([0.0, 0.0, 90.0]);
    assert!((r * DVec3::X - DVec3::Y).length() < 1e-15);
    // R = Rz·Ry·Rx: X first. +Y about X by 90° → +Z, then about Z by 90° stays +Z.
    let r = rotation([90.0, 0.0, 90.0]);
    assert!((r * DVec3::Y - DVec3::Z).length() < 1e-15);
    let built = build_text(
            "[[object]]\nname = \"r\"\nrope = { start = [0.0, 0.0, 0.0], end = [1.0, 0.0, 0.0], segments = 1 }\n\
             particle_mass = 1.0\nscale = 2.0\nrotate = [0.0, 0.0, 90.0]\ntranslate = [0.0, 0.0, 5.0]\n",
        )
        .unwrap();
    assert!((built.model.particles.x[1] - DVec3::new(0.0, 2.0, 5.0)).length() < 1e-15);
}

#[test]
fn tet_boxes_lump_by_volume_and_get_tets_and_edges() {
    let built = build_text(
        "[[object]]\nname = \"j\"\nbox = { size = [1.0, 1.0, 2.0], resolution = [2, 2, 3] }\n\
             density = 100.0\ntets = { compliance = 1e-6 }\nstretch = {}\n",
    )
    .unwrap();
    let model = &built.model;
    assert_eq!(model.tets.len(), 12);
    assert!((model.particles.mass.iter().sum::<f64>() - 200.0).abs() < 1e-9);
    let volume: f64 = model.tets.items.iter().map(|t| t.rest_volume).sum();
    assert!((volume - 2.0).abs() < 1e-12);
    // Cube edges, face diagonals and the two cells' main diagonals.
    assert!(model.stretch.len() > 12);
    // The volume-change figure measures against the tetrahedra's rest volume.
    let rest = model.objects[0].rest_volume.unwrap();
    assert!((rest - 2.0).abs() < 1e-12);
    assert_eq!(
        model.objects[0].volume_change(&model.particles.x),
        Some(0.0)
    );
}

#[test]
fn closed_surfaces_have_a_rest_volume_and_open_ones_none() {
    let built = build_text(
            "[[object]]\nname = \"b\"\nbox = { size = [1.0, 2.0, 3.0] }\ndensity = 1.0\n\
             [[object]]\nname = \"g\"\ngrid = { size = [1.0, 1.0], resolution = [3, 3] }\ndensity = 1.0\n\
             [[object]]\nname = \"t\"\nsphere = { radius = 1.0, subdivisions = 1 }\ndensity = 1.0\n\
             stretch = { tear_strain = 0.5 }\n",
        )
        .unwrap();
    let objects = &built.model.objects;
    assert!((objects[0].rest_volume.unwrap() - 6.0).abs() < 1e-12);
    assert_eq!(objects[1].rest_volume, None);
    assert_eq!(
        objects[2].rest_volume, None,
        "an object that can tear has none"
    );
}

#[test]
fn geometry_errors_name_the_object() {
    for (text, needle) in [
            ("[[object]]\nname = \"g\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\ndensity = 1.0\nvolume = {}\n", "closed surface"),
            ("[[object]]\nname = \"g\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\ndensity = 1.0\npin = [4]\n", "object[0] (g).pin[0]: index 4 is out of range"),
            ("[[object]]\nname = \"g\"\ngrid = { size = [1.0, 1.0], resolution = [2000000, 2000000] }\ndensity = 1.0\n", "limit"),
            ("[[object]]\nname = \"m\"\nmesh = \"does/not/exist.obj\"\ndensity = 1.0\n", "cannot read"),
            ("[[object]]\nname = \"g\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\ndensity = 1e-320\n", "particle masses must be from 1e-12 to 1e12 kg"),
            ("[[object]]\nname = \"g\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\nparticle_mass = 1e300\n", "particle masses must be from"),
            ("[[object]]\nname = \"r\"\nrope = { start = [0.0, 0.0, 0.0], end = [1.0, 0.0, 0.0], segments = 2 }\ndensity = 1.0\nvolume = {}\n", "has none"),
        ] {
            let message = format!("{:#}", build_text(text).err().expect(text));
            assert!(message.contains(needle), "{needle}: {message}");
        }
}
