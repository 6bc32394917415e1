//! A two-state (Gilbert–Elliott) model fitted to a sequence of frame fates by
//! maximum likelihood (`thinwire fit-channel`): a hidden Markov chain of a good
//! and a bad state, moving good → bad with probability `p` and bad → good with
//! `r` at each frame, each state losing a frame with its own probability (`eg`,
//! `eb`). Baum–Welch (EM over the scaled forward–backward recursions; Rabiner
//! 1989) from the simple Gilbert model's closed-form start (losses only in the
//! bad state, `p` and `r` from the observed transitions), until the
//! log-likelihood gains less than `tol` per iteration.
use crate::rng::Rng;

/// Gilbert–Elliott parameters, per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeParams {
    /// P(good → bad).
    pub p: f64,
    /// P(bad → good).
    pub r: f64,
    /// P(lost | good).
    pub eg: f64,
    /// P(lost | bad).
    pub eb: f64,
}

impl GeParams {
    /// The stationary share of frames in the bad state.
    pub fn bad_share(&self) -> f64 {
        self.p / (self.p + self.r)
    }
    /// The long-run frame loss ratio.
    pub fn loss_ratio(&self) -> f64 {
        let b = self.bad_share();
        (1.0 - b) * self.eg + b * self.eb
    }
}

/// The result of a fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeFit {
    pub params: GeParams,
    /// Log-likelihood of the sequence under the fit (natural log).
    pub loglik: f64,
    pub iterations: u32,
}

const FLOOR: f64 = 1e-9;

fn clamp(x: f64) -> f64 {
    x.clamp(FLOOR, 1.0 - FLOOR)
}

/// The simple Gilbert model's estimate: bad = lost, transitions counted.
fn start(seq: &[bool]) -> GeParams {
    let (mut gb, mut g, mut bg, mut b) = (0.0, 0.0, 0.0, 0.0);
    for w in seq.windows(2) {
        match (w[0], w[1]) {
            (false, x) => {
                g += 1.0;
                gb += x as u8 as f64;
            }
            (true, x) => {
                b += 1.0;
                bg += (!x) as u8 as f64;
            }
        }
    }
    let p = if g > 0.0 { gb / g } else { 0.5 };
    let r = if b > 0.0 { bg / b } else { 0.5 };
    // Start the emissions a little inside the corners, so EM can move them.
    GeParams { p: clamp(p.max(1e-4)), r: clamp(r.max(1e-4)), eg: 0.01, eb: 0.9 }
}

/// One Baum–Welch iteration: the log-likelihood of `seq` under `m`, and the
/// re-estimated parameters.
fn step(seq: &[bool], m: &GeParams) -> (f64, GeParams) {
    let n = seq.len();
    let a = [[1.0 - m.p, m.p], [m.r, 1.0 - m.r]];
    let emit = |s: usize, lost: bool| {
        let e = if s == 0 { m.eg } else { m.eb };
        if lost {
            e
        } else {
            1.0 - e
        }
    };
    // Scaled forward: alpha[t][s], scale c[t].
    let pi = [1.0 - m.bad_share(), m.bad_share()];
    let mut alpha = vec![[0.0f64; 2]; n];
    let mut c = vec![0.0f64; n];
    for t in 0..n {
        let mut v = [0.0; 2];
        for s in 0..2 {
            let prior = if t == 0 { pi[s] } else { alpha[t - 1][0] * a[0][s] + alpha[t - 1][1] * a[1][s] };
            v[s] = prior * emit(s, seq[t]);
        }
        let sum = (v[0] + v[1]).max(f64::MIN_POSITIVE);
        c[t] = sum;
        alpha[t] = [v[0] / sum, v[1] / sum];
    }
    let loglik: f64 = c.iter().map(|x| x.ln()).sum();
    // Scaled backward, accumulating the expected counts as it goes.
    let mut beta = [1.0f64, 1.0];
    let (mut trans, mut from) = ([[0.0f64; 2]; 2], [0.0f64; 2]);
    let (mut lost_in, mut in_state) = ([0.0f64; 2], [0.0f64; 2]);
    for t in (0..n).rev() {
        let gamma = [alpha[t][0] * beta[0], alpha[t][1] * beta[1]];
        let g = gamma[0] + gamma[1];
        for s in 0..2 {
            let x = gamma[s] / g;
            in_state[s] += x;
            if seq[t] {
                lost_in[s] += x;
            }
        }
        if t == 0 {
            break;
        }
        // xi(t-1 -> t), and beta for t-1.
        let eb_t = [emit(0, seq[t]) * beta[0], emit(1, seq[t]) * beta[1]];
        let mut xi = [[0.0f64; 2]; 2];
        let mut total = 0.0;
        for i in 0..2 {
            for j in 0..2 {
                xi[i][j] = alpha[t - 1][i] * a[i][j] * eb_t[j];
                total += xi[i][j];
            }
        }
        for i in 0..2 {
            for j in 0..2 {
                trans[i][j] += xi[i][j] / total;
            }
            from[i] += (xi[i][0] + xi[i][1]) / total;
        }
        beta = [(a[0][0] * eb_t[0] + a[0][1] * eb_t[1]) / c[t], (a[1][0] * eb_t[0] + a[1][1] * eb_t[1]) / c[t]];
    }
    let next = GeParams {
        p: clamp(trans[0][1] / from[0].max(FLOOR)),
        r: clamp(trans[1][0] / from[1].max(FLOOR)),
        eg: clamp(lost_in[0] / in_state[0].max(FLOOR)),
        eb: clamp(lost_in[1] / in_state[1].max(FLOOR)),
    };
    (loglik, next)
}

