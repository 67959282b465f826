//! The solver's complete mutable state, for checkpoints (`run --resume`): everything that
//! changes during a run and is not recomputed from the scene.
//!
//! - time, and every particle's position, previous position, velocity, mass and inverse
//!   mass, and its object (tearing adds particles and halves masses);
//! - for every object that can tear: its torn topology (positions, UVs, polygons, segments),
//!   split particles, source vertices, torn sides and counters;
//! - every shape-matching cluster's rotation (the warm start of the rotation extraction);
//! - with plasticity (`yield`/`creep`, [`crate::constraints::plasticity`]): every stretch
//!   constraint's rest length, every dihedral hinge's rest angle and every shape-matching
//!   cluster's rest shape, in block order (a flag 0 or 1 first; 0 and nothing else without).
//!
//! Not stored, because they are recomputed exactly: constraints of torn objects (remade from
//! the topology, in a canonical order, see `tearing::remake_constraints`), their colours,
//! Lagrange multipliers (zeroed every substep), contacts (found every substep; the near lists
//! of candidates are rebuilt after a restore, which changes no candidate, see
//! `collision::near_lists`) and mesh collider poses (a function of time). Restoring onto a
//! solver freshly built from the same scene gives the state bit for bit, so a resumed run
//! writes the same bytes.
//!
//! Encoding: little-endian, lengths as u64, every length checked against the bytes left
//! before anything is allocated (a damaged file cannot ask for terabytes).

use super::step::Solver;
use crate::model::{ObjectLayout, Particles};
use anyhow::{bail, ensure, Result};
use glam::{DQuat, DVec3};
use std::collections::BTreeSet;

/// Appends values to a byte buffer.
#[derive(Default)]
struct Encoder(Vec<u8>);

impl Encoder {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    fn f64s(&mut self, values: &[f64]) {
        self.u64(values.len() as u64);
        values.iter().for_each(|&v| self.f64(v));
    }
    fn u64s(&mut self, values: impl ExactSizeIterator<Item = u64>) {
        self.u64(values.len() as u64);
        values.for_each(|v| self.u64(v));
    }
}

/// Reads values back, failing on a truncated buffer.
struct Decoder<'a> {
    bytes: &'a [u8],
}

impl Decoder<'_> {
    fn u64(&mut self) -> Result<u64> {
        ensure!(self.bytes.len() >= 8, "the state ends early");
        let (head, rest) = self.bytes.split_at(8);
        self.bytes = rest;
        Ok(u64::from_le_bytes(head.try_into().expect("8 bytes")))
    }
    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    /// A length prefix for elements of `width` u64s each, checked against what is left.
    fn length(&mut self, width: usize) -> Result<usize> {
        let n = self.u64()?;
        ensure!(
            n.checked_mul(8 * width as u64)
                .is_some_and(|b| b <= self.bytes.len() as u64),
            "the state claims {n} values but ends sooner"
        );
        Ok(n as usize)
    }
    fn f64s(&mut self) -> Result<Vec<f64>> {
        let n = self.length(1)?;
        (0..n).map(|_| self.f64()).collect()
    }
    fn u64s(&mut self) -> Result<Vec<u64>> {
        let n = self.length(1)?;
        (0..n).map(|_| self.u64()).collect()
    }
    fn vec3s(&mut self) -> Result<Vec<DVec3>> {
        let flat = self.f64s()?;
        ensure!(
            flat.len() % 3 == 0,
            "a list of points has a stray coordinate"
        );
        Ok(flat.chunks(3).map(DVec3::from_slice).collect())
    }
    fn u32_pairs(&mut self) -> Result<Vec<[u32; 2]>> {
        let flat = self.u32s()?;
        ensure!(flat.len() % 2 == 0, "a list of pairs has a stray index");
        Ok(flat.chunks(2).map(|c| [c[0], c[1]]).collect())
    }
    fn u32s(&mut self) -> Result<Vec<u32>> {
        self.u64s()?
            .into_iter()
            .map(|v| u32::try_from(v).map_err(|_| anyhow::anyhow!("index {v} out of range")))
            .collect()
    }
}

