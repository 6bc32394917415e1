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
