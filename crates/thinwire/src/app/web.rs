//! Web browsing (seed 002 §III): transactions back to back — the client requests a
//! page, the server returns it, the client requests each embedded object and the
//! server returns it; the next transaction starts when the last object has arrived
//! (no think time by default, as in the seed).
//!
//! Distributions: Mah's empirical HTTP model (B. Mah, "An Empirical Model of HTTP
//! Network Traffic", INFOCOM 1997) as shipped with ns-2 (`tcl/http/data/`:
//! `HttpRequestLength.cdf` for request sizes, `HttpReplyLength.cdf` for page *and*
//! embedded-object sizes — ns-2's web model uses the reply distribution for both —
//! and `HttpConnections.cdf` for the number of embedded objects per page). The size
//! tables below are quantiles read off those empirical CDFs (the value at which the
//! cumulative frequency first reaches p); sizes are drawn by inverse transform with
//! linear interpolation between quantiles. The object count is drawn from its full
//! discrete table. Means of the tables as sampled here: request 340 B, reply 7.4 kB
//! (heavy-tailed, up to 1.6 MB), 2.84 embedded objects per page.
//!
//! Connections: HTTP/1.0 style, one TCP connection per request, opened by the client
//! (mobile host), closed by the server after its reply; one connection at a time.
//! Parameters (defaults): `think` 0 s between transactions; `transactions`
//! unlimited.
use crate::rng::Rng;

/// (cumulative probability, bytes) for request sizes.
pub const REQUEST: &[(f64, f64)] = &[
    (0.0, 0.0),
    (0.01, 118.0),
    (0.02, 120.0),
    (0.05, 135.0),
    (0.10, 148.0),
    (0.15, 190.0),
    (0.20, 198.0),
    (0.25, 204.0),
    (0.30, 209.0),
    (0.35, 214.0),
    (0.40, 220.0),
    (0.45, 226.0),
    (0.50, 231.0),
    (0.55, 239.0),
    (0.60, 246.0),
    (0.65, 257.0),
    (0.70, 269.0),
    (0.75, 282.0),
    (0.80, 291.0),
    (0.85, 315.0),
    (0.86, 355.0),
    (0.87, 1028.0),
    (0.90, 1057.0),
    (0.95, 1079.0),
    (0.99, 1134.0),
    (1.0, 1373.0),
];

/// (cumulative probability, bytes) for page and object (reply) sizes.
pub const REPLY: &[(f64, f64)] = &[
    (0.0, 0.0),
    (0.02, 90.0),
    (0.05, 103.0),
    (0.10, 110.0),
    (0.15, 306.0),
    (0.20, 412.0),
    (0.25, 560.0),
    (0.30, 830.0),
    (0.35, 1078.0),
    (0.40, 1434.0),
    (0.45, 1800.0),
    (0.50, 2112.0),
    (0.55, 2522.0),
    (0.60, 2811.0),
    (0.65, 3275.0),
    (0.70, 3886.0),
    (0.75, 4797.0),
    (0.80, 6036.0),
    (0.85, 8188.0),
    (0.90, 12581.0),
    (0.92, 15503.0),
    (0.94, 20344.0),
    (0.95, 23332.0),
    (0.96, 29273.0),
    (0.97, 33537.0),
    (0.98, 47758.0),
    (0.99, 67379.0),
    (0.995, 103200.0),
    (0.998, 290407.0),
    (0.999, 649354.0),
    (1.0, 1636039.0),
];

/// (embedded objects, cumulative probability), the full table.
pub const OBJECTS: &[(u32, f64)] = &[
    (1, 0.511772853186),
    (2, 0.720914127424),
    (3, 0.795706371191),
    (4, 0.832409972299),
    (5, 0.882271468144),
    (6, 0.907202216066),
    (7, 0.923822714681),
    (8, 0.939058171745),
    (9, 0.950138504155),
    (10, 0.961911357341),
    (11, 0.968144044321),
    (12, 0.972299168975),
    (13, 0.972991689751),
    (14, 0.977146814404),
    (15, 0.979916897507),
    (16, 0.987534626039),
    (17, 0.988227146814),
    (18, 0.989612188366),
    (19, 0.993074792244),
    (20, 0.995844875346),
    (21, 0.996537396122),
    (32, 0.997229916898),
    (35, 0.997922437673),
    (37, 0.998614958449),
    (63, 0.999307479224),
    (65, 1.0),
];

/// Inverse-transform sample from a quantile table, interpolating linearly.
pub fn sample_quantiles(table: &[(f64, f64)], u: f64) -> f64 {
    let i = table.partition_point(|&(p, _)| p < u).clamp(1, table.len() - 1);
    let (p0, v0) = table[i - 1];
    let (p1, v1) = table[i];
    if p1 <= p0 {
        return v1;
    }
    v0 + (v1 - v0) * ((u - p0) / (p1 - p0)).clamp(0.0, 1.0)
}

pub fn sample_objects(u: f64) -> u32 {
    OBJECTS.iter().find(|&&(_, p)| u <= p).map(|&(n, _)| n).unwrap_or(65)
}

/// One transaction's sizes: (request, reply) for the page, then for each object.
#[derive(Clone, Debug, PartialEq)]
pub struct Transaction {
    pub exchanges: Vec<(u64, u64)>,
}

impl Transaction {
    pub fn bytes_down(&self) -> u64 {
        self.exchanges.iter().map(|e| e.1).sum()
    }
}

/// Draws transactions from Mah's model. Sizes are at least 1 byte.
pub struct WebModel {
    rng: Rng,
}

impl WebModel {
    pub fn new(rng: Rng) -> WebModel {
        WebModel { rng }
    }
    fn size(&mut self, t: &[(f64, f64)]) -> u64 {
        (sample_quantiles(t, self.rng.uniform()).round() as u64).max(1)
    }
    pub fn transaction(&mut self) -> Transaction {
        let n = sample_objects(self.rng.uniform());
        let mut ex = vec![(self.size(REQUEST), self.size(REPLY))];
        for _ in 0..n {
            ex.push((self.size(REQUEST), self.size(REPLY)));
        }
        Transaction { exchanges: ex }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tables_are_monotone() {
        for t in [REQUEST, REPLY] {
            for w in t.windows(2) {
                assert!(w[0].0 < w[1].0 && w[0].1 <= w[1].1, "{w:?}");
            }
        }
        for w in OBJECTS.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1);
        }
        assert_eq!(OBJECTS.last().unwrap().1, 1.0);
    }
    #[test]
    fn samples_follow_the_tables() {
        let mut m = WebModel::new(Rng::stream(1, 0, "web"));
        let tx: Vec<Transaction> = (0..40_000).map(|_| m.transaction()).collect();
        let n_obj: Vec<usize> = tx.iter().map(|t| t.exchanges.len() - 1).collect();
        let share1 = n_obj.iter().filter(|&&n| n == 1).count() as f64 / tx.len() as f64;
        assert!((share1 - 0.5118).abs() < 0.01, "{share1}");
        let replies: Vec<u64> = tx.iter().flat_map(|t| t.exchanges.iter().map(|e| e.1)).collect();
        let mut sorted = replies.clone();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2];
        assert!((1900..2350).contains(&median), "median reply {median}");
        let reqs: Vec<u64> = tx.iter().flat_map(|t| t.exchanges.iter().map(|e| e.0)).collect();
        let big = reqs.iter().filter(|&&r| r > 1000).count() as f64 / reqs.len() as f64;
        assert!((big - 0.13).abs() < 0.01, "share of ~1 kB requests {big}");
        assert!(sorted.last().unwrap() > &200_000, "heavy tail is sampled");
    }
}