fn put_vec3s(e: &mut Encoder, points: &[DVec3]) {
    let flat: Vec<f64> = points.iter().flat_map(|p| p.to_array()).collect();
    e.f64s(&flat);
}

fn put_u32s(e: &mut Encoder, values: &[u32]) {
    e.u64s(values.iter().map(|&v| v as u64));
}

impl Solver {
    /// The state as bytes (see the module notes).
    pub fn state_bytes(&self) -> Vec<u8> {
        let model = &self.model;
        let p = &model.particles;
        let mut e = Encoder::default();
        e.f64(self.time());
        for points in [&p.x, &p.x_prev, &p.v] {
            put_vec3s(&mut e, points);
        }
        e.f64s(&p.mass);
        e.f64s(&p.inv_mass);
        put_u32s(&mut e, &model.owner);
        for object in model.objects.iter().filter(|o| o.tearing.is_some()) {
            let tearing = object.tearing.as_ref().expect("filtered");
            let topology = &object.topology;
            e.u64s(object.split_particles.iter().map(|&i| i as u64));
            put_u32s(&mut e, &object.source_vertex);
            put_vec3s(&mut e, &topology.positions);
            match &topology.uvs {
                Some(uvs) => {
                    e.u64(1);
                    e.f64s(uvs.concat().as_slice());
                }
                None => e.u64(0),
            }
            put_u32s(&mut e, &topology.face_indices);
            put_u32s(&mut e, &topology.face_offsets);
            put_u32s(&mut e, &topology.segments.concat());
            let torn: Vec<u32> = tearing.torn_sides.iter().flatten().copied().collect();
            put_u32s(&mut e, &torn);
            e.u64(tearing.torn_count as u64);
            e.u64(object.topology_version);
        }
        let rotations: Vec<f64> = model
            .shape_matching
            .iter()
            .flat_map(|c| c.rotation.to_array())
            .collect();
        e.f64s(&rotations);
        self.put_rest_states(&mut e);
        e.0
    }

    /// The rest states plasticity moves (module notes), after a flag.
    fn put_rest_states(&self, e: &mut Encoder) {
        let model = &self.model;
        if !self.model.is_plastic() {
            e.u64(0);
            return;
        }
        e.u64(1);
        let lengths: Vec<f64> = model.stretch.items.iter().map(|c| c.rest_length).collect();
        e.f64s(&lengths);
        let angles: Vec<f64> = model.bending.items.iter().map(|c| c.rest_angle).collect();
        e.f64s(&angles);
        for cluster in &model.shape_matching {
            put_vec3s(e, cluster.rest());
        }
    }

    /// Puts back what [`Self::put_rest_states`] wrote.
    fn take_rest_states(&mut self, d: &mut Decoder) -> Result<()> {
        let plastic = d.u64()? != 0;
        ensure!(
            plastic == self.model.is_plastic(),
            "the plasticity of the state does not match this scene"
        );
        if !plastic {
            return Ok(());
        }
        let model = &mut self.model;
        let (lengths, angles) = (d.f64s()?, d.f64s()?);
        ensure!(
            lengths.len() == model.stretch.items.len()
                && angles.len() == model.bending.items.len()
                && lengths.iter().chain(&angles).all(|v| v.is_finite()),
            "the plastic rest lengths and angles do not match this scene"
        );
        for (edge, length) in model.stretch.items.iter_mut().zip(lengths) {
            edge.rest_length = length;
        }
        for (hinge, angle) in model.bending.items.iter_mut().zip(angles) {
            hinge.rest_angle = angle;
        }
        for cluster in model.shape_matching.iter_mut() {
            let rest = d.vec3s()?;
            ensure!(
                cluster.set_rest(rest),
                "the plastic rest shapes do not match this scene"
            );
        }
        Ok(())
    }

