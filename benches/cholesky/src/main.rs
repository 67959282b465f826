//! Sparse Cholesky options for the Projective Dynamics system matrix of a cloth grid (issue
//! 15): faer, sprs-ldl and nalgebra-sparse, timed and sized. Results in docs/benchmarks.md.

use std::collections::BTreeMap;
use std::time::Instant;

use dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltParams;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering,
    factorize_symbolic_cholesky, LltRef,
};
use faer::sparse::linalg::{amd, SupernodalThreshold};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, Mat, Par, Side, Spec};

// ---------------------------------------------------------------- matrix

/// Symmetric matrix in CSC, both triangles stored, rows sorted.
struct Csc {
    n: usize,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    val: Vec<f64>,
}

impl Csc {
    fn from_cols(cols: Vec<BTreeMap<usize, f64>>) -> Csc {
        let n = cols.len();
        let mut col_ptr = vec![0usize; n + 1];
        let mut row_idx = Vec::new();
        let mut val = Vec::new();
        for (j, c) in cols.iter().enumerate() {
            for (&i, &v) in c {
                row_idx.push(i);
                val.push(v);
            }
            col_ptr[j + 1] = row_idx.len();
        }
        Csc { n, col_ptr, row_idx, val }
    }
    fn upper(&self) -> Csc {
        let mut cols = vec![BTreeMap::new(); self.n];
        for j in 0..self.n {
            for k in self.col_ptr[j]..self.col_ptr[j + 1] {
                let i = self.row_idx[k];
                if i <= j {
                    cols[j].insert(i, self.val[k]);
                }
            }
        }
        Csc::from_cols(cols)
    }
    /// B = P A P^T with B[i,j] = A[fwd[i], fwd[j]]
    fn permuted(&self, fwd: &[usize], inv: &[usize]) -> Csc {
        let mut cols = vec![BTreeMap::new(); self.n];
        for jn in 0..self.n {
            let j = fwd[jn];
            for k in self.col_ptr[j]..self.col_ptr[j + 1] {
                cols[jn].insert(inv[self.row_idx[k]], self.val[k]);
            }
        }
        Csc::from_cols(cols)
    }
    /// y = A x for column-major n x k blocks
    fn matvec(&self, x: &[f64], k: usize) -> Vec<f64> {
        let n = self.n;
        let mut y = vec![0.0; n * k];
        for c in 0..k {
            for j in 0..n {
                let xj = x[c * n + j];
                for p in self.col_ptr[j]..self.col_ptr[j + 1] {
                    y[c * n + self.row_idx[p]] += self.val[p] * xj;
                }
            }
        }
        y
    }
    fn nnz(&self) -> usize {
        self.row_idx.len()
    }
}

/// PD system matrix for an N x N cloth grid, pinned corners (0,0),(N-1,0) removed.
fn build_cloth(nn: usize) -> Csc {
    let np = nn * nn;
    let idx = |i: usize, j: usize| j * nn + i;
    let mass = 0.1 / (np as f64);
    let h = 1.0 / (24.0 * 20.0);
    let ws = 1e4;
    let wb = 10.0;
    let kvec = [0.5, 0.5, -0.5, -0.5];

    let mut tris = Vec::new();
    for j in 0..nn - 1 {
        for i in 0..nn - 1 {
            let a = idx(i, j);
            let b = idx(i + 1, j);
            let c = idx(i, j + 1);
            let d = idx(i + 1, j + 1);
            tris.push([a, b, d]);
            tris.push([a, d, c]);
        }
    }
    // edge -> opposite vertices
    let mut edges: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for t in &tris {
        for e in 0..3 {
            let (u, v, o) = (t[e], t[(e + 1) % 3], t[(e + 2) % 3]);
            edges.entry((u.min(v), u.max(v))).or_default().push(o);
        }
    }
    let mut full: Vec<BTreeMap<usize, f64>> = vec![BTreeMap::new(); np];
    let mut add = |i: usize, j: usize, v: f64| {
        *full[j].entry(i).or_insert(0.0) += v;
    };
    for p in 0..np {
        add(p, p, mass / (h * h));
    }
    let mut n_hinge = 0;
    for (&(u, v), opp) in &edges {
        add(u, u, ws);
        add(v, v, ws);
        add(u, v, -ws);
        add(v, u, -ws);
        if opp.len() == 2 {
            n_hinge += 1;
            let s = [u, v, opp[0], opp[1]];
            for a in 0..4 {
                for b in 0..4 {
                    add(s[a], s[b], wb * kvec[a] * kvec[b]);
                }
            }
        }
    }
    let _ = n_hinge;
    // eliminate pinned
    let pinned = [idx(0, 0), idx(nn - 1, 0)];
    let mut newid = vec![usize::MAX; np];
    let mut k = 0;
    for p in 0..np {
        if !pinned.contains(&p) {
            newid[p] = k;
            k += 1;
        }
    }
    let mut cols = vec![BTreeMap::new(); k];
    for (j, c) in full.into_iter().enumerate() {
        if newid[j] == usize::MAX {
            continue;
        }
        for (i, v) in c {
            if newid[i] != usize::MAX && v != 0.0 {
                cols[newid[j]].insert(newid[i], v);
            }
        }
    }
    Csc::from_cols(cols)
}

