//! Several mobile hosts over the scenario's path (`thinwire emulate --mobiles N`),
//! doing no I/O: which [`RealtimePath`] a packet read from a host goes to, and
//! which host a packet the paths give back is written to. The emulator and
//! `simulate-log`'s replay both go through this type, so both route alike.
//!
//! Two ways for N mobiles to meet the link (`Cell`):
//! - `Separate` (the default; seed 004: each mobile over its own GPRS link, one
//!   proxy serving them all): mobile k has a path of its own — its own wireless
//!   link (ARQ sessions, channel, queues) and its own copy of the wired link
//!   (so N mobiles together have N times the wired capacity: give `[wired]` a
//!   rate that is not the bottleneck, or use `--gateway`, which has none).
//!   Mobile 0's link draws the scenario's random streams exactly as with one
//!   mobile; mobile k's draws from run index `run + k·2³²` (independent streams,
//!   `rng.rs`, which no replication index reaches). Packets from the server go to
//!   the path of the mobile they are addressed to, multicast and broadcast to
//!   every mobile's path (a copy each); a packet for an address that is no
//!   mobile's is dropped and counted (`unroutable`).
//! - `Shared` (seed 002's shared link): one path, one wireless link (one radio
//!   per direction, one channel, one wired link) on which each mobile has its
//!   own link-layer session and IP queues at both ends
//!   (`RealtimePath::share_cell`), as the simulator's flows of `mobile = k`: the
//!   multiplexer serves the mobiles' sessions in turn (and the bypass session,
//!   which carries the hosts' UDP with `udp_bypass`). Mobile 0's session is the
//!   link's first, drawing the scenario's streams as with one mobile. Packets
//!   leaving the link toward the mobiles go to the host they are addressed to
//!   (multicast and broadcast to every mobile). GSM RLP and IS-707 are one
//!   circuit per mobile: a shared cell of them is refused (`Fabric::new`).
//!
//! With one mobile both are the single path of before, packet for packet.
use crate::netns::{mobile_of, to_group};
use thinwire::config::Scenario;
use thinwire::realtime::{Decision, End, Output, RealtimePath};
use thinwire::time::Instant;

/// How several mobiles meet the wireless link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Cell {
    /// Each mobile over a link of its own.
    #[default]
    Separate,
    /// All mobiles over one link.
    Shared,
}

impl Cell {
    pub fn parse(s: &str) -> Option<Cell> {
        match s {
            "separate" => Some(Cell::Separate),
            "shared" => Some(Cell::Shared),
            _ => None,
        }
    }
}

/// Where a packet was read: mobile host k, or the server (or gateway) side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    Mobile(usize),
    Server,
}

/// Where a packet is to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    Mobile(usize),
    /// Multicast or broadcast toward the mobiles: every one (shared cell).
    Mobiles,
    Server,
}

/// Why an input was refused.
#[derive(Debug)]
pub enum Refused {
    /// Bytes that hold no IP packet.
    Unparsable,
    /// From the server side, for an address that is no mobile's (separate links).
    Unroutable,
}

pub struct Fabric {
    paths: Vec<RealtimePath>,
    mobiles: usize,
    cell: Cell,
    /// Packets refused because no mobile has their destination address (from the
    /// server in `Separate`, toward the mobiles in `Shared`).
    pub unroutable: u64,
}

/// Why `mobiles` mobiles cannot share the scenario's link as `cell`, if they
/// cannot: GSM RLP and IS-707 are one mobile's circuit.
pub fn cell_refusal(sc: &Scenario, mobiles: usize, cell: Cell) -> Option<String> {
    (cell == Cell::Shared && mobiles > 1 && sc.wireless.link().get().is_circuit()).then(|| {
        "--cell shared: a GSM RLP or IS-707 link is one mobile's circuit; several mobiles share raw, sr, asr, \
         rlc or gprs (or give each its own link: --cell separate)"
            .to_string()
    })
}

/// Each mobile's addresses, IPv4 and IPv6 (`netns::mobile_addr`).
fn cell_addresses(mobiles: usize) -> Vec<Vec<thinwire::wire::IpAddress>> {
    use thinwire::wire::IpAddress;
    (0..mobiles)
        .map(|k| {
            let v6: std::net::Ipv6Addr = crate::netns::mobile_addr(k).1.parse().expect("an IPv6 address");
            vec![IpAddress::V4(thinwire::config::mobile_addr(k as u16)), IpAddress::V6(v6.octets())]
        })
        .collect()
}

/// The random-stream run index of mobile k's link (module doc).
pub fn mobile_run(run: u64, k: usize) -> u64 {
    run.wrapping_add((k as u64) << 32)
}

