use super::*;

#[test]
fn plane_and_sphere_distances() {
    let plane = Shape::Plane {
        point: DVec3::new(0.0, 1.0, 0.0),
        normal: DVec3::Y,
    };
    assert_eq!(plane.signed_distance(DVec3::new(3.0, 0.5, 2.0)).0, -0.5);
    let sphere = Shape::Sphere {
        center: DVec3::ZERO,
        radius: 1.0,
    };
    let (d, n) = sphere.signed_distance(DVec3::new(0.0, 0.0, 3.0));
    assert_eq!((d, n), (2.0, DVec3::Z));
}

fn ground(static_friction: f64, dynamic_friction: f64) -> Collider {
    Collider {
        animation: None,
        mesh: None,
        name: "ground".into(),
        shape: Shape::Plane {
            point: DVec3::ZERO,
            normal: DVec3::Y,
        },
        static_friction,
        dynamic_friction,
        restitution: 0.0,
        thickness: 0.0,
    }
}

/// A still mesh collider without friction.
pub(super) fn mesh_collider(positions: Vec<DVec3>, triangles: Vec<[u32; 3]>) -> Collider {
    Collider {
        name: "mesh".into(),
        shape: Shape::Mesh,
        static_friction: 0.0,
        dynamic_friction: 0.0,
        restitution: 0.0,
        thickness: 0.0,
        animation: None,
        mesh: Some(MeshGeometry {
            frames: vec![positions],
            triangles,
            fps: 24.0,
        }),
    }
}

#[test]
fn mesh_sign_is_right_at_a_sharp_ridge() {
    // A steep roof: two faces meet along the X axis with normals ~147° apart. A point just
    // outside, nearest to the ridge itself, lies behind the first face's plane: that
    // face's normal alone calls it inside; the edge's pseudo-normal does not.
    let positions = vec![
        DVec3::new(-1.0, 0.0, 0.0),
        DVec3::new(1.0, 0.0, 0.0),
        DVec3::new(0.0, -1.0, 0.3),
        DVec3::new(0.0, -1.0, -0.3),
    ];
    let triangles = vec![[0, 1, 3], [1, 0, 2]];
    let normal = |t: [u32; 3]| {
        let p = t.map(|i| positions[i as usize]);
        (p[1] - p[0]).cross(p[2] - p[0]).normalize()
    };
    let (n_b, n_a) = (normal(triangles[0]), normal(triangles[1]));
    let p = (n_a + n_b * 0.01) * 0.05;
    assert!(
        p.dot(n_b) < 0.0,
        "the point must be behind the first face's plane"
    );
    let collider = mesh_collider(positions.clone(), triangles);
    let pose = MeshPose::new(&collider, 0.0).unwrap();
    let posed = PosedCollider {
        mesh: Some(&pose),
        ..collider.posed(0.0, 0.0)
    };
    let (d, n, _) = posed.distance(p, 10.0).unwrap();
    assert!(
        (d - p.length()).abs() < 1e-12,
        "outside by {}, got {d}",
        p.length()
    );
    assert_eq!(posed.distance_and_normal(p, 10.0), Some((d, n)));
    assert_eq!(
        posed.distance_and_normal(p * 1e3, 10.0),
        None,
        "out of reach"
    );
}

/// Without a mesh, the distance and normal are the posed shape's, as `distance` gives
/// them with the surface's motion (an animated plane here, so that the motion is not
/// zero).
#[test]
fn distance_and_normal_is_distance_without_the_motion() {
    let mut collider = ground(0.5, 0.5);
    let key = |time: f64, x: f64| crate::animation::Key {
        time,
        translate: DVec3::new(x, 0.0, 0.0),
        rotate: DVec3::new(0.0, 0.0, 30.0 * time),
    };
    collider.animation = Some(crate::animation::Animation {
        keys: vec![key(0.0, 0.0), key(1.0, 0.5)],
    });
    let posed = collider.posed(0.0, 0.1);
    let p = DVec3::new(0.3, 0.2, -0.4);
    let (d, n, motion) = posed.distance(p, 1.0).unwrap();
    assert!(motion.length() > 0.0);
    assert_eq!(posed.distance_and_normal(p, 1.0), Some((d, n)));
}

