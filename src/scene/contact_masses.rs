//! The warning for objects whose contacts the mass-ratio cap changes
//! (`collision.max_mass_ratio`, `crate::collision::stencil::Mobility`): a user whose heavy
//! load rests on light cloth should know that the cloth carries at most that many times its
//! particles' weight.

use crate::model::{Model, ObjectLayout};

/// The heaviest and the lightest movable particle of an object, kg (none when all are pinned).
fn mass_range(layout: &ObjectLayout, model: &Model) -> Option<(f64, f64)> {
    let movable = layout
        .particles
        .clone()
        .filter(|&i| model.particles.inv_mass[i] > 0.0);
    movable
        .map(|i| model.particles.mass[i])
        .fold(None, |range, m| match range {
            None => Some((m, m)),
            Some((heaviest, lightest)) => Some((f64::max(heaviest, m), f64::min(lightest, m))),
        })
}

/// A warning naming the pair of objects (or the one self-colliding object) whose contacts
/// meet the largest particle mass ratio, when that ratio is above `max_ratio`.
pub fn warning(model: &Model, max_ratio: f64) -> Option<String> {
    let ranges: Vec<_> = (model.objects.iter())
        .map(|layout| mass_range(layout, model))
        .collect();
    let mut worst: Option<(f64, usize, usize)> = None;
    for (a, layout_a) in model.objects.iter().enumerate() {
        for (b, layout_b) in model.objects.iter().enumerate().skip(a) {
            let touch = if a == b {
                layout_a.self_collision
            } else {
                layout_a.collide && layout_b.collide
            };
            let (Some((heavy_a, light_a)), Some((heavy_b, light_b))) = (ranges[a], ranges[b])
            else {
                continue;
            };
            let ratio = f64::max(heavy_a / light_b, heavy_b / light_a);
            if touch && worst.is_none_or(|(largest, _, _)| ratio > largest) {
                worst = Some((ratio, a, b));
            }
        }
    }
    let (ratio, a, b) = worst.filter(|&(ratio, _, _)| ratio > max_ratio)?;
    let name = |k: usize| crate::quote::quoted(&model.objects[k].name);
    let between = if a == b {
        format!(
            "object `{}`: its particles weigh up to {ratio:.1} times each other",
            name(a)
        )
    } else {
        format!(
            "objects `{}` and `{}`: a particle of one weighs up to {ratio:.1} times a particle of the other",
            name(a),
            name(b)
        )
    };
    Some(format!(
        "{between}; their contacts are projected with at most collision.max_mass_ratio = {max_ratio} \
         (a light particle carries at most {max_ratio} times its own weight; docs/physics.md, \"Heavy on light\")"
    ))
}
