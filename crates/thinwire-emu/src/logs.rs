//! What an emulation writes with `--out DIR`, as it runs (buffered files):
//!
//! - `inputs.pcapng`: every packet read from a host, interface 0 `from-mobile`, 1
//!   `from-server`, stamped with the emulation time it was read (ns from the start):
//!   the input `thinwire simulate-log` replays;
//! - `schedule.log`: every decision of the path (packet in, dropped, out, with its
//!   due time, size and a hash of its bytes), one per line;
//! - `capture.pcapng`: one interface per hop: `mobile` and `server` (each packet
//!   as it left or reached the host) and `gateway` (as it crossed between the
//!   wired and the wireless link), direction flags set, at emulation time;
//! - `mm-down.log`, `mm-up.log`: the wireless link in mm-link's log format
//!   (`thinwire::trace::mahimahi`, written by the path as it runs);
//! - `mobile.pcap`, `server.pcap`: the same per host as classic pcap, as the
//!   simulator writes them (so `thinwire analyze`/`plot` read an emulation
//!   directory as a simulation directory).
//!
//! With several mobiles (`--mobiles N`): `inputs.pcapng` has interfaces
//! `from-mobile-0` … `from-mobile-<N-1>` and `from-server`, `capture.pcapng`
//! `mobile-0` … then the server (or gateway) and the gateway hop; `mobile.pcap`
//! holds every mobile's packets, and `mobile-<k>/` holds mobile k's own
//! `mobile.pcap` and `server.pcap` (its packets at the server), so each reads as a
//! one-mobile run. With separate links each path's `schedule.log` (and its trace
//! and mm-link logs, written by the path) is in `mobile-<k>/` too; with a shared
//! cell the one path's are at the top.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use thinwire::pcap::{Direction, PcapStream, PcapngWriter};
use thinwire::realtime::Decision;
use thinwire::time::Instant;

use crate::fabric::{From, To};
use crate::netns::mobile_of;

/// One mobile's own captures (several mobiles only).
struct PerMobile {
    mobile: PcapStream<BufWriter<File>>,
    server: PcapStream<BufWriter<File>>,
}

pub struct Logs {
    inputs: PcapngWriter<BufWriter<File>>,
    capture: PcapngWriter<BufWriter<File>>,
    mobiles: u32,
    mobile: PcapStream<BufWriter<File>>,
    server: PcapStream<BufWriter<File>>,
    per: Vec<PerMobile>,
    /// One per path.
    schedules: Vec<BufWriter<File>>,
    err: Option<std::io::Error>,
}

fn file(dir: &Path, name: &str) -> std::io::Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(1 << 16, File::create(dir.join(name))?))
}

/// The folder of mobile k's own outputs.
pub fn mobile_dir(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("mobile-{k}"))
}

impl Logs {
    /// `gateway`: the link's far end is a gateway namespace (its interface in
    /// the capture is named so), not the server. `paths`: how many paths (one
    /// per mobile with separate links, else one).
    pub fn create(dir: &Path, gateway: bool, mobiles: usize, paths: usize) -> std::io::Result<Logs> {
        std::fs::create_dir_all(dir)?;
        let many = mobiles > 1;
        let name = |base: &str, k: usize| if many { format!("{base}-{k}") } else { base.to_string() };
        let mut inputs = PcapngWriter::new(file(dir, "inputs.pcapng")?)?;
        for k in 0..mobiles {
            inputs.interface(&name("from-mobile", k))?;
        }
        inputs.interface("from-server")?;
        let mut capture = PcapngWriter::new(file(dir, "capture.pcapng")?)?;
        for k in 0..mobiles {
            capture.interface(&name("mobile", k))?;
        }
        if gateway {
            capture.interface("gateway")?;
            capture.interface("-")?;
        } else {
            capture.interface("server")?;
            capture.interface("gateway")?;
        }
        let mut per = vec![];
        if many {
            for k in 0..mobiles {
                let d = mobile_dir(dir, k);
                std::fs::create_dir_all(&d)?;
                per.push(PerMobile {
                    mobile: PcapStream::new(file(&d, "mobile.pcap")?)?,
                    server: PcapStream::new(file(&d, "server.pcap")?)?,
                });
            }
        }
        let schedules = if paths == 1 {
            vec![file(dir, "schedule.log")?]
        } else {
            (0..paths).map(|k| file(&mobile_dir(dir, k), "schedule.log")).collect::<Result<_, _>>()?
        };
        Ok(Logs {
            inputs,
            capture,
            mobiles: mobiles as u32,
            mobile: PcapStream::new(file(dir, "mobile.pcap")?)?,
            server: PcapStream::new(file(dir, "server.pcap")?)?,
            per,
            schedules,
            err: None,
        })
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let (Err(e), None) = (r, &self.err) {
            self.err = Some(e);
        }
    }