impl Fabric {
    /// The paths of `mobiles` mobile hosts over the scenario (1 to
    /// `netns::MAX_MOBILES`). `trace`: record trace rows; `gateway`: no wired link.
    /// A shared cell of several mobiles over GSM RLP or IS-707 is refused (the
    /// error says why; `cell_refusal`).
    pub fn new(
        sc: &Scenario,
        mobiles: usize,
        cell: Cell,
        trace: bool,
        gateway: bool,
        udp_bypass: bool,
    ) -> Result<Fabric, String> {
        if let Some(why) = cell_refusal(sc, mobiles, cell) {
            return Err(why);
        }
        let n = if cell == Cell::Shared { 1 } else { mobiles };
        let paths = (0..n)
            .map(|k| {
                let mut p = if k == 0 {
                    RealtimePath::new(sc, trace)
                } else {
                    let mut s = sc.clone();
                    s.run = mobile_run(sc.run, k);
                    RealtimePath::new(&s, trace)
                };
                if gateway {
                    p.without_wired();
                }
                if udp_bypass {
                    p.bypass_udp();
                }
                if cell == Cell::Shared && mobiles > 1 {
                    p.share_cell(sc, &cell_addresses(mobiles));
                }
                p
            })
            .collect();
        Ok(Fabric { paths, mobiles, cell, unroutable: 0 })
    }

    /// The paths: one per mobile (`Separate`), or one (`Shared`).
    pub fn paths_mut(&mut self) -> &mut [RealtimePath] {
        &mut self.paths
    }

    pub fn paths(&self) -> &[RealtimePath] {
        &self.paths
    }

    /// Runs every event due at or before `now` on every path.
    pub fn advance(&mut self, now: Instant) {
        for p in &mut self.paths {
            p.advance(now);
        }
    }

    /// When a path next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.paths.iter().filter_map(|p| p.next_deadline()).min()
    }

    /// A packet read at `now` (call `advance(now)` first).
    pub fn input(&mut self, now: Instant, from: From, bytes: Vec<u8>) -> Result<(), Refused> {
        let (k, end) = match (from, self.cell) {
            (From::Mobile(_), Cell::Shared) => (0, End::Mobile),
            (From::Mobile(k), Cell::Separate) => (k, End::Mobile),
            (From::Server, Cell::Shared) => (0, End::Server),
            (From::Server, Cell::Separate) if self.paths.len() == 1 => (0, End::Server),
            (From::Server, Cell::Separate) if to_group(&bytes) => {
                let mut r = Ok(());
                for k in 0..self.paths.len() {
                    r = self.paths[k].input(now, End::Server, bytes.clone()).map_err(|_| Refused::Unparsable);
                }
                return r;
            }
            (From::Server, Cell::Separate) => match mobile_of(&bytes, true).filter(|&k| k < self.mobiles) {
                Some(k) => (k, End::Server),
                None => {
                    self.unroutable += 1;
                    return Err(Refused::Unroutable);
                }
            },
        };
        self.paths[k].input(now, end, bytes).map_err(|_| Refused::Unparsable)
    }

    /// The next packet due to leave a path (the earliest due first), and where it
    /// goes.
    pub fn poll_output(&mut self) -> Option<(To, Output)> {
        loop {
            let (_, k) = (0..self.paths.len()).filter_map(|k| Some((self.paths[k].next_output_at()?, k))).min()?;
            let o = self.paths[k].poll_output().expect("an output");
            let to = match (o.to, self.cell) {
                (End::Server, _) => To::Server,
                (End::Mobile, Cell::Separate) => To::Mobile(k),
                (End::Mobile, Cell::Shared) if self.mobiles == 1 => To::Mobile(0),
                (End::Mobile, Cell::Shared) => {
                    let emitted;
                    let bytes: &[u8] = match &o.packet.bytes {
                        Some(b) => b,
                        None => {
                            emitted = o.packet.emit();
                            &emitted
                        }
                    };
                    match mobile_of(bytes, true) {
                        Some(m) if m < self.mobiles => To::Mobile(m),
                        _ if to_group(bytes) => To::Mobiles,
                        _ => {
                            self.unroutable += 1;
                            continue;
                        }
                    }
                }
            };
            return Some((to, o));
        }
    }

    /// Each path's decisions since the last call.
    pub fn take_decisions(&mut self) -> Vec<Vec<Decision>> {
        self.paths.iter_mut().map(|p| p.take_decisions()).collect()
    }

    /// Per path, each flow's mobile (by flow number; None: neither address is a
    /// mobile's).
    pub fn flow_mobiles(&self) -> Vec<Vec<Option<usize>>> {
        use thinwire::wire::IpAddress;
        let of = |a: &IpAddress| match a {
            IpAddress::V4(b) => crate::netns::mobile_of_addr(b),
            IpAddress::V6(b) => crate::netns::mobile_of_addr(b),
        };
        self.paths.iter().map(|p| p.flow_addresses().iter().map(|(a, b)| of(a).or_else(|| of(b))).collect()).collect()
    }
}
