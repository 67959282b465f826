//! Three-component vector helpers in `f32`.
//!
//! Only `+ - * /` and `sqrt` are used here and in the whole preview renderer: IEEE 754 rounds
//! each of them exactly, so the same inputs give the same bits on every machine. Rust never
//! fuses `a * b + c` into an FMA on its own, and the transcendental functions (`sin`, `tan`,
//! `powf`), whose last bit depends on the platform's maths library, are never called.

pub(crate) type V3 = [f32; 3];

pub(crate) fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub(crate) fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}

pub(crate) fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Right-handed cross product: `cross(x, y) = z`.
pub(crate) fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// `a / |a|`, or `None` when `a` is zero or not finite.
pub(crate) fn normalize(a: V3) -> Option<V3> {
    let len = dot(a, a).sqrt();
    if len > 0.0 && len.is_finite() {
        Some(scale(a, 1.0 / len))
    } else {
        None
    }
}

pub(crate) fn is_finite(a: V3) -> bool {
    a[0].is_finite() && a[1].is_finite() && a[2].is_finite()
}

/// `a + (b - a) t`.
pub(crate) fn lerp(a: V3, b: V3, t: f32) -> V3 {
    add(a, scale(sub(b, a), t))
}