// ---------------------------------------------------------------- utils

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len();
    if m % 2 == 1 { v[m / 2] } else { 0.5 * (v[m / 2 - 1] + v[m / 2]) }
}

fn time<F: FnOnce()>(f: F) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn rel_residual(a: &Csc, x: &[f64], b: &[f64]) -> f64 {
    let ax = a.matvec(x, 3);
    let num: f64 = ax.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum();
    let den: f64 = b.iter().map(|q| q * q).sum();
    (num / den).sqrt()
}

fn fnv(x: &[f64]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for v in x {
        h ^= v.to_bits();
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("x hash {:016x}", h)
}

fn bits_eq(x: &[f64], y: &[f64]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits())
}

struct Row {
    option: String,
    n_grid: usize,
    n: usize,
    sym_ms: f64,
    num_ms: f64,
    solve_ms: f64,
    nnz_l: usize,
    stored_vals: usize,
    bytes: usize,
    resid: f64,
    det: bool,
    reps: usize,
    note: String,
}

fn print_row(r: &Row) {
    println!(
        "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.2} | {:.1e} | {} | {} | {} |",
        r.option,
        r.n_grid,
        r.n,
        r.sym_ms,
        r.num_ms,
        r.solve_ms,
        r.nnz_l,
        r.stored_vals,
        r.bytes as f64 / (1024.0 * 1024.0),
        r.resid,
        if r.det { "yes" } else { "NO" },
        r.reps,
        r.note
    );
}

// ---------------------------------------------------------------- faer

fn faer_bytes(sym: &SymbolicCholesky<usize>) -> (usize, &'static str) {
    let isz = std::mem::size_of::<usize>();
    let vals = sym.len_val() * 8;
    let perm = 0; // perm arrays (2n) not counted for any option
    let _ = perm;
    match sym.raw() {
        SymbolicCholeskyRaw::Simplicial(s) => {
            (vals + (s.col_ptr().len() + s.row_idx().len()) * isz, "simplicial")
        }
        SymbolicCholeskyRaw::Supernodal(s) => (
            vals + (s.row_idx().len()
                + s.col_ptr_for_row_idx().len()
                + s.col_ptr_for_val().len()
                + s.supernode_begin().len()
                + s.supernode_end().len())
                * isz,
            "supernodal",
        ),
    }
}