#[test]
fn mesh_sign_is_right_beside_edges_and_corners() {
    // A unit box surface as a mesh: signed distances beside its edges and corners, and
    // inside it.
    let surface = crate::mesh::primitives::box_surface([1.0, 1.0, 1.0], [2, 2, 2]);
    let collider = mesh_collider(surface.positions.clone(), surface.triangles());
    let pose = MeshPose::new(&collider, 0.0).unwrap();
    let posed = PosedCollider {
        mesh: Some(&pose),
        ..collider.posed(0.0, 0.0)
    };
    for (p, expected) in [
        (DVec3::new(0.9, 0.49, 0.0), 0.4), // beside the +X top edge
        (DVec3::new(0.9, 0.49, 0.9), (0.4f64 * 0.4 * 2.0).sqrt()), // beside a top corner
        (DVec3::new(0.0, 0.3, 0.0), -0.2), // inside, under the top
    ] {
        let (d, _, _) = posed.distance(p, 10.0).unwrap();
        assert!((d - expected).abs() < 1e-12, "{p}: {d} vs {expected}");
    }
}

/// The pseudo-normals of a box's surface mesh, known in advance, at every vertex, edge
/// and face of it: a box corner's along its diagonal `(±1, ±1, ±1)` (three faces, a
/// right angle each, whatever the box's proportions), a point on a box edge's halfway
/// between the two faces, anything inside a face the face's; at the end pose of a moving
/// mesh.
#[test]
fn pseudo_normals_of_a_box_bisect_its_corners_and_edges() {
    let half = DVec3::new(0.5, 1.0, 1.5);
    let surface = crate::mesh::primitives::box_surface((2.0 * half).to_array(), [3, 4, 3]);
    let lift = DVec3::new(0.0, 3.0, 0.0);
    let mut collider = mesh_collider(surface.positions.clone(), surface.triangles());
    let geometry = collider.mesh.as_mut().unwrap();
    let moved = geometry.frames[0].iter().map(|&p| p + lift).collect();
    geometry.frames.push(moved);
    let pose = MeshPose::new(&collider, 1.0).unwrap(); // the second frame
    let mesh = collider.mesh.as_ref().unwrap();
    // The box faces a set of surface points all lie on: ±1 on those axes, 0 elsewhere.
    let faces_of =
        |points: &[u32]| {
            let on = |axis: usize, sign: f64| {
                let at = |&v: &u32| (pose.end[v as usize] - lift)[axis] == sign * half[axis];
                points.iter().all(at)
            };
            DVec3::from_array([0, 1, 2].map(|axis| {
                f64::from(u8::from(on(axis, 1.0))) - f64::from(u8::from(on(axis, -1.0)))
            }))
        };
    let mut seen = [0; 4]; // by how many faces the expected normal is made of
    for (t, triangle) in (0u32..).zip(&mesh.triangles) {
        for k in 0..3 {
            let mut vertex = [0.0; 3];
            vertex[k] = 1.0;
            let mut edge = [0.5; 3];
            edge[k] = 0.0; // the edge opposite corner k
            let opposite = [triangle[(k + 1) % 3], triangle[(k + 2) % 3]];
            for (weights, points) in [(vertex, &[triangle[k]][..]), (edge, &opposite[..])] {
                let expected = faces_of(points);
                let normal = pose.pseudo_normal(mesh, t, weights);
                let error = (normal - expected.normalize()).length();
                assert!(error < 1e-12, "{t} {weights:?}: {normal} for {expected}");
                seen[expected.abs().element_sum() as usize] += 1;
            }
        }
    }
    assert!(seen[1] > 50 && seen[2] > 20 && seen[3] >= 8, "{seen:?}");
}

