//! The global step's matrix `H = M/h² + Σ_i W_i A_iᵀ A_i` (Bouaziz et al. 2014, eq. 11), one
//! row per free particle and shared by the three coordinates, factored as `H = L Lᵀ` by
//! faer's sparse Cholesky (AMD fill-reducing ordering; faer picks a simplicial or supernodal
//! factorization by the flop ratio): analysed once, and factored again numerically when
//! contacts add to its diagonal. Every faer call runs with `Par::Seq`, so a solve is a
//! fixed sequence of floating-point operations: the same bits for any thread count (the three
//! coordinates are solved side by side, one per thread, each on its own).
//!
//! Why faer: docs/benchmarks.md, "Issue 15", compares it with sprs-ldl and nalgebra-sparse.

use anyhow::{anyhow, bail, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, CholeskySymbolicParams, LltRef, SymbolicCholesky,
    SymbolicCholeskyRaw, SymmetricOrdering,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{Conj, MatMut, Par, Side};

/// The lower triangle of a symmetric matrix as a list of entries, summed where they repeat.
#[derive(Debug, Default)]
pub struct LowerTriangle {
    n: usize,
    /// `(column, row, value)` with `row ≥ column`, in the order they were added.
    entries: Vec<(u32, u32, f64)>,
}

impl LowerTriangle {
    pub fn new(n: usize) -> Self {
        LowerTriangle {
            n,
            entries: Vec::new(),
        }
    }

    /// Adds `value` at `(a, b)` of the symmetric matrix (stored once, in the lower triangle).
    pub fn add(&mut self, a: u32, b: u32, value: f64) {
        let (row, column) = if a >= b { (a, b) } else { (b, a) };
        self.entries.push((column, row, value));
    }

    /// The diagonal of the matrix so far (entries added for `(k, k)`, summed).
    pub fn diagonal(&self) -> Vec<f64> {
        let mut diagonal = vec![0.0; self.n];
        for &(column, row, value) in &self.entries {
            if column == row {
                diagonal[row as usize] += value;
            }
        }
        diagonal
    }

    /// Compressed columns: sorted by (column, row), repeated entries summed in the order they
    /// were added (a stable sort), so the values do not depend on anything but the input.
    fn compress(mut self) -> (Vec<u32>, Vec<u32>, Vec<f64>) {
        self.entries.sort_by_key(|&(column, row, _)| (column, row));
        let mut column_starts = vec![0u32; self.n + 1];
        let mut rows: Vec<u32> = Vec::with_capacity(self.entries.len());
        let mut values: Vec<f64> = Vec::with_capacity(self.entries.len());
        let mut last: Option<(u32, u32)> = None;
        for (column, row, value) in self.entries {
            if last == Some((column, row)) {
                *values.last_mut().expect("an entry was pushed") += value;
            } else {
                rows.push(row);
                values.push(value);
                column_starts[column as usize + 1] += 1;
                last = Some((column, row));
            }
        }
        for k in 0..self.n {
            column_starts[k + 1] += column_starts[k];
        }
        (column_starts, rows, values)
    }
}

/// `L` with `H = L Lᵀ`, and what a solve needs; and the matrix it was made from, so that
/// [`Factor::refactor_with_diagonal`] can factor it again with a diagonal added (contacts)
/// on the same symbolic analysis.
#[derive(Debug)]
pub struct Factor {
    symbolic: SymbolicCholesky<u32>,
    values: Vec<f64>,
    structure: SymbolicSparseColMat<u32>,
    /// The values of `H` without any added diagonal. Each column's first entry is its
    /// diagonal: rows are sorted and the lower triangle starts at the diagonal, which every
    /// unknown has (its inertia `m/h²`).
    matrix_values: Vec<f64>,
}

/// A compressed matrix and its symbolic analysis (AMD fill-reducing ordering).
struct Analysed {
    structure: SymbolicSparseColMat<u32>,
    values: Vec<f64>,
    symbolic: Result<SymbolicCholesky<u32>>,
}

impl Analysed {
    fn new(matrix: LowerTriangle) -> Self {
        let n = matrix.n;
        let (column_starts, rows, values) = matrix.compress();
        let structure = SymbolicSparseColMat::<u32>::new_checked(n, n, column_starts, None, rows);
        let symbolic = factorize_symbolic_cholesky(
            structure.as_ref(),
            Side::Lower,
            SymmetricOrdering::Amd,
            CholeskySymbolicParams::default(),
        )
        .map_err(|e| anyhow!("cannot analyse the projective system matrix: {e:?}"));
        Analysed {
            structure,
            values,
            symbolic,
        }
    }
}

impl Factor {
    /// Factors the matrix (symbolic analysis with AMD ordering, then the numeric factor).
    /// Every column must hold its diagonal entry ([`Factor::refactor_with_diagonal`] adds
    /// to each column's first).
    pub fn new(matrix: LowerTriangle) -> Result<Factor> {
        let analysed = Analysed::new(matrix);
        let symbolic = analysed.symbolic?;
        let structure = analysed.structure;
        let mut values = vec![0.0; symbolic.len_val()];
        factorize(&symbolic, &structure, &analysed.values, &mut values)?;
        Ok(Factor {
            symbolic,
            values,
            structure,
            matrix_values: analysed.values,
        })
    }

    /// Factors `H + diag(extra)` (one entry per unknown, each ≥ 0) in place of the factor
    /// held, on the same symbolic analysis: a numeric factorization only.
    pub fn refactor_with_diagonal(&mut self, extra: &[f64]) -> Result<()> {
        let mut values = self.matrix_values.clone();
        for (column, (&first, &added)) in self.structure.col_ptr().iter().zip(extra).enumerate() {
            debug_assert_eq!(self.structure.row_idx()[first as usize] as usize, column);
            values[first as usize] += added;
        }
        factorize(&self.symbolic, &self.structure, &values, &mut self.values)
    }

    /// Bytes the factorization of `matrix` holds at its peak, from the symbolic analysis
    /// alone (`check`'s estimate): the compressed matrix (and the copy a refactorization
    /// adds the contacts to), `L`'s values and its `u32` row indices as the analysis keeps
    /// them (one per value for a simplicial factor, one per row of each supernode for a
    /// supernodal one). Counting one per value for both was 12 MiB too many on a 160 × 160
    /// cloth, which glibc's resident freed blocks had hidden (docs/benchmarks.md, "Issue 13:
    /// memory freed between frames").
    pub fn analysed_bytes(matrix: LowerTriangle) -> usize {
        let n = matrix.n;
        let analysed = Analysed::new(matrix);
        let matrix_bytes = analysed.values.len() * 20 + (n + 1) * 4;
        let factor_bytes = analysed.symbolic.map_or(0, |s| {
            let row_indices = match s.raw() {
                SymbolicCholeskyRaw::Simplicial(s) => s.row_idx().len(),
                SymbolicCholeskyRaw::Supernodal(s) => s.row_idx().len(),
            };
            s.len_val() * 8 + row_indices * 4
        });
        matrix_bytes + factor_bytes
    }

    /// Unknowns (free particles).
    pub fn len(&self) -> usize {
        self.symbolic.nrows()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nonzeros of the lower triangle of `H`.
    pub fn matrix_nonzeros(&self) -> usize {
        self.matrix_values.len()
    }

    /// Bytes of `L`'s values (f64), the bulk of the factor's memory.
    pub fn value_bytes(&self) -> usize {
        self.values.len() * std::mem::size_of::<f64>()
    }

    /// Scratch memory for one [`Factor::solve`] of one column, allocated once per run.
    pub fn solve_scratch(&self) -> MemBuffer {
        MemBuffer::new(self.symbolic.solve_in_place_scratch::<f64>(1, Par::Seq))
    }

    /// Overwrites `column` (one coordinate of the right-hand side, one entry per unknown) with
    /// the solution of `H x = column`.
    pub fn solve(&self, column: &mut [f64], scratch: &mut MemBuffer) {
        let n = self.len();
        LltRef::new(&self.symbolic, &self.values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(column, n, 1),
            Par::Seq,
            MemStack::new(scratch),
        );
    }
}

/// The numeric Cholesky factor of the matrix `structure` with `values`, into `factor_values`
/// (`symbolic.len_val()` of them).
fn factorize(
    symbolic: &SymbolicCholesky<u32>,
    structure: &SymbolicSparseColMat<u32>,
    values: &[f64],
    factor_values: &mut [f64],
) -> Result<()> {
    let mut scratch =
        MemBuffer::new(symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()));
    let matrix = SparseColMatRef::new(structure.as_ref(), values);
    if let Err(e) = symbolic.factorize_numeric_llt(
        factor_values,
        matrix,
        Side::Lower,
        LltRegularization::default(),
        Par::Seq,
        MemStack::new(&mut scratch),
        Default::default(),
    ) {
        bail!("the projective system matrix is not positive definite ({e:?})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1-D chain Laplacian plus a diagonal: solves against a product computed by hand.
    #[test]
    fn solves_a_chain_system_and_sums_repeated_entries() {
        let n = 50u32;
        let mut matrix = LowerTriangle::new(n as usize);
        for k in 0..n {
            matrix.add(k, k, 1.0);
        }
        for k in 0..n - 1 {
            // A spring of weight 3 between k and k + 1, added as two halves.
            for _ in 0..2 {
                matrix.add(k, k, 1.5);
                matrix.add(k + 1, k + 1, 1.5);
                matrix.add(k + 1, k, -1.5);
            }
        }
        let factor = Factor::new(matrix).unwrap();
        assert_eq!(factor.matrix_nonzeros(), (2 * n - 1) as usize);
        let x: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
        let h_times = |x: &[f64], k: usize| {
            let mut y = x[k];
            if k > 0 {
                y += 3.0 * (x[k] - x[k - 1]);
            }
            if k + 1 < x.len() {
                y += 3.0 * (x[k] - x[k + 1]);
            }
            y
        };
        let mut b: Vec<f64> = (0..n as usize).map(|k| h_times(&x, k)).collect();
        let mut scratch = factor.solve_scratch();
        factor.solve(&mut b, &mut scratch);
        for k in 0..n as usize {
            assert!((b[k] - x[k]).abs() < 1e-12, "{k}: {} vs {}", b[k], x[k]);
        }
    }

    #[test]
    fn refuses_a_matrix_that_is_not_positive_definite() {
        let mut matrix = LowerTriangle::new(2);
        matrix.add(0, 0, 1.0);
        matrix.add(1, 1, 1.0);
        matrix.add(1, 0, 2.0);
        assert!(Factor::new(matrix).is_err());
    }
}
