//! The warning for objects whose contacts the mass-ratio cap changes
//! (`collision.max_mass_ratio`, `crate::collision::stencil::Mobility`): a user whose heavy
//! load rests on light cloth should know that the cloth then carries only part of the load.

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

/// A warning naming the pair of colliding objects whose contacts meet the largest particle
/// mass ratio, when that ratio is above `max_ratio` (contacts within one object are not
/// capped).
pub fn warning(model: &Model, max_ratio: f64) -> Option<String> {
    let ranges: Vec<_> = (model.objects.iter())
        .map(|layout| mass_range(layout, model).filter(|_| layout.collide))
        .collect();
    let mut worst: Option<(f64, usize, usize)> = None;
    for (a, range_a) in ranges.iter().enumerate() {
        for (b, range_b) in ranges.iter().enumerate().skip(a + 1) {
            let (Some((heavy_a, light_a)), Some((heavy_b, light_b))) = (range_a, range_b) else {
                continue;
            };
            // A contact between them may hold particles of both (a point on a triangle).
            let ratio = f64::max(*heavy_a, *heavy_b) / f64::min(*light_a, *light_b);
            if worst.is_none_or(|(largest, _, _)| ratio > largest) {
                worst = Some((ratio, a, b));
            }
        }
    }
    let (ratio, a, b) = worst.filter(|&(ratio, _, _)| ratio > max_ratio)?;
    let name = |k: usize| crate::quote::quoted(&model.objects[k].name);
    Some(format!(
        "objects `{}` and `{}`: their particles' masses differ up to {ratio:.1} times; where \
         the lighter one supports the heavier, their contacts are projected with at most \
         collision.max_mass_ratio = {max_ratio}, so it carries only that ratio over the true one \
         of the heavier side's load (docs/physics.md, \"Heavy on light\")",
        name(a),
        name(b)
    ))
}
