use super::*;
use crate::mesh::primitives;
use glam::{DMat3, DQuat};

/// A `size × size` grid of `n × n` vertices in the XZ plane, normal +Y (the crate's grid).
fn grid(size: f64, n: usize) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let mesh = primitives::grid([size, size], n, n);
    let triangles = mesh.triangles();
    (mesh.positions, triangles)
}

fn placed(binding: &Binding, positions: &[DVec3], triangles: &[[u32; 3]]) -> Vec<DVec3> {
    let (mut normals, mut out) = (Vec::new(), Vec::new());
    binding.place(positions, triangles, &mut normals, &mut out);
    assert_eq!(out.len(), binding.len());
    out
}

fn max_error(a: &[DVec3], b: &[DVec3]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| x.distance(*y))
        .fold(0.0, f64::max)
}

/// Distance from `p` to the triangle mesh, by brute force.
fn distance_to_mesh(positions: &[DVec3], triangles: &[[u32; 3]], p: DVec3) -> f64 {
    triangles
        .iter()
        .map(|&t| {
            let [a, b, c] = corners(positions, t);
            closest_on_triangle(p, a, b, c).0.distance(p)
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn a_fine_grid_in_the_coarse_plane_places_back_onto_itself() {
    let (coarse, triangles) = grid(1.0, 5);
    let (fine, _) = grid(1.0, 21);
    let binding = Binding::bind(&coarse, &triangles, &fine);
    assert_eq!(binding.len(), 21 * 21);
    let error = max_error(&placed(&binding, &coarse, &triangles), &fine);
    assert!(error < 1e-12, "{error}");
}

/// A coarse mesh that is curved at bind time and a fine one that sticks out past its
/// border and wanders above and below it: every fine vertex is off its triangle's normal
/// field in some way, and the tangential remainder still places it back exactly.
fn curved_and_overhanging() -> (Vec<DVec3>, Vec<[u32; 3]>, Vec<DVec3>) {
    let (mut coarse, triangles) = grid(1.0, 5);
    for p in &mut coarse {
        p.y = 0.3 * p.x * p.x - 0.2 * p.z * p.x;
    }
    let (mut fine, _) = grid(1.3, 21);
    for p in &mut fine {
        p.y = 0.3 * p.x * p.x + 0.02 * (7.0 * p.x).sin() * (5.0 * p.z).cos();
    }
    (coarse, triangles, fine)
}

#[test]
fn bind_time_placement_is_exact_off_the_normal_field_too() {
    let (coarse, triangles, fine) = curved_and_overhanging();
    let binding = Binding::bind(&coarse, &triangles, &fine);
    // Without the remainder these would be off: the overhang alone is up to 0.15.
    let largest_remainder = binding
        .vertices()
        .iter()
        .map(|v| v.tangential[0].hypot(v.tangential[1]))
        .fold(0.0, f64::max);
    assert!(largest_remainder > 0.1, "{largest_remainder}");
    let error = max_error(&placed(&binding, &coarse, &triangles), &fine);
    assert!(error < 1e-12, "{error}");
}

#[test]
fn a_rigid_motion_of_the_coarse_mesh_moves_the_fine_mesh_rigidly() {
    let (coarse, triangles, fine) = curved_and_overhanging();
    let binding = Binding::bind(&coarse, &triangles, &fine);
    let rotation = DQuat::from_axis_angle(DVec3::new(1.0, -2.0, 0.5).normalize(), 2.1);
    let shift = DVec3::new(3.0, -1.5, 40.0);
    let moved = |p: &DVec3| rotation * *p + shift;
    let coarse_moved: Vec<DVec3> = coarse.iter().map(moved).collect();
    let fine_moved: Vec<DVec3> = fine.iter().map(moved).collect();
    let error = max_error(&placed(&binding, &coarse_moved, &triangles), &fine_moved);
    assert!(error < 1e-9, "{error}");
}

#[test]
fn an_offset_grid_keeps_its_offset_along_the_normal_when_the_coarse_grid_bends() {
    // Coarse 5 × 5 over [−0.5, 0.5]², fine 21 × 21 one centimetre above it (+Y).
    let h = 0.01;
    let (coarse, triangles) = grid(1.0, 5);
    let (mut fine, _) = grid(1.0, 21);
    for p in &mut fine {
        p.y = h;
    }
    let binding = Binding::bind(&coarse, &triangles, &fine);
    for v in binding.vertices() {
        assert!((v.offset - h).abs() < 1e-15, "{v:?}");
    }
    // Bend the coarse grid onto a cylinder of radius R about the Z axis through
    // (0, −R, 0): x becomes the arc length, +Y the outward radial direction.
    let radius = 1.0;
    let bend = |p: DVec3| {
        let angle = p.x / radius;
        DVec3::new(
            (radius + p.y) * angle.sin(),
            (radius + p.y) * angle.cos() - radius,
            p.z,
        )
    };
    let bent: Vec<DVec3> = coarse.iter().map(|&p| bend(p)).collect();
    let out = placed(&binding, &bent, &triangles);
    // Known answer, derived: each quad of the bent grid is a planar rectangle (a chord of
    // the circle times Z) whose normal is radial at its middle angle; every vertex normal
    // is a positive combination of its quads' normals, so it is perpendicular to Z and
    // turned at most one quad angle Δφ = 0.25 / R from the normal of any quad it touches,
    // and so is the interpolated normal d at a bound point. The fine vertex is
    // p = q + h d (no remainder: the grids were flat and parallel), so |p − q| = h, and
    // its distance to the bent coarse surface is at most h (q is on it) and at least its
    // height over the plane of its own quad, h (d · n_face) ≥ h cos Δφ: the polyhedral
    // arc spans less than a half circle, so it lies behind every one of its faces' planes.
    let delta = 0.25 / radius;
    let lower = h * delta.cos();
    for (k, p) in out.iter().enumerate() {
        let v = binding.vertices()[k];
        let [a, b, c] = corners(&bent, v.corners);
        let q = a * v.weights[0] + b * v.weights[1] + c * v.weights[2];
        assert!(
            (p.distance(q) - h).abs() < 1e-14,
            "{k}: |p − q| = {}",
            p.distance(q)
        );
        let distance = distance_to_mesh(&bent, &triangles, *p);
        assert!(
            distance <= h + 1e-14 && distance >= lower - 1e-14,
            "{k}: distance {distance} outside [{lower}, {h}]"
        );
        // And outside the cylinder, as the offset's sign says.
        assert!((*p + DVec3::new(0.0, radius, 0.0)).truncate().length() > radius);
    }
}

#[test]
fn carry_of_a_uniform_velocity_is_that_velocity_and_a_linear_field_is_sampled_exactly() {
    let (coarse, triangles, fine) = curved_and_overhanging();
    let binding = Binding::bind(&coarse, &triangles, &fine);
    let velocity = DVec3::new(0.3, -2.0, 1.25);
    let mut out = Vec::new();
    binding.carry(&vec![velocity; coarse.len()], &mut out);
    assert_eq!(out.len(), fine.len());
    for v in &out {
        assert!((*v - velocity).length() < 1e-15, "{v}");
    }
    // A rigid-body velocity field v(x) = ω × x + u (linear in x): the bound point's.
    let (omega, u) = (DVec3::new(0.1, 0.7, -0.4), DVec3::new(1.0, 0.0, 2.0));
    let field = |x: DVec3| omega.cross(x) + u;
    let velocities: Vec<DVec3> = coarse.iter().map(|&x| field(x)).collect();
    binding.carry(&velocities, &mut out);
    for (v, bound) in out.iter().zip(binding.vertices()) {
        let [a, b, c] = corners(&coarse, bound.corners);
        let q = a * bound.weights[0] + b * bound.weights[1] + c * bound.weights[2];
        assert!((*v - field(q)).length() < 1e-14, "{v}");
    }
}

#[test]
fn degenerate_triangles_give_no_nan() {
    let finite = |points: &[DVec3]| points.iter().all(|p| p.is_finite());
    let (fine, _) = grid(1.3, 9);
    let fine: Vec<DVec3> = fine.iter().map(|p| *p + DVec3::Y * 0.05).collect();
    // A good mesh with a sliver (collinear) and a point triangle among its triangles.
    let (mut coarse, mut triangles) = grid(1.0, 3);
    let base = coarse.len() as u32;
    coarse.extend([
        DVec3::new(0.0, 0.0, 0.0),
        DVec3::new(0.1, 0.0, 0.0),
        DVec3::new(0.2, 0.0, 0.0),
        DVec3::new(0.25, 0.0, 0.25),
    ]);
    triangles.insert(0, [base, base + 1, base + 2]); // a line
    triangles.insert(0, [base + 3, base + 3, base + 3]); // a point
    let binding = Binding::bind(&coarse, &triangles, &fine);
    assert!(binding.vertices().iter().any(|v| v.triangle < 2));
    let out = placed(&binding, &coarse, &triangles);
    assert!(finite(&out));
    // The sliver's vertices have no area around them: its normal is the face normal's
    // fallback, which is zero too, so vertices bound to it sit on it (no offset); the
    // point triangle likewise.
    for (p, v) in out.iter().zip(binding.vertices()) {
        if v.triangle < 2 {
            assert!(p.y.abs() < 1e-15, "{p}");
        }
    }
    // The whole coarse mesh collapsed to one point: everything lands on it.
    let point = DVec3::new(0.5, 2.0, -1.0);
    let collapsed = vec![point; coarse.len()];
    let out = placed(&binding, &collapsed, &triangles);
    assert!(out.iter().all(|&p| p == point));
    // Collapsed onto a line (the X axis): finite, and on the line.
    let line: Vec<DVec3> = coarse.iter().map(|p| DVec3::X * p.x).collect();
    let out = placed(&binding, &line, &triangles);
    assert!(finite(&out));
    // Bound to a collapsed mesh in the first place.
    let binding = Binding::bind(&collapsed, &triangles, &fine);
    assert!(finite(&placed(&binding, &collapsed, &triangles)));
    assert!(finite(&placed(&binding, &coarse, &triangles)));
    let binding = Binding::bind(&line, &triangles, &fine);
    assert!(finite(&placed(&binding, &line, &triangles)));
    assert!(finite(&placed(&binding, &coarse, &triangles)));
}

#[test]
fn ties_pick_the_lowest_triangle_index() {
    let (coarse, triangles) = grid(1.0, 5);
    // Straight above the middle vertex (the origin, exactly): its six triangles are all
    // exactly 0.3 away.
    let middle = 12u32;
    assert_eq!(coarse[middle as usize], DVec3::ZERO);
    let p = DVec3::new(0.0, 0.3, 0.0);
    let around: Vec<u32> = (0..triangles.len() as u32)
        .filter(|&t| triangles[t as usize].contains(&middle))
        .collect();
    assert_eq!(around.len(), 6);
    for &t in &around {
        let [a, b, c] = corners(&coarse, triangles[t as usize]);
        assert_eq!(closest_on_triangle(p, a, b, c).0.distance(p), 0.3);
    }
    let binding = Binding::bind(&coarse, &triangles, &[p]);
    assert_eq!(binding.vertices()[0].triangle, around[0]);
    // Reversed triangle order: the lowest index is now the one that was the highest.
    let reversed: Vec<[u32; 3]> = triangles.iter().rev().copied().collect();
    let binding = Binding::bind(&coarse, &reversed, &[p]);
    let expected = triangles.len() as u32 - 1 - around[around.len() - 1];
    assert_eq!(binding.vertices()[0].triangle, expected);
    // A duplicated triangle: the first copy, wherever the copies are.
    let mut doubled = triangles.clone();
    doubled.push(triangles[7]);
    doubled.swap(3, 7); // copies at 3 and at the end
    let q = {
        let [a, b, c] = corners(&coarse, triangles[7]);
        (a + b + c) / 3.0 + DVec3::Y * 0.1
    };
    let binding = Binding::bind(&coarse, &doubled, &[q, q]);
    assert!(binding.vertices().iter().all(|v| v.triangle == 3));
    // Binding is a function of its input: the same twice, bit for bit.
    let (_, _, fine) = curved_and_overhanging();
    assert_eq!(
        Binding::bind(&coarse, &triangles, &fine),
        Binding::bind(&coarse, &triangles, &fine)
    );
}

#[test]
fn bind_finds_the_nearest_triangle() {
    let (coarse, triangles, fine) = curved_and_overhanging();
    let binding = Binding::bind(&coarse, &triangles, &fine);
    for (p, v) in fine.iter().zip(binding.vertices()) {
        let [a, b, c] = corners(&coarse, v.corners);
        let (point, weights) = closest_on_triangle(*p, a, b, c);
        assert_eq!(weights, v.weights);
        assert_eq!(
            point.distance(*p),
            distance_to_mesh(&coarse, &triangles, *p)
        );
    }
}

#[test]
fn spatial_order_is_a_permutation_in_z_order() {
    // The 2 × 2 × 2 corners of a box: Morton order is x fastest, then y, then z.
    let mut points = Vec::new();
    for k in [5, 3, 0, 6, 1, 7, 2, 4u32] {
        points.push(DVec3::new(
            f64::from(k & 1),
            f64::from(k >> 1 & 1) * 2.0,
            f64::from(k >> 2) * 3.0,
        ));
    }
    let order = spatial_order(&points);
    let codes: Vec<u32> = order
        .iter()
        .map(|&i| {
            let p = points[i as usize];
            p.x as u32 | ((p.y / 2.0) as u32) << 1 | ((p.z / 3.0) as u32) << 2
        })
        .collect();
    assert_eq!(codes, (0..8).collect::<Vec<u32>>());
    // Equal points keep index order; a flat or empty set is fine.
    assert_eq!(spatial_order(&[DVec3::ONE; 4]), vec![0, 1, 2, 3]);
    assert!(spatial_order(&[]).is_empty());
    // Bit i goes to bit 3i, for all 21 bits.
    for i in 0..21 {
        assert_eq!(spread(1 << i), 1 << (3 * i));
    }
    assert_eq!(spread(u64::MAX), 0x1249_2492_4924_9249);
}

/// `cargo test --release --lib binding -- --ignored --nocapture`
#[test]
#[ignore]
fn timing_100k_render_vertices_on_20k_triangles() {
    // 101 × 101 coarse vertices: 20 000 triangles; 317 × 317 = 100 489 fine vertices.
    let (mut coarse, triangles) = grid(2.0, 101);
    let wave = |p: DVec3| 0.1 * (3.0 * p.x).sin() * (2.0 * p.z).cos();
    for p in &mut coarse {
        p.y = wave(*p);
    }
    let (mut fine, _) = grid(2.0, 317);
    for p in &mut fine {
        p.y = wave(*p) + 0.005;
    }
    assert_eq!(triangles.len(), 20_000);
    let start = std::time::Instant::now();
    let binding = Binding::bind(&coarse, &triangles, &fine);
    let bind = start.elapsed();
    let (mut normals, mut out) = (Vec::new(), Vec::new());
    binding.place(&coarse, &triangles, &mut normals, &mut out);
    let start = std::time::Instant::now();
    let spin = DMat3::from_rotation_y(0.3);
    let moved: Vec<DVec3> = coarse.iter().map(|&p| spin * p).collect();
    binding.place(&moved, &triangles, &mut normals, &mut out);
    let place = start.elapsed();
    println!(
        "bind {} fine vertices on {} triangles: {:.1} ms; place: {:.2} ms",
        fine.len(),
        triangles.len(),
        bind.as_secs_f64() * 1e3,
        place.as_secs_f64() * 1e3
    );
    // The same vertices in a scrambled order (k ↦ 7919 k mod n, a permutation): the
    // binding must not depend on the fine vertices coming in runs of neighbours.
    let n = fine.len();
    let scrambled: Vec<DVec3> = (0..n).map(|k| fine[k * 7919 % n]).collect();
    let start = std::time::Instant::now();
    let binding_scrambled = Binding::bind(&coarse, &triangles, &scrambled);
    println!(
        "bind the same, scrambled order: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    for k in 0..n {
        assert_eq!(
            binding_scrambled.vertices()[k],
            binding.vertices()[k * 7919 % n]
        );
    }
    // Spot-check the nearest triangle against brute force.
    for k in (0..fine.len()).step_by(997) {
        let v = binding.vertices()[k];
        let [a, b, c] = corners(&coarse, v.corners);
        let found = closest_on_triangle(fine[k], a, b, c).0.distance(fine[k]);
        assert_eq!(found, distance_to_mesh(&coarse, &triangles, fine[k]));
    }
}
