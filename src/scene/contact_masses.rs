//! The warning for objects whose contacts the mass-ratio cap changes
//! (`collision.max_mass_ratio`, `crate::collision::stencil::Mobility`): a user whose heavy
//! load rests on light cloth should know that the cloth then carries only part of the load.
//! It is worked out from the masses at the start; tearing, which splits a particle's mass,
//! can raise the ratio later.

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

/// A warning naming the pair of colliding objects with the largest ratio of a particle of
/// one to a particle of the other, when that ratio is above the model's `max_mass_ratio` and
/// there is gravity (without it nothing is capped; contacts within one object never are).
pub fn warning(model: &Model) -> Option<String> {
    let max_ratio = model.params.max_mass_ratio;
    if model.params.gravity == glam::DVec3::ZERO {
        return None;
    }
    let ranges: Vec<_> = (model.objects.iter())
        .map(|layout| mass_range(layout, model).filter(|_| layout.collide))
        .collect();
    let mut worst: Option<(f64, usize, usize)> = None;
    for (a, range_a) in ranges.iter().enumerate() {
        for (b, range_b) in ranges.iter().enumerate().skip(a + 1) {
            let (Some((heavy_a, light_a)), Some((heavy_b, light_b))) = (range_a, range_b) else {
                continue;
            };
            // A particle of one resting on a particle of the other, either way round.
            let ratio = f64::max(heavy_a / light_b, heavy_b / light_a);
            if worst.is_none_or(|(largest, _, _)| ratio > largest) {
                worst = Some((ratio, a, b));
            }
        }
    }
    let (ratio, a, b) = worst.filter(|&(ratio, _, _)| ratio > max_ratio)?;
    let name = |k: usize| crate::quote::quoted(&model.objects[k].name);
    Some(format!(
        "objects `{}` and `{}`: a particle of one weighs up to {ratio:.1} times a particle of \
         the other; where the lighter supports the heavier, their contacts treat it as at most \
         {max_ratio} times lighter, so it carries about {max_ratio}/{ratio:.1} of the load \
         (collision.max_mass_ratio; docs/physics.md, \"Heavy on light\")",
        name(a),
        name(b)
    ))
}
