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
