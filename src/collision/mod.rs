//! Colliders and particle contacts.
//!
//! A contact is an inequality constraint `C(p) = φ(p) − r ≥ 0` with `φ` the collider's signed
//! distance and `r` the particle radius (`collision.thickness`) plus the collider's own
//! `thickness`. It acts only when violated and, against an immovable collider, is solved
//! exactly (compliance 0): `p += −C n`. Friction follows Macklin et al. 2014 (Unified Particle
//! Physics, §6.1) at position level: with `Δx_t` the tangential displacement over the substep
//! and `d` the penetration just corrected, `Δx_t` is removed entirely when `|Δx_t| < μ d`
//! (static) and shortened by `μ d` otherwise (dynamic). On an incline this gives exactly
//! Coulomb's law: a particle holds when `tan θ < μ` and otherwise accelerates at
//! `g (sin θ − μ cos θ)`.

use glam::DVec3;

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Half-space above the plane through `point` with unit `normal`.
    Plane { point: DVec3, normal: DVec3 },
    /// Solid ball.
    Sphere { center: DVec3, radius: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Collider {
    pub name: String,
    pub shape: Shape,
    /// Coulomb coefficient μ.
    pub friction: f64,
    /// Restitution e in [0, 1] (Müller et al. 2020).
    pub restitution: f64,
    /// Extra margin, metres, added to the particle radius.
    pub thickness: f64,
}

impl Shape {
    /// Signed distance from the surface (negative inside) and the outward unit normal there.
    #[inline]
    pub fn signed_distance(&self, p: DVec3) -> (f64, DVec3) {
        match *self {
            Shape::Plane { point, normal } => ((p - point).dot(normal), normal),
            Shape::Sphere { center, radius } => {
                let d = p - center;
                let length = d.length();
                // At the exact centre any direction is as good; +Y is deterministic.
                let normal = if length > 1e-12 { d / length } else { DVec3::Y };
                (length - radius, normal)
            }
        }
    }
}

impl std::fmt::Display for Collider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = |v: DVec3| format!("({}, {}, {})", v.x, v.y, v.z);
        match self.shape {
            Shape::Plane { point, normal } => {
                write!(f, "plane through {} with normal {}", v(point), v(normal))?
            }
            Shape::Sphere { center, radius } => {
                write!(f, "sphere at {} of radius {radius}", v(center))?
            }
        }
        write!(
            f,
            ", friction {}, restitution {}, thickness {}",
            self.friction, self.restitution, self.thickness
        )
    }
}

/// Projects particle position `p` out of a collider with margin `radius` and applies
/// position-level Coulomb friction against the displacement since `x_prev`.
/// Returns the contact normal when the contact was active.
#[inline]
pub fn resolve_contact(
    shape: &Shape,
    radius: f64,
    friction: f64,
    p: &mut DVec3,
    x_prev: DVec3,
) -> Option<DVec3> {
    let (distance, normal) = shape.signed_distance(*p);
    let c = distance - radius;
    if c >= 0.0 {
        return None;
    }
    let depth = -c;
    *p += normal * depth;
    let displacement = *p - x_prev;
    let tangential = displacement - normal * displacement.dot(normal);
    let slip = tangential.length();
    if slip > 0.0 {
        let limit = friction * depth;
        *p -= if slip <= limit {
            tangential
        } else {
            tangential * (limit / slip)
        };
    }
    Some(normal)
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn contact_projects_to_the_margin_and_friction_sticks_or_slides() {
        let ground = Shape::Plane {
            point: DVec3::ZERO,
            normal: DVec3::Y,
        };
        // Pushed 1 mm in while slipping 0.5 mm: μ = 1 holds it (static).
        let mut p = DVec3::new(0.0005, -0.001, 0.0);
        let n = resolve_contact(&ground, 0.0, 1.0, &mut p, DVec3::ZERO).unwrap();
        assert_eq!(n, DVec3::Y);
        assert!((p - DVec3::ZERO).length() < 1e-15);
        // Slipping 2 mm with μ = 0.5: 0.5 mm of it is removed (dynamic).
        let mut p = DVec3::new(0.002, -0.001, 0.0);
        resolve_contact(&ground, 0.0, 0.5, &mut p, DVec3::ZERO).unwrap();
        assert!((p - DVec3::new(0.0015, 0.0, 0.0)).length() < 1e-15);
        // Outside the margin nothing happens.
        let mut p = DVec3::new(0.0, 0.02, 0.0);
        assert!(resolve_contact(&ground, 0.01, 0.5, &mut p, DVec3::ZERO).is_none());
    }
}
