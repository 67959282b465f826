use super::*;
use crate::collision::test_numbers::Numbers;
use glam::{DMat3, DQuat};

fn sphere(center: DVec3, radius: f64) -> Shape {
    Shape::Sphere { center, radius }
}

fn aligned_box(center: DVec3, half: DVec3) -> Shape {
    Shape::Box {
        center,
        rotation: DMat3::IDENTITY,
        half,
    }
}

/// A large triangle in the plane `y = height`, its corners 2 m or more from the origin.
fn sheet_at(height: f64) -> [DVec3; 3] {
    [
        DVec3::new(-2.0, height, -2.0),
        DVec3::new(4.0, height, -2.0),
        DVec3::new(-2.0, height, 4.0),
    ]
}

#[test]
fn a_sheet_through_a_sphere_reaches_as_deep_as_its_plane() {
    let ball = sphere(DVec3::new(0.3, 0.0, 0.2), 0.1);
    let sheet = sheet_at(0.03);
    assert!((triangle_distance(&ball, sheet) + 0.07).abs() < 1e-15);
    // Every corner is far outside: the vertices alone would say 2 m clear.
    assert!(sheet.iter().all(|&p| ball.signed_distance(p).0 > 2.0));
    let rope = [DVec3::new(-1.0, 0.03, 0.2), DVec3::new(1.0, 0.03, 0.2)];
    assert!((segment_distance(&ball, rope) + 0.07).abs() < 1e-15);
}

#[test]
fn a_sheet_across_a_capsule_reaches_its_axis() {
    let limb = Shape::Capsule {
        a: DVec3::new(-0.5, 0.0, 0.0),
        b: DVec3::new(0.5, 0.0, 0.0),
        radius: 0.1,
    };
    // Across the axis: the axis passes through the sheet.
    let across = [
        DVec3::new(0.1, -2.0, -2.0),
        DVec3::new(0.1, 4.0, -2.0),
        DVec3::new(0.1, -2.0, 4.0),
    ];
    assert_eq!(triangle_distance(&limb, across), -0.1);
    // Along it, 4 cm above.
    assert!((triangle_distance(&limb, sheet_at(0.04)) + 0.06).abs() < 1e-15);
    let rope = [DVec3::new(0.2, 0.04, -1.0), DVec3::new(0.2, 0.04, 1.0)];
    assert!((segment_distance(&limb, rope) + 0.06).abs() < 1e-15);
}

#[test]
fn a_sheet_through_a_turned_box_reaches_its_middle() {
    let turned = Shape::Box {
        center: DVec3::new(0.1, 0.0, 0.0),
        rotation: DMat3::from_rotation_y(0.7),
        half: DVec3::splat(0.5),
    };
    // The plane y = 0.2 cuts the box: its deepest point is 0.3 from the top face.
    assert!((triangle_distance(&turned, sheet_at(0.2)) + 0.3).abs() < 1e-15);
    let rope = [DVec3::new(-1.0, 0.2, 0.05), DVec3::new(1.0, 0.2, -0.05)];
    assert!((segment_distance(&turned, rope) + 0.3).abs() < 1e-12);
}

#[test]
fn a_box_corner_through_a_sheet_is_as_deep_as_the_middle_of_its_cut() {
    // The corner (1, 1, 1) of the cube of half extent 1 pokes a distance `s` (along the
    // diagonal) through the plane x + y + z = 3 − s√3. In that plane the deepest point of the
    // cube is where the three faces are equally far, s/√3 from each: inside the triangle, at
    // no corner and on no side (the triple-equality case).
    let s = 0.06;
    let level = 3.0 - s * 3f64.sqrt();
    let point = |x: f64, y: f64| DVec3::new(x, y, level - x - y);
    let sheet = [point(6.0, -2.0), point(-2.0, 6.0), point(-2.0, -2.0)];
    let cube = aligned_box(DVec3::ZERO, DVec3::ONE);
    let expected = -s / 3f64.sqrt();
    assert!((triangle_distance(&cube, sheet) - expected).abs() < 1e-12);
    assert!(sheet.iter().all(|&p| cube.signed_distance(p).0 > 1.0));
}