fn run_faer(
    label: &str,
    thr: SupernodalThreshold,
    a: &Csc,
    up: &Csc,
    b: &[f64],
    nn: usize,
    reps: usize,
    nnz_l_true: usize,
) -> Row {
    let n = a.n;
    let asym = SymbolicSparseColMatRef::new_checked(n, n, &up.col_ptr, None, &up.row_idx);
    let amat = SparseColMatRef::new(asym, &up.val);
    let params = CholeskySymbolicParams { supernodal_flop_ratio_threshold: thr, ..Default::default() };

    let mut ts = Vec::new();
    let mut sym = None;
    for _ in 0..reps {
        let mut s = None;
        ts.push(time(|| {
            s = Some(
                factorize_symbolic_cholesky(asym, Side::Upper, SymmetricOrdering::Amd, params)
                    .unwrap(),
            )
        }));
        sym = s;
    }
    let sym = sym.unwrap();
    let sym_t = median(ts);

    let par = Par::Seq;
    let mut lval = vec![0.0f64; sym.len_val()];
    let mut fac_mem =
        MemBuffer::new(sym.factorize_numeric_llt_scratch::<f64>(par, Spec::<LltParams, f64>::default()));
    let mut ts = Vec::new();
    let mut lprev: Option<Vec<f64>> = None;
    let mut fac_det = true;
    for _ in 0..reps {
        ts.push(time(|| {
            sym.factorize_numeric_llt(
                &mut lval,
                amat,
                Side::Upper,
                Default::default(),
                par,
                MemStack::new(&mut fac_mem),
                Default::default(),
            )
            .unwrap();
        }));
        if let Some(p) = &lprev {
            fac_det &= bits_eq(p, &lval);
        }
        lprev = Some(lval.clone());
    }
    let num_t = median(ts);

    let llt = LltRef::new(&sym, &lval);
    let mut solve_mem = MemBuffer::new(sym.solve_in_place_scratch::<f64>(3, par));
    let mut x = Mat::<f64>::zeros(n, 3);
    let mut ts = Vec::new();
    let mut results: Vec<Vec<f64>> = Vec::new();
    for _ in 0..reps {
        for c in 0..3 {
            for i in 0..n {
                x[(i, c)] = b[c * n + i];
            }
        }
        ts.push(time(|| {
            llt.solve_in_place_with_conj(Conj::No, x.as_mut(), par, MemStack::new(&mut solve_mem));
        }));
        let mut v = vec![0.0; 3 * n];
        for c in 0..3 {
            for i in 0..n {
                v[c * n + i] = x[(i, c)];
            }
        }
        results.push(v);
    }
    let solve_t = median(ts);
    let det = results.windows(2).all(|w| bits_eq(&w[0], &w[1])) && fac_det;
    let (bytes, kind) = faer_bytes(&sym);
    Row {
        option: format!("{label} [{kind}]"),
        n_grid: nn,
        n,
        sym_ms: sym_t * 1e3,
        num_ms: num_t * 1e3,
        solve_ms: solve_t * 1e3,
        nnz_l: nnz_l_true,
        stored_vals: sym.len_val(),
        bytes,
        resid: rel_residual(a, &results[0], b),
        det,
        reps,
        note: fnv(&results[0]),
    }
}

/// faer AMD permutation (fwd, inv) computed on the upper triangle + time.
fn faer_amd(up: &Csc) -> (Vec<usize>, Vec<usize>) {
    let n = up.n;
    let asym = SymbolicSparseColMatRef::new_checked(n, n, &up.col_ptr, None, &up.row_idx);
    let mut fwd = vec![0usize; n];
    let mut inv = vec![0usize; n];
    let mut mem = MemBuffer::new(amd::order_scratch::<usize>(n, up.nnz()));
    amd::order(&mut fwd, &mut inv, asym, Default::default(), MemStack::new(&mut mem)).unwrap();
    (fwd, inv)
}

// ---------------------------------------------------------------- sprs

