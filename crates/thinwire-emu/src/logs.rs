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
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use thinwire::pcap::{Direction, PcapStream, PcapngWriter};
use thinwire::realtime::{Decision, End};
use thinwire::time::Instant;

pub struct Logs {
    inputs: PcapngWriter<BufWriter<File>>,
    capture: PcapngWriter<BufWriter<File>>,
    mobile: PcapStream<BufWriter<File>>,
    server: PcapStream<BufWriter<File>>,
    schedule: BufWriter<File>,
    err: Option<std::io::Error>,
}

fn file(dir: &Path, name: &str) -> std::io::Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(1 << 16, File::create(dir.join(name))?))
}

impl Logs {
    /// `gateway`: the link's far end is a gateway namespace (its interface in
    /// the capture is named so), not the server.
    pub fn create(dir: &Path, gateway: bool) -> std::io::Result<Logs> {
        std::fs::create_dir_all(dir)?;
        let mut inputs = PcapngWriter::new(file(dir, "inputs.pcapng")?)?;
        inputs.interface("from-mobile")?;
        inputs.interface("from-server")?;
        let mut capture = PcapngWriter::new(file(dir, "capture.pcapng")?)?;
        capture.interface("mobile")?;
        if gateway {
            capture.interface("gateway")?;
            capture.interface("-")?;
        } else {
            capture.interface("server")?;
            capture.interface("gateway")?;
        }
        Ok(Logs {
            inputs,
            capture,
            mobile: PcapStream::new(file(dir, "mobile.pcap")?)?,
            server: PcapStream::new(file(dir, "server.pcap")?)?,
            schedule: file(dir, "schedule.log")?,
            err: None,
        })
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let (Err(e), None) = (r, &self.err) {
            self.err = Some(e);
        }
    }

    /// A packet read from host `from` at `at`.
    pub fn input(&mut self, at: Instant, from: End, bytes: &[u8]) {
        let iface = (from == End::Server) as u32;
        let r = self.inputs.packet(iface, at.nanos(), Direction::Inbound, bytes);
        self.keep(r);
        let r = self.capture.packet(iface, at.nanos(), Direction::Outbound, bytes);
        self.keep(r);
        let r = match from {
            End::Mobile => self.mobile.record(at.nanos(), bytes),
            End::Server => self.server.record(at.nanos(), bytes),
        };
        self.keep(r);
    }

    /// A packet written to host `to`, due at `at`.
    pub fn output(&mut self, at: Instant, to: End, bytes: &[u8]) {
        let iface = (to == End::Server) as u32;
        let r = self.capture.packet(iface, at.nanos(), Direction::Inbound, bytes);
        self.keep(r);
        let r = match to {
            End::Mobile => self.mobile.record(at.nanos(), bytes),
            End::Server => self.server.record(at.nanos(), bytes),
        };
        self.keep(r);
    }

    /// Packets that crossed the gateway: (time, toward the mobile, bytes).
    pub fn gateway(&mut self, taps: Vec<(Instant, bool, Vec<u8>)>) {
        for (at, down, bytes) in taps {
            // As seen on the gateway's wireless side: out toward the mobile.
            let dir = if down { Direction::Outbound } else { Direction::Inbound };
            let r = self.capture.packet(2, at.nanos(), dir, &bytes);
            self.keep(r);
        }
    }

    pub fn decisions(&mut self, ds: Vec<Decision>) {
        for d in ds {
            let r = writeln!(self.schedule, "{d}");
            self.keep(r);
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
        self.schedule.flush()
    }
}