#[test]
fn a_plane_is_measured_at_the_corners() {
    let floor = Shape::Plane {
        point: DVec3::ZERO,
        normal: DVec3::Y,
    };
    let tilted = [
        DVec3::new(0.0, 0.3, 0.0),
        DVec3::new(1.0, -0.02, 0.0),
        DVec3::new(0.0, 0.1, 1.0),
    ];
    assert_eq!(triangle_distance(&floor, tilted), -0.02);
    assert_eq!(segment_distance(&floor, [tilted[0], tilted[2]]), 0.1);
}

#[test]
fn elements_that_miss_are_measured_by_their_gap() {
    let cube = aligned_box(DVec3::ZERO, DVec3::splat(0.5));
    assert!((triangle_distance(&cube, sheet_at(0.8)) - 0.3).abs() < 1e-15);
    // Beside an edge of the box: the gap is the distance from that edge.
    let beside = [
        DVec3::new(0.7, 0.7, -3.0),
        DVec3::new(0.7, 0.7, 3.0),
        DVec3::new(3.0, 3.0, 0.0),
    ];
    let expected = 0.2 * 2f64.sqrt();
    assert!((triangle_distance(&cube, beside) - expected).abs() < 1e-15);
    let rope = [DVec3::new(0.7, 0.7, -3.0), DVec3::new(0.7, 0.7, 3.0)];
    assert!((segment_distance(&cube, rope) - expected).abs() < 1e-15);
}

/// `φ` sampled at the points `(i, j) / n` of the triangle's barycentric grid: every point of
/// the triangle lies within its longest side / n of one of them.
fn sampled_least(shape: &Shape, t: [DVec3; 3], n: usize) -> f64 {
    let mut least = f64::INFINITY;
    for i in 0..=n {
        for j in 0..=n - i {
            let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
            let p = t[0] + (t[1] - t[0]) * u + (t[2] - t[0]) * v;
            least = least.min(shape.signed_distance(p).0);
        }
    }
    least
}

fn random_point(numbers: &mut Numbers, scale: f64) -> DVec3 {
    DVec3::new(numbers.next(), numbers.next(), numbers.next()) * (2.0 * scale) - scale
}

fn random_shapes(numbers: &mut Numbers) -> [Shape; 4] {
    let axis = random_point(numbers, 1.0)
        .try_normalize()
        .unwrap_or(DVec3::X);
    let rotation = DMat3::from_quat(DQuat::from_axis_angle(axis, 6.0 * numbers.next()));
    [
        Shape::Plane {
            point: random_point(numbers, 0.5),
            normal: axis,
        },
        sphere(random_point(numbers, 0.5), 0.2 + 0.6 * numbers.next()),
        Shape::Capsule {
            a: random_point(numbers, 0.8),
            b: random_point(numbers, 0.8),
            radius: 0.1 + 0.4 * numbers.next(),
        },
        Shape::Box {
            center: random_point(numbers, 0.5),
            rotation,
            half: DVec3::new(numbers.next(), numbers.next(), numbers.next()) * 0.6 + 0.1,
        },
    ]
}

