//! Keyframed motion (`keys`, SPEC §2): a list of `{ frame, translate, rotate }`, interpolated
//! linearly between keys at every substep time and held outside them; `frame` counts like the
//! output frames (frame `start_frame` is t = 0). A pose turns a point about the animated
//! thing's own pivot, then translates it:
//!
//! ```text
//! world = pivot + R(t) (p − pivot) + translate(t),   R = Rz · Ry · Rx of the interpolated degrees
//! ```
//!
//! Colliders turn about their own centre (plane: `point`; sphere and box: `center`; capsule: the
//! middle of a–b), after their own `rotate`. Objects carry their pinned particles, turning
//! about the object's placed origin (its `translate`).

use glam::{DMat3, DVec3};

/// Rotation `R = Rz · Ry · Rx` from degrees about the fixed world axes.
pub fn rotation(degrees: [f64; 3]) -> DMat3 {
    let [x, y, z] = degrees.map(f64::to_radians);
    DMat3::from_rotation_z(z) * DMat3::from_rotation_y(y) * DMat3::from_rotation_x(x)
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    /// Seconds from the start of the simulation.
    pub time: f64,
    pub translate: DVec3,
    /// Degrees about X, then Y, then Z.
    pub rotate: DVec3,
}

/// Keys sorted by time (at least one).
#[derive(Debug, Clone, PartialEq)]
pub struct Animation {
    pub keys: Vec<Key>,
}

/// A rigid motion: `world = pivot + rotation (p − pivot) + translate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    pub rotation: DMat3,
    pub pivot: DVec3,
    pub translate: DVec3,
}

impl Pose {
    pub const IDENTITY: Pose = Pose {
        rotation: DMat3::IDENTITY,
        pivot: DVec3::ZERO,
        translate: DVec3::ZERO,
    };

    pub fn apply(&self, p: DVec3) -> DVec3 {
        self.pivot + self.rotation * (p - self.pivot) + self.translate
    }

    pub fn invert(&self, p: DVec3) -> DVec3 {
        self.rotation.transpose() * (p - self.pivot - self.translate) + self.pivot
    }
}

impl Animation {
    /// The pose at `time` seconds about `pivot`.
    pub fn pose(&self, time: f64, pivot: DVec3) -> Pose {
        let keys = &self.keys;
        let (translate, rotate) = match keys.iter().position(|k| k.time > time) {
            None => {
                let last = keys.last().expect("at least one key");
                (last.translate, last.rotate)
            }
            Some(0) => (keys[0].translate, keys[0].rotate),
            Some(next) => {
                let (a, b) = (&keys[next - 1], &keys[next]);
                let s = (time - a.time) / (b.time - a.time);
                (a.translate.lerp(b.translate, s), a.rotate.lerp(b.rotate, s))
            }
        };
        Pose {
            rotation: rotation(rotate.to_array()),
            pivot,
            translate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_keys_and_holds_outside() {
        let animation = Animation {
            keys: vec![
                Key {
                    time: 1.0,
                    translate: DVec3::ZERO,
                    rotate: DVec3::ZERO,
                },
                Key {
                    time: 3.0,
                    translate: DVec3::new(2.0, 0.0, 0.0),
                    rotate: DVec3::new(0.0, 0.0, 90.0),
                },
            ],
        };
        let pivot = DVec3::new(1.0, 0.0, 0.0);
        assert_eq!(
            animation.pose(0.0, pivot).apply(DVec3::X * 2.0),
            DVec3::X * 2.0
        );
        let middle = animation.pose(2.0, pivot);
        assert!((middle.translate - DVec3::X).length() < 1e-15);
        // 45° about Z around the pivot, then 1 m along X.
        let p = middle.apply(DVec3::new(2.0, 0.0, 0.0));
        let half = std::f64::consts::FRAC_1_SQRT_2;
        assert!(
            (p - DVec3::new(2.0 + half, half, 0.0)).length() < 1e-12,
            "{p}"
        );
        assert!((middle.invert(p) - DVec3::new(2.0, 0.0, 0.0)).length() < 1e-12);
        let end = animation.pose(10.0, pivot);
        assert!((end.apply(pivot) - DVec3::new(3.0, 0.0, 0.0)).length() < 1e-12);
    }
}