/// Fits a Gilbert–Elliott model to `seq` (true = lost). The states are
/// labelled so that the bad one loses more.
pub fn fit(seq: &[bool], max_iter: u32, tol: f64) -> GeFit {
    let mut m = start(seq);
    if seq.len() < 2 {
        return GeFit { params: m, loglik: 0.0, iterations: 0 };
    }
    let mut last = f64::NEG_INFINITY;
    let mut iterations = 0;
    let mut loglik = last;
    while iterations < max_iter {
        let (ll, next) = step(seq, &m);
        iterations += 1;
        loglik = ll;
        if ll - last < tol {
            break;
        }
        last = ll;
        m = next;
    }
    if m.eg > m.eb {
        m = GeParams { p: m.r, r: m.p, eg: m.eb, eb: m.eg };
    }
    GeFit { params: m, loglik, iterations }
}

/// `n` frame fates drawn from the model, starting in its stationary state.
pub fn sample(m: &GeParams, n: usize, rng: &mut Rng) -> Vec<bool> {
    let mut bad = rng.uniform() < m.bad_share();
    (0..n)
        .map(|_| {
            let lost = rng.uniform() < if bad { m.eb } else { m.eg };
            bad = if bad { rng.uniform() >= m.r } else { rng.uniform() < m.p };
            lost
        })
        .collect()
}

/// The lengths of the runs of losses (bursts) and of deliveries (gaps).
pub fn runs(seq: &[bool]) -> (Vec<u32>, Vec<u32>) {
    let (mut bursts, mut gaps) = (vec![], vec![]);
    let mut i = 0;
    while i < seq.len() {
        let j = seq[i..].iter().position(|&x| x != seq[i]).map_or(seq.len(), |k| i + k);
        if seq[i] { &mut bursts } else { &mut gaps }.push((j - i) as u32);
        i = j;
    }
    (bursts, gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long sequence drawn from known parameters is fitted back to them.
    #[test]
    fn recovers_the_parameters_it_was_drawn_from() {
        for truth in
            [GeParams { p: 0.01, r: 0.2, eg: 0.001, eb: 0.6 }, GeParams { p: 0.002, r: 0.05, eg: 0.0, eb: 0.9 }]
        {
            let seq = sample(&truth, 400_000, &mut Rng::stream(5, 0, "ge"));
            let f = fit(&seq, 500, 1e-6);
            let m = f.params;
            let near = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.max(1e-3);
            assert!(near(m.p, truth.p, 0.15) && near(m.r, truth.r, 0.15), "{m:?} vs {truth:?}");
            assert!(near(m.eb, truth.eb, 0.05) && (m.eg - truth.eg).abs() < 0.001, "{m:?} vs {truth:?}");
            assert!(near(m.loss_ratio(), truth.loss_ratio(), 0.05));
            // EM never lowers the likelihood: the fit beats the starting guess.
            let (ll0, _) = step(&seq, &start(&seq));
            assert!(f.loglik >= ll0 - 1e-6, "{} < {ll0}", f.loglik);
        }
    }

    #[test]
    fn runs_split_bursts_and_gaps() {
        let s = [false, false, true, true, true, false, true];
        assert_eq!(runs(&s), (vec![3, 1], vec![2, 1]));
    }
}