    /// The host's pcaps (all mobiles', and the mobile's own) get a packet.
    fn record(&mut self, at: Instant, mobile: Option<usize>, server_side: bool, bytes: &[u8]) {
        let r = if server_side { self.server.record(at.nanos(), bytes) } else { self.mobile.record(at.nanos(), bytes) };
        self.keep(r);
        if let Some(p) = mobile.and_then(|k| self.per.get_mut(k)) {
            let r = if server_side { p.server.record(at.nanos(), bytes) } else { p.mobile.record(at.nanos(), bytes) };
            self.keep(r);
        }
    }

    /// A packet read from host `from` at `at`.
    pub fn input(&mut self, at: Instant, from: From, bytes: &[u8]) {
        let iface = match from {
            From::Mobile(k) => k as u32,
            From::Server => self.mobiles,
        };
        let r = self.inputs.packet(iface, at.nanos(), Direction::Inbound, bytes);
        self.keep(r);
        let r = self.capture.packet(iface, at.nanos(), Direction::Outbound, bytes);
        self.keep(r);
        match from {
            From::Mobile(k) => self.record(at, Some(k), false, bytes),
            From::Server => self.record(at, mobile_of(bytes, true), true, bytes),
        }
    }

    /// A packet written to host `to`, due at `at`.
    pub fn output(&mut self, at: Instant, to: To, bytes: &[u8]) {
        let (ifaces, mobile) = match to {
            To::Mobile(k) => (k as u32..k as u32 + 1, Some(k)),
            // Written to every mobile: on each one's interface, once in the pcaps.
            To::Mobiles => (0..self.mobiles, None),
            To::Server => (self.mobiles..self.mobiles + 1, mobile_of(bytes, false)),
        };
        for iface in ifaces {
            let r = self.capture.packet(iface, at.nanos(), Direction::Inbound, bytes);
            self.keep(r);
        }
        self.record(at, mobile, to == To::Server, bytes);
    }

    /// Packets that crossed the gateway: (time, toward the mobile, bytes).
    pub fn gateway(&mut self, taps: Vec<(Instant, bool, Vec<u8>)>) {
        for (at, down, bytes) in taps {
            // As seen on the gateway's wireless side: out toward the mobile.
            let dir = if down { Direction::Outbound } else { Direction::Inbound };
            let r = self.capture.packet(self.mobiles + 1, at.nanos(), dir, &bytes);
            self.keep(r);
        }
    }

    /// Each path's decisions, into its schedule log.
    pub fn decisions(&mut self, per_path: Vec<Vec<Decision>>) {
        for (k, ds) in per_path.into_iter().enumerate() {
            for d in ds {
                let r = writeln!(self.schedules[k], "{d}");
                self.keep(r);
            }
        }
    }

    /// Flushes everything; the first write error, if any.
    pub fn finish(mut self) -> std::io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.inputs.flush()?;
        self.capture.flush()?;
        self.mobile.flush()?;
        self.server.flush()?;
        for p in &mut self.per {
            p.mobile.flush()?;
            p.server.flush()?;
        }
        for s in &mut self.schedules {
            s.flush()?;
        }
        Ok(())
    }
}
