//! Materials: how constraints resist, kept once per distinct material in a table
//! ([`Materials`]) that constraints point into by a 4-byte [`MaterialId`], instead of a
//! 24-byte [`Material`] in every constraint (cloth-256: 390 000 constraints, three materials).
//! The solver turns the table into Δλ coefficients ([`Terms`]) once per run, not once per
//! constraint per substep.

use super::lanes::{self, Real};
use super::plasticity::Plasticity;

/// How a constraint resists being violated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Material {
    /// XPBD: compliance α (inverse stiffness, in the units of `C` per newton, or per N·m) and
    /// damping β (eq. 26; no effect when α = 0).
    Compliant { compliance: f64, damping: f64 },
    /// PBD: stiffness `k'` in [0, 1], already corrected for the iteration count.
    Stiff { stiffness: f64 },
}

impl Material {
    /// Rigid in either mode.
    pub const RIGID: Material = Material::Compliant {
        compliance: 0.0,
        damping: 0.0,
    };

    /// PBD stiffness `k` per iteration corrected for `iterations` per substep:
    /// `k' = 1 − (1 − k)^(1/n)`.
    pub fn pbd(stiffness: f64, iterations: usize) -> Material {
        Material::Stiff {
            // `libm`: the same bits on every CPU (docs/physics.md, "Across CPUs").
            stiffness: 1.0 - libm::pow(1.0 - stiffness, 1.0 / iterations as f64),
        }
    }

    /// Δλ for a constraint of value `c`, current multiplier `lambda`, `Σ w |∇C|²`,
    /// `Σ ∇C · (p − x_prev)` and substep reciprocal `inv_h`.
    #[inline]
    pub fn delta_lambda(
        self,
        c: f64,
        lambda: f64,
        w_grad_sq: f64,
        grad_dot_dx: f64,
        inv_h: f64,
    ) -> f64 {
        let terms = self.terms(inv_h);
        terms.delta_lambda(c, lambda, w_grad_sq, grad_dot_dx)
    }

    /// Whether the damping term needs `Σ ∇C · (p − x_prev)`.
    #[inline]
    pub fn is_damped(self) -> bool {
        matches!(self, Material::Compliant { compliance, damping } if compliance != 0.0 && damping != 0.0)
    }

    /// The coefficients of Δλ at substep reciprocal `inv_h`.
    #[inline(always)]
    pub fn terms(self, inv_h: f64) -> Terms<f64> {
        match self {
            Material::Compliant {
                compliance,
                damping,
            } => Terms {
                alpha_tilde: compliance * inv_h * inv_h,
                gamma: compliance * damping * inv_h,
                stiffness: 0.0,
                stiff: false,
            },
            Material::Stiff { stiffness } => Terms {
                alpha_tilde: 0.0,
                gamma: 0.0,
                stiffness,
                stiff: true,
            },
        }
    }
}

/// A material's coefficients of Δλ for one substep length, for one constraint or per lane.
#[derive(Clone, Copy)]
pub struct Terms<S: Real> {
    /// `α̃ = α / h²` (XPBD).
    alpha_tilde: S,
    /// `γ = α β / h` (XPBD damping).
    gamma: S,
    /// `k'` (PBD).
    stiffness: S,
    stiff: S::Mask,
}

impl<S: Real> Terms<S> {
    /// Lane `l` holds `of_lane(l)` (a material's terms, [`Materials::terms`]).
    #[inline(always)]
    pub fn gather(of_lane: impl Fn(usize) -> Terms<f64>) -> Self {
        let mut lanes = [of_lane(0); lanes::LANES];
        for (l, terms) in lanes.iter_mut().enumerate().take(S::LANES).skip(1) {
            *terms = of_lane(l);
        }
        Terms {
            alpha_tilde: S::from_lanes(|l| lanes[l].alpha_tilde),
            gamma: S::from_lanes(|l| lanes[l].gamma),
            stiffness: S::from_lanes(|l| lanes[l].stiffness),
            stiff: S::mask_from_lanes(|l| lanes[l].stiff),
        }
    }

    /// Δλ (module docs): XPBD's `(−C − α̃ λ − γ ∇C·Δx) / ((1 + γ) Σ w |∇C|² + α̃)`, 0 when the
    /// denominator vanishes; PBD's `−k' C / Σ w |∇C|²`. Callers skip `w_grad_sq = 0`.
    #[inline(always)]
    pub fn delta_lambda(self, c: S, lambda: S, w_grad_sq: S, grad_dot_dx: S) -> S {
        // Each formula is computed only where some lane needs it (a division each): the lanes
        // of a batch usually share one mode.
        if !S::any(self.stiff) {
            self.compliant_delta(c, lambda, w_grad_sq, grad_dot_dx)
        } else if !S::any(!self.stiff) {
            self.stiff_delta(c, w_grad_sq)
        } else {
            S::select(
                self.stiff,
                self.stiff_delta(c, w_grad_sq),
                self.compliant_delta(c, lambda, w_grad_sq, grad_dot_dx),
            )
        }
    }