fn run_sprs(label: &str, use_amd: bool, a: &Csc, up: &Csc, b: &[f64], nn: usize, reps: usize) -> Row {
    use sprs::{CsMat, FillInReduction, PermOwned, SymmetryCheck};
    use sprs_ldl::{Ldl, LdlSymbolic};
    let n = a.n;
    let m = CsMat::new_csc((n, n), a.col_ptr.clone(), a.row_idx.clone(), a.val.clone());
    let mv = m.view();

    let mut ts = Vec::new();
    let mut sym = None;
    for _ in 0..reps {
        let mut s = None;
        ts.push(time(|| {
            s = Some(if use_amd {
                let (fwd, _inv) = faer_amd(up);
                LdlSymbolic::new_perm(mv, PermOwned::new(fwd), SymmetryCheck::DontCheckSymmetry)
            } else {
                Ldl::new()
                    .fill_in_reduction(FillInReduction::ReverseCuthillMcKee)
                    .check_symmetry(SymmetryCheck::DontCheckSymmetry)
                    .symbolic(mv)
            })
        }));
        sym = s;
    }
    let sym = sym.unwrap();
    let sym_t = median(ts);
    let mut num = sym.factor(mv).unwrap();
    let mut ts = Vec::new();
    let mut fac_det = true;
    let mut prev: Option<Vec<f64>> = None;
    for _ in 0..reps {
        ts.push(time(|| num.update(mv).unwrap()));
        let cur: Vec<f64> = num.l().data().iter().copied().chain(num.d().iter().copied()).collect();
        if let Some(p) = &prev {
            fac_det &= bits_eq(p, &cur);
        }
        prev = Some(cur);
    }
    let num_t = median(ts);

    let cols: Vec<Vec<f64>> = (0..3).map(|c| b[c * n..(c + 1) * n].to_vec()).collect();
    let mut ts = Vec::new();
    let mut results: Vec<Vec<f64>> = Vec::new();
    for _ in 0..reps {
        let mut out: Vec<Vec<f64>> = Vec::new();
        ts.push(time(|| {
            for c in 0..3 {
                out.push(num.solve(&cols[c]));
            }
        }));
        results.push(out.concat());
    }
    let solve_t = median(ts);
    let det = results.windows(2).all(|w| bits_eq(&w[0], &w[1])) && fac_det;
    let nnz = num.nnz(); // strictly lower part of unit L
    let isz = std::mem::size_of::<usize>();
    Row {
        option: label.to_string(),
        n_grid: nn,
        n,
        sym_ms: sym_t * 1e3,
        num_ms: num_t * 1e3,
        solve_ms: solve_t * 1e3,
        nnz_l: nnz + n,
        stored_vals: nnz + n,
        bytes: (nnz + n) * 8 + (nnz + n + 1) * isz,
        resid: rel_residual(a, &results[0], b),
        det,
        reps,
        note: fnv(&results[0]),
    }
}

// ---------------------------------------------------------------- nalgebra-sparse

fn run_nalgebra(label: &str, use_amd: bool, a: &Csc, up: &Csc, b: &[f64], nn: usize, reps: usize) -> Row {
    use nalgebra::DMatrix;
    use nalgebra_sparse::factorization::{CscCholesky, CscSymbolicCholesky};
    use nalgebra_sparse::CscMatrix;
    let n = a.n;
    // permutation is computed once (its cost is reported via the symbolic time)
    let mut amd_t = 0.0;
    let (fwd, inv) = if use_amd {
        let mut ts = Vec::new();
        let mut r = None;
        for _ in 0..reps {
            ts.push(time(|| r = Some(faer_amd(up))));
        }
        amd_t = median(ts);
        r.unwrap()
    } else {
        ((0..n).collect(), (0..n).collect())
    };
    let pa = if use_amd { a.permuted(&fwd, &inv) } else { Csc { n, col_ptr: a.col_ptr.clone(), row_idx: a.row_idx.clone(), val: a.val.clone() } };
    let m = CscMatrix::try_from_csc_data(n, n, pa.col_ptr.clone(), pa.row_idx.clone(), pa.val.clone()).unwrap();

    let mut ts = Vec::new();
    let mut sym = None;
    for _ in 0..reps {
        let mut s = None;
        let pat = m.pattern().clone();
        ts.push(time(|| s = Some(CscSymbolicCholesky::factor(pat))));
        sym = s;
    }
    let sym_t = median(ts) + amd_t;
    let nnz_l = sym.as_ref().unwrap().l_pattern().nnz();
    let mut chol = CscCholesky::factor_numerical(sym.unwrap(), m.values()).unwrap();
    let mut ts = Vec::new();
    let mut fac_det = true;
    let mut prev: Option<Vec<f64>> = None;
    for _ in 0..reps {
        ts.push(time(|| chol.refactor(m.values()).unwrap()));
        let cur = chol.l().values().to_vec();
        if let Some(p) = &prev {
            fac_det &= bits_eq(p, &cur);
        }
        prev = Some(cur);
    }
    let num_t = median(ts);

    let mut ts = Vec::new();
    let mut results: Vec<Vec<f64>> = Vec::new();
    let mut xm = DMatrix::<f64>::zeros(n, 3);
    for _ in 0..reps {
        let mut out = vec![0.0; 3 * n];
        ts.push(time(|| {
            // permute rhs, solve, un-permute (identity when no ordering)
            for c in 0..3 {
                for i in 0..n {
                    xm[(i, c)] = b[c * n + fwd[i]];
                }
            }
            chol.solve_mut(&mut xm);
            for c in 0..3 {
                for i in 0..n {
                    out[c * n + fwd[i]] = xm[(i, c)];
                }
            }
        }));
        results.push(out);
    }
    let solve_t = median(ts);
    let det = results.windows(2).all(|w| bits_eq(&w[0], &w[1])) && fac_det;
    let isz = std::mem::size_of::<usize>();
    Row {
        option: label.to_string(),
        n_grid: nn,
        n,
        sym_ms: sym_t * 1e3,
        num_ms: num_t * 1e3,
        solve_ms: solve_t * 1e3,
        nnz_l,
        stored_vals: nnz_l,
        bytes: nnz_l * 8 + (nnz_l + n + 1) * isz,
        resid: rel_residual(a, &results[0], b),
        det,
        reps,
        note: fnv(&results[0]),
    }
}