    /// Puts back a state from [`state_bytes`](Self::state_bytes) onto a solver freshly built
    /// from the same scene. Fails, leaving the solver unusable, when the bytes do not fit it.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<()> {
        let mut d = Decoder { bytes };
        let time = d.f64()?;
        let (x, x_prev, v) = (d.vec3s()?, d.vec3s()?, d.vec3s()?);
        let (mass, inv_mass) = (d.f64s()?, d.f64s()?);
        let owner = d.u32s()?;
        let n = x.len();
        let model = &mut self.model;
        ensure!(
            n >= model.particles.len()
                && [
                    x_prev.len(),
                    v.len(),
                    mass.len(),
                    inv_mass.len(),
                    owner.len()
                ]
                .iter()
                .all(|&len| len == n)
                && owner.iter().all(|&k| (k as usize) < model.objects.len()),
            "the particles do not match this scene"
        );
        model.particles = Particles {
            x,
            x_prev,
            v,
            inv_mass,
            mass,
        };
        model.owner = owner;
        let mut torn = BTreeSet::new();
        for (k, object) in model.objects.iter_mut().enumerate() {
            if object.tearing.is_some() && take_torn_topology(&mut d, object, n)? {
                torn.insert(k);
            }
        }
        let rotations = d.f64s()?;
        ensure!(
            rotations.len() == 4 * model.shape_matching.len(),
            "the shape-matching clusters do not match this scene"
        );
        for (cluster, q) in model.shape_matching.iter_mut().zip(rotations.chunks(4)) {
            cluster.rotation = DQuat::from_array([q[0], q[1], q[2], q[3]]);
        }
        self.take_rest_states(&mut d)?;
        let model = &mut self.model;
        if !d.bytes.is_empty() {
            bail!("{} bytes left over after the state", d.bytes.len());
        }
        // As every tear did: the torn objects get their constraints remade from the topology.
        if !torn.is_empty() {
            super::tearing::remake_constraints(model, &torn);
        }
        self.set_time(time);
        self.grow_to(n);
        if !torn.is_empty() {
            self.rebuild_projective()?;
        }
        Ok(())
    }
}

/// Reads a tearable object's torn topology (its split particles, vertices, faces, segments
/// and torn sides) from a checkpoint of `n` particles, checks that it fits, and whether the
/// object was torn at all.
fn take_torn_topology(d: &mut Decoder, object: &mut ObjectLayout, n: usize) -> Result<bool> {
    let Some(tearing) = object.tearing.as_mut() else {
        return Ok(false);
    };
    object.split_particles = d.u64s()?.into_iter().map(|i| i as usize).collect();
    object.source_vertex = d.u32s()?;
    let topology = &mut object.topology;
    topology.positions = d.vec3s()?;
    topology.uvs = match d.u64()? {
        0 => None,
        _ => {
            let flat = d.f64s()?;
            ensure!(flat.len() % 2 == 0, "a list of UVs has a stray coordinate");
            Some(flat.chunks(2).map(|c| [c[0], c[1]]).collect())
        }
    };
    topology.face_indices = d.u32s()?;
    topology.face_offsets = d.u32s()?;
    topology.segments = d.u32_pairs()?;
    tearing.torn_sides = d.u32_pairs()?.into_iter().collect();
    tearing.torn_count = d.u64()? as usize;
    object.topology_version = d.u64()?;
    let vertices = object.particles.len() + object.split_particles.len();
    ensure!(
        object.source_vertex.len() == vertices
            && topology.positions.len() == vertices
            && object.split_particles.iter().all(|&i| i < n)
            && topology.face_offsets.first() == Some(&0)
            && topology.face_offsets.last().map(|&o| o as usize)
                == Some(topology.face_indices.len())
            && topology
                .face_indices
                .iter()
                .all(|&i| (i as usize) < vertices),
        "object `{}`: the torn topology does not fit",
        crate::quote::quoted(&object.name)
    );
    object.triangles = topology.triangles();
    Ok(tearing.torn_count > 0)
}