    /// XPBD's Δλ (see [`Terms::delta_lambda`]). A method, not a closure: the vector lanes
    /// of `crate::constraints::x86` must be inlined into their kernel.
    #[inline(always)]
    fn compliant_delta(self, c: S, lambda: S, w_grad_sq: S, grad_dot_dx: S) -> S {
        let one = S::splat(1.0);
        let denominator = (one + self.gamma) * w_grad_sq + self.alpha_tilde;
        S::select(
            denominator.le(S::splat(f64::MIN_POSITIVE)),
            S::splat(0.0),
            (-c - self.alpha_tilde * lambda - self.gamma * grad_dot_dx) / denominator,
        )
    }

    /// PBD's Δλ (see [`Terms::delta_lambda`]).
    #[inline(always)]
    fn stiff_delta(self, c: S, w_grad_sq: S) -> S {
        S::select(
            w_grad_sq.gt(S::splat(0.0)),
            -self.stiffness * c / w_grad_sq,
            S::splat(0.0),
        )
    }

    /// Lanes whose damping term needs `Σ ∇C · (p − x_prev)` (γ ≠ 0).
    #[inline(always)]
    pub fn damped(self) -> S::Mask {
        !(self.gamma.abs().le(S::splat(0.0)))
    }
}

/// A constraint's material: an index into the scene's [`Materials`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MaterialId(u32);

impl MaterialId {
    /// [`Material::RIGID`], the first entry of every table.
    pub const RIGID: MaterialId = MaterialId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The distinct materials of a scene, in the order first seen (deterministic), each with its
/// plasticity ([`super::plasticity`]; read only by the plastic pass, never by the kernels).
#[derive(Debug, Clone, PartialEq)]
pub struct Materials {
    list: Vec<Material>,
    plasticity: Vec<Option<Plasticity>>,
}

impl Default for Materials {
    fn default() -> Self {
        Materials {
            list: vec![Material::RIGID],
            plasticity: vec![None],
        }
    }
}

impl Materials {
    /// The id of `material` (not plastic), added to the table the first time it is seen.
    /// Equal materials (same mode, same numbers) share an id.
    pub fn intern(&mut self, material: Material) -> MaterialId {
        self.intern_plastic(material, None)
    }

    /// The id of `material` with `plasticity`; equal pairs share an id.
    pub fn intern_plastic(
        &mut self,
        material: Material,
        plasticity: Option<Plasticity>,
    ) -> MaterialId {
        let same = |(m, p): (&Material, &Option<Plasticity>)| *m == material && *p == plasticity;
        let index = match self.list.iter().zip(&self.plasticity).position(same) {
            Some(index) => index,
            None => {
                self.list.push(material);
                self.plasticity.push(plasticity);
                self.list.len() - 1
            }
        };
        MaterialId(u32::try_from(index).expect("fewer than 2³² materials"))
    }

    pub fn get(&self, id: MaterialId) -> Material {
        self.list[id.index()]
    }

    /// Every material's plasticity, indexed by id (`None`: the rest state never moves).
    pub fn plasticity(&self) -> &[Option<Plasticity>] {
        &self.plasticity
    }

    /// Whether any material is plastic.
    pub fn any_plastic(&self) -> bool {
        self.plasticity.iter().any(Option::is_some)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every material's Δλ coefficients at substep reciprocal `inv_h`, indexed by id.
    pub fn terms(&self, inv_h: f64) -> Vec<Terms<f64>> {
        self.list.iter().map(|m| m.terms(inv_h)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_materials_share_an_id_and_rigid_is_first() {
        let mut table = Materials::default();
        let soft = Material::Compliant {
            compliance: 1e-4,
            damping: 0.0,
        };
        assert_eq!(table.intern(Material::RIGID), MaterialId::RIGID);
        let id = table.intern(soft);
        assert_ne!(id, MaterialId::RIGID);
        assert_eq!(table.intern(Material::pbd(0.5, 2)).index(), 2);
        assert_eq!(table.intern(soft), id);
        assert_eq!(table.get(id), soft);
        assert_eq!(table.len(), 3);
        let plastic = Some(Plasticity {
            yield_point: 0.1,
            creep: 5.0,
        });
        let plastic_id = table.intern_plastic(soft, plastic);
        assert_ne!(plastic_id, id);
        assert_eq!(table.intern_plastic(soft, plastic), plastic_id);
        assert_eq!(table.plasticity()[plastic_id.index()], plastic);
        assert!(table.any_plastic());
    }
}