#[test]
fn the_least_distance_is_no_more_than_any_sample_and_within_the_grid_of_them() {
    // Shapes' signed distances are 1-Lipschitz, so the least over the triangle lies between
    // the least sample minus the grid's reach and the least sample. Crossing and missing
    // triangles both occur; the count keeps the test from passing on misses alone.
    let mut numbers = Numbers(0x2545_f491_4f6c_dd1d);
    let n = 120;
    let mut crossing = 0;
    for _ in 0..150 {
        let shapes = random_shapes(&mut numbers);
        let t = [(); 3].map(|_| random_point(&mut numbers, 1.5));
        let reach = sides(&t).fold(0.0f64, |m, [p, q]| m.max(p.distance(q))) / n as f64;
        for shape in &shapes {
            let (exact, weights) = deepest_on_triangle(shape, t, f64::INFINITY).unwrap();
            // The weights name a point of the triangle where the least value is reached.
            let point: DVec3 = (t.iter().zip(weights)).map(|(&p, w)| p * w).sum();
            assert!(
                weights.iter().all(|&w| w >= 0.0)
                    && (weights.iter().sum::<f64>() - 1.0).abs() < 1e-12
            );
            let at_point = shape.signed_distance(point).0;
            assert!(
                (at_point - exact).abs() < 1e-9,
                "{shape:?} {t:?}: {exact} at {at_point}"
            );
            let sampled = sampled_least(shape, t, n);
            assert!(
                exact <= sampled + 1e-12 && sampled - exact <= reach + 1e-12,
                "{shape:?} {t:?}: exact {exact}, sampled {sampled}, reach {reach}"
            );
            crossing += usize::from(exact < 0.0);
        }
    }
    assert!(crossing > 150, "only {crossing} of 600 cases cross a shape");
}

#[test]
fn a_cutoff_changes_no_answer_within_it_and_drops_every_one_beyond() {
    // The searches ask within a reach: the box's pieces and features that cannot be nearer
    // are skipped, which must give the same value and point as the full answer whenever it
    // is within the cutoff, and nothing when it is not. The counts keep the test from
    // passing on one side of the cutoff alone.
    let mut numbers = Numbers(0x6a09_e667_f3bc_c909);
    let (mut within_outside, mut beyond) = (0, 0);
    for _ in 0..400 {
        let shapes = random_shapes(&mut numbers);
        // Cloth-sized faces about the shapes, so that gaps are often within the cutoffs.
        let middle = random_point(&mut numbers, 1.0);
        let t = [(); 3].map(|_| middle + random_point(&mut numbers, 0.15));
        for shape in &shapes {
            let full = deepest_on_triangle(shape, t, f64::INFINITY).unwrap();
            for cutoff in [-0.05, 0.0, 0.02, 0.1, 0.4] {
                let cut = deepest_on_triangle(shape, t, cutoff);
                if full.0 <= cutoff {
                    assert_eq!(cut, Some(full), "{shape:?} {t:?} within {cutoff}");
                    within_outside += usize::from(full.0 > 0.0);
                } else {
                    assert_eq!(cut, None, "{shape:?} {t:?}: {} beyond {cutoff}", full.0);
                    beyond += 1;
                }
            }
        }
    }
    assert!(
        within_outside > 200 && beyond > 200,
        "{within_outside} gaps within a cutoff, {beyond} beyond"
    );
}

#[test]
fn the_least_distance_on_a_segment_is_no_more_than_any_sample() {
    let mut numbers = Numbers(0x9e37_79b9_7f4a_7c15);
    let n = 2000;
    let mut crossing = 0;
    for _ in 0..150 {
        let shapes = random_shapes(&mut numbers);
        let s = [(); 2].map(|_| random_point(&mut numbers, 1.5));
        let reach = s[0].distance(s[1]) / n as f64;
        for shape in &shapes {
            let exact = segment_distance(shape, s);
            let sampled = (0..=n)
                .map(|i| {
                    shape
                        .signed_distance(s[0].lerp(s[1], i as f64 / n as f64))
                        .0
                })
                .fold(f64::INFINITY, f64::min);
            assert!(
                exact <= sampled + 1e-12 && sampled - exact <= reach + 1e-12,
                "{shape:?} {s:?}: exact {exact}, sampled {sampled}"
            );
            crossing += usize::from(exact < 0.0);
        }
    }
    assert!(crossing > 100, "only {crossing} of 600 cases cross a shape");
}
