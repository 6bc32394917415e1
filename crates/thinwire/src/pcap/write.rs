//! Classic pcap writer (LINKTYPE_RAW = 101, raw IPv4), nanosecond timestamps
//! (magic 0xa1b23c4d), written into memory so the caller chooses where it goes.
pub struct PcapWriter {
    pub buf: Vec<u8>,
    pub packets: u64,
}

impl Default for PcapWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl PcapWriter {
    pub fn new() -> PcapWriter {
        let mut buf = Vec::with_capacity(1 << 16);
        buf.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&65535u32.to_le_bytes());
        buf.extend_from_slice(&101u32.to_le_bytes());
        PcapWriter { buf, packets: 0 }
    }
    pub fn record(&mut self, t_ns: i64, data: &[u8]) {
        let s = (t_ns / 1_000_000_000) as u32;
        let ns = (t_ns % 1_000_000_000) as u32;
        self.buf.extend_from_slice(&s.to_le_bytes());
        self.buf.extend_from_slice(&ns.to_le_bytes());
        self.buf.extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(data);
        self.packets += 1;
    }
}

/// Classic pcap (raw IP, nanosecond timestamps) streamed into any `Write`.
pub struct PcapStream<W: std::io::Write> {
    out: W,
    pub packets: u64,
    scratch: Vec<u8>,
    /// Added to every timestamp: the wall-clock time of time zero (ns since the
    /// Unix epoch; `trace.pcap_epoch`).
    epoch_ns: i64,
}

impl<W: std::io::Write> PcapStream<W> {
    pub fn new(out: W) -> std::io::Result<Self> {
        Self::with_epoch(out, 0)
    }
    /// A stream whose timestamps start at `epoch_ns` (ns since the Unix epoch).
    pub fn with_epoch(mut out: W, epoch_ns: i64) -> std::io::Result<Self> {
        out.write_all(&PcapWriter::new().buf)?;
        Ok(PcapStream { out, packets: 0, scratch: Vec::new(), epoch_ns })
    }
    pub fn record(&mut self, t_ns: i64, data: &[u8]) -> std::io::Result<()> {
        let t = t_ns.max(0) + self.epoch_ns;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(data.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.packets += 1;
        self.out.write_all(data)
    }
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
    /// Records the packet `emit` writes into the (cleared) buffer it is given.
    pub fn record_with(&mut self, t_ns: i64, emit: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        emit(&mut buf);
        let r = self.record(t_ns, &buf);
        self.scratch = buf;
        r
    }
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// pcapng writer (draft-ietf-opsawg-pcapng): one section, any number of raw-IP
/// interfaces (LINKTYPE_RAW, 101) with names and nanosecond timestamps, enhanced
/// packet blocks with the direction flag. Streams into any `Write` (a buffered
/// file for long runs).
pub struct PcapngWriter<W: std::io::Write> {
    out: W,
    interfaces: u32,
    pub packets: u64,
}

/// Which way a packet crossed the interface (`epb_flags` bits 0–1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Inbound = 1,
    Outbound = 2,
}

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

impl<W: std::io::Write> PcapngWriter<W> {
    /// Writes the section header.
    pub fn new(mut out: W) -> std::io::Result<Self> {
        let mut b = Vec::with_capacity(32);
        b.extend_from_slice(&0x0A0D_0D0Au32.to_le_bytes());
        b.extend_from_slice(&28u32.to_le_bytes());
        b.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        b.extend_from_slice(&28u32.to_le_bytes());
        out.write_all(&b)?;
        Ok(PcapngWriter { out, interfaces: 0, packets: 0 })
    }

    /// Adds an interface named `name`; returns its id (0, 1, ... in order).
    pub fn interface(&mut self, name: &str) -> std::io::Result<u32> {
        let name = name.as_bytes();
        let opts = 4 + pad4(name.len()) + 4 + 4 + 4; // if_name, if_tsresol, end
        let total = 20 + opts;
        let mut b = Vec::with_capacity(total);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(total as u32).to_le_bytes());
        b.extend_from_slice(&101u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&65535u32.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&(name.len() as u16).to_le_bytes());
        b.extend_from_slice(name);
        b.resize(b.len() + pad4(name.len()) - name.len(), 0);
        b.extend_from_slice(&9u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&[9, 0, 0, 0]); // nanoseconds
        b.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
        b.extend_from_slice(&(total as u32).to_le_bytes());
        self.out.write_all(&b)?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// One packet on interface `iface` at `t_ns` (nanoseconds since the epoch of
    /// the capture's clock).
    pub fn packet(&mut self, iface: u32, t_ns: i64, dir: Direction, data: &[u8]) -> std::io::Result<()> {
        let total = 28 + pad4(data.len()) + 12 + 4;
        let ts = t_ns.max(0) as u64;
        let mut b = Vec::with_capacity(total);
        b.extend_from_slice(&6u32.to_le_bytes());
        b.extend_from_slice(&(total as u32).to_le_bytes());
        b.extend_from_slice(&iface.to_le_bytes());
        b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts as u32).to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        b.resize(28 + pad4(data.len()), 0);
        b.extend_from_slice(&2u16.to_le_bytes()); // epb_flags
        b.extend_from_slice(&4u16.to_le_bytes());
        b.extend_from_slice(&(dir as u32).to_le_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        b.extend_from_slice(&(total as u32).to_le_bytes());
        self.packets += 1;
        self.out.write_all(&b)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// The reader reads back what the writer wrote: interfaces, times, bytes.
    #[test]
    fn pcapng_round_trip() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        let a = w.interface("mobile").unwrap();
        let b = w.interface("server-side").unwrap();
        w.packet(a, 1_500_000_123, Direction::Outbound, &[0x45, 1, 2]).unwrap();
        w.packet(b, 7_000_000_001, Direction::Inbound, &[0x60; 41]).unwrap();
        let bytes = w.into_inner();
        let mut got = vec![];
        crate::pcap::read_capture(&bytes, |p| got.push((p.iface, p.t_ns, p.data.to_vec()))).unwrap();
        assert_eq!(got, vec![(0, 1_500_000_123, vec![0x45, 1, 2]), (1, 7_000_000_001, vec![0x60; 41])]);
    }
}