#[test]
fn box_distances_and_normals_inside_and_out() {
    let rotation = glam::DMat3::from_rotation_z(std::f64::consts::FRAC_PI_2);
    let solid = Shape::Box {
        center: DVec3::new(1.0, 0.0, 0.0),
        rotation,
        half: DVec3::new(2.0, 0.5, 0.5),
    };
    // Rotated 90° about Z: its long axis is world Y.
    let (d, n) = solid.signed_distance(DVec3::new(1.0, 3.0, 0.0));
    assert!(
        (d - 1.0).abs() < 1e-12 && (n - DVec3::Y).length() < 1e-12,
        "{d} {n}"
    );
    let (d, n) = solid.signed_distance(DVec3::new(1.3, 0.0, 0.0));
    assert!(
        (d + 0.2).abs() < 1e-12 && (n - DVec3::X).length() < 1e-12,
        "{d} {n}"
    );
    // Past a corner: Euclidean distance to it.
    let (d, _) = solid.signed_distance(DVec3::new(2.5, 3.0, 1.5));
    assert!((d - (1.0f64 + 1.0 + 1.0).sqrt()).abs() < 1e-12, "{d}");
}

#[test]
fn capsule_distances_follow_the_segment() {
    let capsule = Shape::Capsule {
        a: DVec3::ZERO,
        b: DVec3::new(2.0, 0.0, 0.0),
        radius: 0.5,
    };
    let (d, n) = capsule.signed_distance(DVec3::new(1.0, 2.0, 0.0));
    assert!((d - 1.5).abs() < 1e-12 && (n - DVec3::Y).length() < 1e-12);
    let (d, n) = capsule.signed_distance(DVec3::new(-1.0, 0.0, 0.0));
    assert!((d - 0.5).abs() < 1e-12 && (n + DVec3::X).length() < 1e-12);
    let (d, _) = capsule.signed_distance(DVec3::new(1.0, 0.1, 0.0));
    assert!((d + 0.4).abs() < 1e-12);
}

#[test]
fn contact_projects_to_the_margin_and_friction_sticks_or_slides() {
    // Pushed 1 mm in while slipping 0.5 mm: μ = 1 holds it (static).
    let mut p = DVec3::new(0.0005, -0.001, 0.0);
    let n = resolve_contact(
        &ground(1.0, 1.0).posed(0.0, 0.0),
        0.0,
        &mut p,
        DVec3::ZERO,
        None,
    )
    .unwrap()
    .0;
    assert_eq!(n, DVec3::Y);
    assert!((p - DVec3::ZERO).length() < 1e-15);
    // Slipping 2 mm with μ = 0.5: 0.5 mm of it is removed (dynamic).
    let mut p = DVec3::new(0.002, -0.001, 0.0);
    resolve_contact(
        &ground(0.5, 0.5).posed(0.0, 0.0),
        0.0,
        &mut p,
        DVec3::ZERO,
        None,
    )
    .unwrap();
    assert!((p - DVec3::new(0.0015, 0.0, 0.0)).length() < 1e-15);
    // Static 1.0 would not hold 2 mm of slip on 1 mm of depth; dynamic 0.25 removes 0.25 mm.
    let mut p = DVec3::new(0.002, -0.001, 0.0);
    resolve_contact(
        &ground(1.0, 0.25).posed(0.0, 0.0),
        0.0,
        &mut p,
        DVec3::ZERO,
        None,
    )
    .unwrap();
    assert!((p - DVec3::new(0.00175, 0.0, 0.0)).length() < 1e-15);
    // Outside the margin nothing happens.
    let mut p = DVec3::new(0.0, 0.02, 0.0);
    assert!(resolve_contact(
        &ground(0.5, 0.5).posed(0.0, 0.0),
        0.01,
        &mut p,
        DVec3::ZERO,
        None
    )
    .is_none());
}