// ---------------------------------------------------------------- main

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = if args.len() > 1 {
        args[1].split(',').map(|s| s.parse().unwrap()).collect()
    } else {
        vec![64, 128, 256]
    };
    let which: String = if args.len() > 2 { args[2].clone() } else { "all".into() };
    let reps: usize = if args.len() > 3 { args[3].parse().unwrap() } else { 7 };

    println!("| option | N | n | symbolic ms | numeric ms | solve(3 rhs) ms | nnz(L) | stored values | factor MiB | rel. residual | bit-identical | reps | note |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &nn in &sizes {
        let a = build_cloth(nn);
        let up = a.upper();
        let n = a.n;
        let mut rng = Rng(0x5eed + nn as u64);
        let b: Vec<f64> = (0..3 * n).map(|_| rng.next()).collect();
        eprintln!("N={nn}: n={n}, nnz(H, both triangles)={}, nnz(upper)={}", a.nnz(), up.nnz());

        // true nnz(L) under faer AMD (simplicial column counts, incl. diagonal)
        let asym = SymbolicSparseColMatRef::new_checked(n, n, &up.col_ptr, None, &up.row_idx);
        let simp = factorize_symbolic_cholesky(
            asym,
            Side::Upper,
            SymmetricOrdering::Amd,
            CholeskySymbolicParams { supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SIMPLICIAL, ..Default::default() },
        )
        .unwrap();
        let nnz_l_amd = simp.len_val();

        let on = |k: &str| which == "all" || which.split('+').any(|w| w == k);
        if on("faer") {
            print_row(&run_faer("faer auto", SupernodalThreshold::AUTO, &a, &up, &b, nn, reps, nnz_l_amd));
            print_row(&run_faer("faer simplicial", SupernodalThreshold::FORCE_SIMPLICIAL, &a, &up, &b, nn, reps, nnz_l_amd));
            print_row(&run_faer("faer supernodal", SupernodalThreshold::FORCE_SUPERNODAL, &a, &up, &b, nn, reps, nnz_l_amd));
        }
        if on("sprs") {
            print_row(&run_sprs("sprs_ldl RCM (default)", false, &a, &up, &b, nn, reps));
            print_row(&run_sprs("sprs_ldl + faer AMD perm", true, &a, &up, &b, nn, reps));
        }
        if on("nalgebra") {
            print_row(&run_nalgebra("nalgebra-sparse + faer AMD perm", true, &a, &up, &b, nn, reps));
        }
        if on("nalgebra_nat") {
            print_row(&run_nalgebra("nalgebra-sparse natural order", false, &a, &up, &b, nn, reps));
        }
    }
}
