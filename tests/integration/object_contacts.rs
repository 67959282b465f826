//! Contacts between objects: particles of different objects (`collide = true`) are spheres of
//! radius `collision.thickness` and do not pass through each other. Spheres cover a cloth only
//! when their diameter reaches the particle spacing (4 cm here, so r = 2.5 cm); with smaller
//! spheres the particles of one cloth slip through the gaps of the other (point–triangle
//! contacts, not yet done, close them).

use crate::common::*;

const TWO_CLOTHS: &str = "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 20\n[collision]\nthickness = 0.025\nfriction = 0.4\n\
    [[object]]\nname = \"under\"\ngrid = { size = [0.6, 0.6], resolution = [16, 16] }\ntranslate = [0.0, 0.025, 0.0]\n\
    density = 0.2\nstretch = {}\nbending = { compliance = 10.0 }\n\
    [[object]]\nname = \"over\"\ngrid = { size = [0.5, 0.5], resolution = [14, 14] }\ntranslate = [0.02, 0.3, 0.01]\n\
    density = 0.2\nstretch = {}\nbending = { compliance = 10.0 }\n\
    [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.5\n";

/// The closest distance between a particle of `under` and one of `over`, over every frame.
fn closest_approach(ws: &Workspace) -> f64 {
    let under = obj_sequence(&ws.out(), "under", 24);
    let over = obj_sequence(&ws.out(), "over", 24);
    let mut closest = f64::INFINITY;
    for (a, b) in under.iter().zip(&over) {
        for &p in a {
            for &q in b {
                closest = closest.min(distance(p, q));
            }
        }
    }
    closest
}

#[test]
fn a_cloth_falling_on_another_does_not_pass_through_it() {
    let ws = Workspace::new();
    ws.run_ok(TWO_CLOTHS, &[]);
    let closest = closest_approach(&ws);
    assert!(
        closest > 0.05 - 1e-3,
        "particles of the two cloths came within {closest} m"
    );
    let frames = frame_records(&ws.out());
    let touching = frames.last().unwrap()["particle_contacts"]
        .as_u64()
        .unwrap();
    assert!(
        touching > 50,
        "only {touching} particle contacts: the cloths never met"
    );
    // The upper cloth rests on the lower one, about a particle diameter higher. Without contacts
    // (`collide = false` also skips the ground) it falls through both.
    let mean_height = |ws: &Workspace, name: &str| {
        let last = obj_positions(&ws.out().join(format!("{name}.0024.obj")));
        last.iter().map(|p| p[1]).sum::<f64>() / last.len() as f64
    };
    assert!(mean_height(&ws, "over") > mean_height(&ws, "under") + 0.03);
    let through = Workspace::new();
    through.run_ok(TWO_CLOTHS, &["--set", "object.over.collide=false"]);
    assert!(mean_height(&through, "over") < 0.0);
}

/// A particle of `column_mass` kg on a compliant column (a one-segment rope pinned at its foot,
/// compliance α = 0.01 m/N, g = 10 m/s²), and a rope of two `load_mass` particles standing on
/// it; `velocity_damping` lets it settle (it does not move the equilibrium). Returns how far
/// the column is compressed after four seconds, m.
fn column_under_a_load(max_mass_ratio: &str, column_mass: f64, load_mass: f64) -> f64 {
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = 96\nsubsteps = 20\niterations = 2\n\
         gravity = [0.0, -10.0, 0.0]\nvelocity_damping = 2.0\n\
         [output]\nformats = [\"obj\"]\n[collision]\nthickness = 0.01\n\
         [[object]]\nname = \"column\"\nrope = {{ start = [0.0, 0.0, 0.0], end = [0.0, 0.1, 0.0], segments = 1 }}\n\
         particle_mass = {column_mass}\npin = [0]\nstretch = {{ compliance = 0.01 }}\n\
         [[object]]\nname = \"load\"\nrope = {{ start = [0.0, 0.12, 0.0], end = [0.0, 0.17, 0.0], segments = 1 }}\n\
         particle_mass = {load_mass}\nstretch = {{ compliance = 0.0 }}\n"
    );
    let ws = Workspace::new();
    let ratio = format!("collision.max_mass_ratio={max_mass_ratio}");
    ws.run_ok(&scene, &["--set", &ratio]);
    let column = obj_positions(&ws.out().join("column.0096.obj"));
    0.1 - column[1][1]
}

#[test]
fn a_capped_contact_passes_on_the_load_scaled_by_the_capped_mass_ratio() {
    // Known answers (docs/physics.md, "Heavy on light"): a 10 g column particle under two
    // 100 g load particles. With true masses the column carries its particle and the load:
    // α (m + 2M) g = 0.01 · 0.21 · 10. With the ratio capped at R the contact moves the light
    // particle under the load R times as far as the heavy one, so the column carries its
    // particle and R m/M of the load: α m (1 + 2R) g. The positions are read after the last
    // contact of a substep, which leaves them about one g h² off.
    let g_h2 = 10.0 / (24.0 * 20.0_f64).powi(2);
    let true_masses = column_under_a_load("1e9", 0.01, 0.1);
    assert!(
        (true_masses - 0.01 * 0.21 * 10.0).abs() < 2.0 * g_h2,
        "{true_masses}"
    );
    for ratio in [4.0, 1.0] {
        let capped = column_under_a_load(&ratio.to_string(), 0.01, 0.1);
        let expected = 0.01 * 0.01 * (1.0 + 2.0 * ratio) * 10.0;
        assert!(
            (capped - expected).abs() < 2.0 * g_h2,
            "ratio {ratio}: {capped} against {expected}"
        );
    }
    // A light load on a heavy column is not capped (the heavy side supports): two 10 g
    // particles on a 100 g one compress the column by α (M + 2m) g at ratio 1 too.
    let light_load = column_under_a_load("1", 0.1, 0.01);
    assert!(
        (light_load - 0.01 * 0.12 * 10.0).abs() < 2.0 * g_h2,
        "{light_load}"
    );
}
