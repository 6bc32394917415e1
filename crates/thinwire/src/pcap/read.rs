//! Capture file reader: classic pcap (microsecond and nanosecond magic, either byte
//! order) and pcapng (section header, interface description with `if_tsresol` and
//! `if_tsoffset`, enhanced, simple and obsolete packet blocks; several sections).
//!
//! Sources: the libpcap file format (draft-ietf-opsawg-pcap) and pcapng
//! (draft-ietf-opsawg-pcapng). Files are read as a stream of 1 MiB chunks (never
//! whole); packets are handed to a callback as slices of the chunks (a record that
//! straddles two chunks is joined in a scratch buffer), so reading copies and
//! allocates nothing per packet.
//!
//! A file that is not a capture at all is an error. Damage later in the file (a
//! record cut short, an impossible length) ends the reading with a warning: the
//! packets before it are analysed.

/// One captured packet.
#[derive(Clone, Copy, Debug)]
pub struct Pkt<'a> {
    /// Timestamp in nanoseconds since the Unix epoch (or the capture's own origin).
    pub t_ns: i64,
    /// LINKTYPE_* value of the interface it was captured on.
    pub linktype: u32,
    /// The captured bytes (possibly cut at the snap length).
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub orig_len: u32,
    /// pcapng: the interface (in its section) it was captured on; pcap: 0.
    pub iface: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError(pub String);
impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the reader saw besides the packets.
#[derive(Debug, Default, Clone)]
pub struct ReadReport {
    pub format: &'static str,
    pub packets: u64,
    /// Problems that ended or skipped part of the reading; the rest was analysed.
    pub warnings: Vec<String>,
}

fn u16_at(b: &[u8], o: usize, be: bool) -> u16 {
    let x = [b[o], b[o + 1]];
    if be {
        u16::from_be_bytes(x)
    } else {
        u16::from_le_bytes(x)
    }
}
fn u32_at(b: &[u8], o: usize, be: bool) -> u32 {
    let x = [b[o], b[o + 1], b[o + 2], b[o + 3]];
    if be {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    }
}

/// A source of consecutive chunks of a capture file.
pub trait Chunks {
    /// The next chunk; `None` at the end of the stream.
    fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>>;
    /// Gives a chunk back once read, for reuse.
    fn recycle(&mut self, _chunk: Vec<u8>) {}
}

/// Chunks of 1 MiB read from any reader.
pub struct ReadChunks<R: std::io::Read>(pub R);
impl<R: std::io::Read> Chunks for ReadChunks<R> {
    fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        let mut c = Vec::with_capacity(1 << 20);
        use std::io::Read;
        match (&mut self.0).take(1 << 20).read_to_end(&mut c) {
            Ok(0) => None,
            Ok(_) => Some(Ok(c)),
            Err(e) => Some(Err(e)),
        }
    }
}

/// A window over a chunked byte stream: `get(o, n)` returns the `n` bytes at file
/// offset `o` (at or after the last `release`) if the stream has them — a slice of
/// the chunk when they lie in one (almost always), else a copy joined in `scratch`.
struct Window<C: Chunks> {
    src: C,
    chunks: std::collections::VecDeque<(usize, Vec<u8>)>,
    end: usize,
    scratch: Vec<u8>,
    eof: bool,
    err: Option<String>,
}

impl<C: Chunks> Window<C> {
    fn new(src: C) -> Self {
        Window { src, chunks: Default::default(), end: 0, scratch: Vec::new(), eof: false, err: None }
    }
    /// Drops the chunks that end at or before file offset `o`.
    fn release(&mut self, o: usize) {
        while self.chunks.len() > 1 && self.chunks[0].0 + self.chunks[0].1.len() <= o {
            let (_, c) = self.chunks.pop_front().unwrap();
            self.src.recycle(c);
        }
    }
    fn pull(&mut self, upto: usize) {
        while self.end < upto && !self.eof {
            match self.src.next_chunk() {
                None => self.eof = true,
                Some(Ok(c)) => {
                    let at = self.end;
                    self.end += c.len();
                    self.chunks.push_back((at, c));
                }
                Some(Err(e)) => {
                    self.err = Some(e.to_string());
                    self.eof = true;
                }
            }
        }
    }
    fn get(&mut self, o: usize, n: usize) -> Option<&[u8]> {
        self.pull(o + n);
        if self.end < o + n {
            return None;
        }
        if n == 0 {
            // A zero-length record may end exactly at the stream's (or a chunk's)
            // end, where no chunk holds offset `o`.
            return Some(&[]);
        }
        let i = self.chunks.partition_point(|(at, c)| at + c.len() <= o);
        let (at, c) = &self.chunks[i];
        if o + n <= at + c.len() {
            return Some(&self.chunks[i].1[o - self.chunks[i].0..o - self.chunks[i].0 + n]);
        }
        self.scratch.clear();
        let mut p = o;
        for (at, c) in self.chunks.iter().skip(i) {
            if p >= o + n {
                break;
            }
            let from = p - at;
            let take = (c.len() - from).min(o + n - p);
            self.scratch.extend_from_slice(&c[from..from + take]);
            p += take;
        }
        Some(&self.scratch[..n])
    }
    /// Bytes available from offset `o` to the end of the stream, up to `cap`.
    fn avail(&mut self, o: usize, cap: usize) -> usize {
        self.pull(o + cap);
        self.end.saturating_sub(o).min(cap)
    }
}

/// Reads every packet of a pcap or pcapng file held in `data`, calling `f` for each.
pub fn read_capture(data: &[u8], f: impl FnMut(Pkt<'_>)) -> Result<ReadReport, CaptureError> {
    read_capture_from(data, f)
}

/// Reads every packet of a pcap or pcapng stream, calling `f` for each.
pub fn read_capture_from<R: std::io::Read>(r: R, f: impl FnMut(Pkt<'_>)) -> Result<ReadReport, CaptureError> {
    read_capture_chunks(ReadChunks(r), f)
}

/// Reads every packet of a chunked pcap or pcapng stream, calling `f` for each.
pub fn read_capture_chunks<C: Chunks>(src: C, mut f: impl FnMut(Pkt<'_>)) -> Result<ReadReport, CaptureError> {
    let mut w = Window::new(src);
    let n = w.avail(0, 4);
    let rep = match w.get(0, 4).map(|b| [b[0], b[1], b[2], b[3]]) {
        None => return Err(CaptureError(match w.err.take() { Some(e) => format!("cannot read it ({e})"), None => format!("only {n} bytes: not a pcap or pcapng capture (too short for a file header)") })),
        Some(m) => match u32::from_le_bytes(m) {
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 => read_pcap(&mut w, &mut f),
            0x0a0d_0d0a => read_pcapng(&mut w, &mut f),
            _ => Err(CaptureError(format!(
                "starts with bytes {:02x} {:02x} {:02x} {:02x}: not a pcap (a1 b2 c3 d4 / a1 b2 3c 4d) or pcapng (0a 0d 0d 0a) capture",
                m[0], m[1], m[2], m[3]))),
        },
    };
    let mut rep = rep?;
    if let Some(e) = w.err {
        rep.warnings
            .push(format!("read error after {} packets ({e}); the packets before it were analysed", rep.packets));
    }
    Ok(rep)
}

fn read_pcap<C: Chunks>(w: &mut Window<C>, f: &mut impl FnMut(Pkt<'_>)) -> Result<ReadReport, CaptureError> {
    let Some(h) = w.get(0, 24).map(|h| h.to_vec()) else {
        return Err(CaptureError(format!("pcap file header cut short ({} of 24 bytes)", w.avail(0, 24))));
    };
    let le = u32_at(&h, 0, false);
    let (be, nanos) = match le {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        _ => (true, true),
    };
    // The upper bits of the link-type field may carry an FCS length (pcap draft §4).
    let linktype = u32_at(&h, 20, be) & 0x0fff_ffff;
    let mut rep = ReadReport { format: "pcap", ..Default::default() };
    let mut o = 24usize;
    loop {
        w.release(o);
        let Some(r) = w.get(o, 16) else {
            if w.avail(o, 16) > 0 {
                rep.warnings.push(format!("packet record {} cut short at byte {o} (file ends inside its 16-byte header); the {} packets before it were analysed", rep.packets + 1, rep.packets));
            }
            break;
        };
        let sec = u32_at(r, 0, be) as i64;
        let frac = u32_at(r, 4, be) as i64;
        let incl = u32_at(r, 8, be) as usize;
        let orig = u32_at(r, 12, be);
        if incl > 0x0400_0000 {
            rep.warnings.push(format!("packet record {} at byte {o} claims {incl} captured bytes (corrupt record); the {} packets before it were analysed", rep.packets + 1, rep.packets));
            break;
        }
        let Some(data) = w.get(o + 16, incl) else {
            let have = w.avail(o + 16, incl);
            rep.warnings.push(format!("packet record {} at byte {o} cut short ({have} of {incl} bytes present); the {} packets before it were analysed", rep.packets + 1, rep.packets));
            break;
        };
        let t_ns = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        f(Pkt { t_ns, linktype, data, orig_len: orig.max(incl as u32), iface: 0 });
        rep.packets += 1;
        o += 16 + incl;
    }
    Ok(rep)
}

#[derive(Clone, Copy)]
struct Iface {
    linktype: u32,
    snaplen: u32,
    units: u64,
    offset_s: i64,
}

fn read_pcapng<C: Chunks>(w: &mut Window<C>, f: &mut impl FnMut(Pkt<'_>)) -> Result<ReadReport, CaptureError> {
    let mut rep = ReadReport { format: "pcapng", ..Default::default() };
    let mut ifaces: Vec<Iface> = Vec::new();
    let mut be = false;
    let mut o = 0usize;
    let mut first = true;
    loop {
        w.release(o);
        let Some(h) = w.get(o, 12).map(|h| {
            [u32_at(h, 0, false), u32_at(h, 8, false), u32_at(h, 4, false), u32_at(h, 4, true), u32_at(h, 0, true)]
        }) else {
            if w.avail(o, 12) > 0 {
                rep.warnings.push(format!(
                    "block at byte {o} cut short (file ends inside its header); the {} packets before it were analysed",
                    rep.packets
                ));
            }
            break;
        };
        let [raw_type, bom, len_le, len_be, type_be] = h;
        if raw_type == 0x0a0d_0d0a {
            be = match bom {
                0x1a2b_3c4d => false,
                0x4d3c_2b1a => true,
                _ => {
                    let msg = format!("section header at byte {o} has byte-order magic {bom:08x} (expected 1a2b3c4d)");
                    if first {
                        return Err(CaptureError(format!("not a valid pcapng capture: {msg}")));
                    }
                    rep.warnings.push(format!("{msg}; the {} packets before it were analysed", rep.packets));
                    break;
                }
            };
            ifaces.clear();
        } else if first {
            return Err(CaptureError(
                "not a valid pcapng capture: it does not start with a section header block".into(),
            ));
        }
        first = false;
        let btype = if be { type_be } else { raw_type };
        let blen = (if be { len_be } else { len_le }) as usize;
        if blen < 12 || !blen.is_multiple_of(4) || blen > 0x0400_0000 {
            rep.warnings.push(format!("pcapng block {btype:#x} at byte {o} has an impossible length ({blen} bytes); the {} packets before it were analysed", rep.packets));
            break;
        }
        let Some(block) = w.get(o, blen) else {
            rep.warnings.push(format!("pcapng block {btype:#x} at byte {o} runs past the end of the file ({blen} bytes); the {} packets before it were analysed", rep.packets));
            break;
        };
        let body = &block[8..blen - 4];
        match btype {
            1 => {
                if body.len() < 8 {
                    rep.warnings.push(format!("interface description at byte {o} too short; skipped"));
                } else {
                    let mut ifc = Iface {
                        linktype: u16_at(body, 0, be) as u32,
                        snaplen: u32_at(body, 4, be),
                        units: 1_000_000,
                        offset_s: 0,
                    };
                    let mut p = 8;
                    while p + 4 <= body.len() {
                        let code = u16_at(body, p, be);
                        let len = u16_at(body, p + 2, be) as usize;
                        if code == 0 || p + 4 + len > body.len() {
                            break;
                        }
                        let v = &body[p + 4..p + 4 + len];
                        if code == 9 && len >= 1 {
                            let r = v[0];
                            let e = (r & 0x7f) as u32;
                            ifc.units = if r & 0x80 != 0 {
                                1u64.checked_shl(e).unwrap_or(0)
                            } else {
                                10u64.checked_pow(e).unwrap_or(0)
                            };
                            if ifc.units == 0 {
                                ifc.units = 1_000_000;
                                rep.warnings.push(format!(
                                    "interface {} has an unusable if_tsresol {r:#x}; microseconds assumed",
                                    ifaces.len()
                                ));
                            }
                        } else if code == 14 && len >= 8 {
                            let b: [u8; 8] = v[..8].try_into().unwrap();
                            ifc.offset_s = if be { i64::from_be_bytes(b) } else { i64::from_le_bytes(b) };
                        }
                        p += 4 + ((len + 3) & !3);
                    }
                    ifaces.push(ifc);
                }
            }
            6 | 2 => {
                if body.len() < 20 {
                    rep.warnings.push(format!("packet block at byte {o} too short; skipped"));
                } else {
                    let (ifid, hi, lo, cap, orig) = if btype == 6 {
                        (
                            u32_at(body, 0, be) as usize,
                            u32_at(body, 4, be) as u64,
                            u32_at(body, 8, be) as u64,
                            u32_at(body, 12, be) as usize,
                            u32_at(body, 16, be),
                        )
                    } else {
                        (
                            u16_at(body, 0, be) as usize,
                            u32_at(body, 4, be) as u64,
                            u32_at(body, 8, be) as u64,
                            u32_at(body, 12, be) as usize,
                            u32_at(body, 16, be),
                        )
                    };
                    match ifaces.get(ifid) {
                        None => rep.warnings.push(format!("packet block at byte {o} names interface {ifid}, which was never described; skipped")),
                        Some(ifc) if cap > body.len() - 20 => rep.warnings.push(format!("packet block at byte {o} claims {cap} captured bytes but holds {}; skipped (interface {ifid}, link type {})", body.len() - 20, ifc.linktype)),
                        Some(ifc) => {
                            let ts = (hi << 32) | lo;
                            let t_ns = ticks_to_ns(ts, ifc.units).and_then(|t| ifc.offset_s.checked_mul(1_000_000_000).and_then(|o| t.checked_add(o)));
                            let t_ns = t_ns.unwrap_or_else(|| {
                                if !rep.warnings.iter().any(|w| w.starts_with("timestamps out of range")) {
                                    rep.warnings.push(format!("timestamps out of range (packet block at byte {o}: its time stamp with the interface's if_tsoffset of {} s is not a time before the year 2262); such packets are put at the latest representable time, so times and durations involving them are wrong", ifc.offset_s));
                                }
                                i64::MAX
                            });
                            f(Pkt { t_ns, linktype: ifc.linktype, data: &body[20..20 + cap], orig_len: orig.max(cap as u32), iface: ifid as u32 });
                            rep.packets += 1;
                        }
                    }
                }
            }
            3 => {
                match ifaces.first() {
                    None => rep
                        .warnings
                        .push(format!("simple packet block at byte {o} before any interface description; skipped")),
                    Some(ifc) if body.len() >= 4 => {
                        let orig = u32_at(body, 0, be);
                        let mut cap = (orig as usize).min(body.len() - 4);
                        if ifc.snaplen > 0 {
                            cap = cap.min(ifc.snaplen as usize);
                        }
                        // Simple packet blocks have no timestamp: the caller gives them the previous packet's time.
                        f(Pkt {
                            t_ns: 0,
                            linktype: ifc.linktype,
                            data: &body[4..4 + cap],
                            orig_len: orig.max(cap as u32),
                            iface: 0,
                        });
                        rep.packets += 1;
                    }
                    Some(_) => rep.warnings.push(format!("simple packet block at byte {o} too short; skipped")),
                }
            }
            _ => {}
        }
        o += blen;
    }
    Ok(rep)
}

/// Nanoseconds of `ts` ticks of `units` per second; None beyond i64 (year 2262).
fn ticks_to_ns(ts: u64, units: u64) -> Option<i64> {
    i64::try_from(ts as u128 * 1_000_000_000u128 / units as u128).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap(nanos: bool, be: bool, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let w32 = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
        let mut v = Vec::new();
        w32(&mut v, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        v.extend_from_slice(&if be { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
        w32(&mut v, 0);
        w32(&mut v, 0);
        w32(&mut v, 65535);
        w32(&mut v, 101);
        for &(s, fr, d) in recs {
            w32(&mut v, s);
            w32(&mut v, fr);
            w32(&mut v, d.len() as u32);
            w32(&mut v, d.len() as u32);
            v.extend_from_slice(d);
        }
        v
    }

    #[test]
    fn pcap_both_byte_orders_and_resolutions() {
        for (nanos, be) in [(false, false), (true, false), (false, true), (true, true)] {
            let f = pcap(nanos, be, &[(1, 5, b"abc"), (2, 7, b"de")]);
            let mut got = Vec::new();
            let r = read_capture(&f, |p| got.push((p.t_ns, p.linktype, p.data.to_vec()))).unwrap();
            assert_eq!(r.packets, 2);
            assert!(r.warnings.is_empty());
            let unit = if nanos { 1 } else { 1000 };
            assert_eq!(
                got,
                vec![(1_000_000_000 + 5 * unit, 101, b"abc".to_vec()), (2_000_000_000 + 7 * unit, 101, b"de".to_vec())]
            );
        }
    }

    #[test]
    fn truncated_record_is_a_warning_with_the_valid_part_kept() {
        let mut f = pcap(false, false, &[(1, 0, b"abcd"), (2, 0, b"efgh")]);
        f.truncate(f.len() - 2);
        let mut n = 0;
        let r = read_capture(&f, |_| n += 1).unwrap();
        assert_eq!((n, r.packets), (1, 1));
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("cut short"), "{}", r.warnings[0]);
    }

    #[test]
    fn not_a_capture_is_an_error() {
        assert!(read_capture(b"hello world, not a capture", |_| {}).unwrap_err().0.contains("not a pcap"));
        assert!(read_capture(b"ab", |_| {}).is_err());
        assert!(read_capture(&pcap(false, false, &[])[..20], |_| {}).is_err());
    }

    /// Tiny chunks: records straddle chunk boundaries all the time.
    struct Tiny(Vec<u8>, usize, usize);
    impl Chunks for Tiny {
        fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>> {
            if self.1 >= self.0.len() {
                return None;
            }
            let e = (self.1 + self.2).min(self.0.len());
            let c = self.0[self.1..e].to_vec();
            self.1 = e;
            Some(Ok(c))
        }
    }

    #[test]
    fn records_straddling_chunks_read_the_same() {
        let recs: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; 1 + (i as usize * 7) % 40]).collect();
        let f =
            pcap(true, false, &recs.iter().enumerate().map(|(i, r)| (i as u32, 0, r.as_slice())).collect::<Vec<_>>());
        let mut whole = Vec::new();
        read_capture(&f, |p| whole.push((p.t_ns, p.data.to_vec()))).unwrap();
        assert_eq!(whole.len(), 50);
        for size in [1, 3, 7, 16, 64] {
            let mut got = Vec::new();
            let r = read_capture_chunks(Tiny(f.clone(), 0, size), |p| got.push((p.t_ns, p.data.to_vec()))).unwrap();
            assert_eq!(got, whole, "chunks of {size}");
            assert!(r.warnings.is_empty());
        }
        let mut cut = f.clone();
        cut.truncate(f.len() - 3);
        let r = read_capture_chunks(Tiny(cut, 0, 5), |_| {}).unwrap();
        assert_eq!((r.packets, r.warnings.len()), (49, 1));
    }

    fn block(t: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len().div_ceil(4) * 4;
        let mut v = Vec::new();
        v.extend_from_slice(&t.to_le_bytes());
        v.extend_from_slice(&(len as u32).to_le_bytes());
        v.extend_from_slice(body);
        v.resize(len - 4, 0);
        v.extend_from_slice(&(len as u32).to_le_bytes());
        v
    }

    #[test]
    fn pcapng_with_tsresol_and_two_interfaces() {
        let mut f =
            block(0x0a0d_0d0a, &[0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        f.extend(block(1, &[1, 0, 0, 0, 0, 0, 0, 0])); // Ethernet, microseconds
        f.extend(block(1, &[113, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0])); // SLL, tsresol 10^-9
        let epb = |ifid: u32, ts: u64, d: &[u8]| {
            let mut b = Vec::new();
            b.extend_from_slice(&ifid.to_le_bytes());
            b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
            b.extend_from_slice(&(ts as u32).to_le_bytes());
            b.extend_from_slice(&(d.len() as u32).to_le_bytes());
            b.extend_from_slice(&(d.len() as u32 + 10).to_le_bytes());
            b.extend_from_slice(d);
            block(6, &b)
        };
        f.extend(epb(0, 1_500_000, b"xyz"));
        f.extend(epb(1, 2_000_000_123, b"q"));
        f.extend(epb(7, 1, b"bad"));
        let mut got = Vec::new();
        let r = read_capture(&f, |p| got.push((p.t_ns, p.linktype, p.data.to_vec(), p.orig_len))).unwrap();
        assert_eq!(r.format, "pcapng");
        assert_eq!(got, vec![(1_500_000_000, 1, b"xyz".to_vec(), 13), (2_000_000_123, 113, b"q".to_vec(), 11)]);
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        // A block cut short ends the reading with a warning.
        let cut = &f[..f.len() - 6];
        let r = read_capture(cut, |_| {}).unwrap();
        assert_eq!(r.packets, 2);
        assert!(r.warnings.iter().any(|w| w.contains("past the end")), "{:?}", r.warnings);
    }

    #[test]
    fn a_zero_length_record_at_the_end_of_a_chunk_or_file_is_read() {
        // The 40-byte file: header + one record with incl_len 0 (it used to panic).
        let f = pcap(false, false, &[(1, 0, b"")]);
        assert_eq!(f.len(), 40);
        let mut got = Vec::new();
        let r = read_capture(&f, |p| got.push(p.data.len())).unwrap();
        assert_eq!((r.packets, got), (1, vec![0]));
        // A zero-length record whose header ends exactly at a chunk boundary.
        let f = pcap(false, false, &[(1, 0, b"ab"), (2, 0, b""), (3, 0, b"cde")]);
        for size in [42, 58, 40, 16] {
            let mut got = Vec::new();
            let r = read_capture_chunks(Tiny(f.clone(), 0, size), |p| got.push(p.data.to_vec())).unwrap();
            assert_eq!(got, vec![b"ab".to_vec(), vec![], b"cde".to_vec()], "chunks of {size}");
            assert!(r.warnings.is_empty());
        }
    }

    #[test]
    fn an_if_tsoffset_past_the_year_2262_is_a_warning_not_a_wrap() {
        let mut f =
            block(0x0a0d_0d0a, &[0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        // Raw IP, microseconds, if_tsoffset 2^62 s.
        let mut idb = vec![101, 0, 0, 0, 0, 0, 0, 0, 14, 0, 8, 0];
        idb.extend_from_slice(&(1i64 << 62).to_le_bytes());
        idb.extend_from_slice(&[0, 0, 0, 0]);
        f.extend(block(1, &idb));
        let mut b = vec![0u8; 4];
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&1000u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.push(7);
        f.extend(block(6, &b));
        let mut got = Vec::new();
        let r = read_capture(&f, |p| got.push(p.t_ns)).unwrap();
        assert_eq!(got, vec![i64::MAX], "clamped, not wrapped");
        assert!(r.warnings.iter().any(|w| w.starts_with("timestamps out of range")), "{:?}", r.warnings);
    }

    #[test]
    fn timestamps_beyond_i64_are_a_warning_not_a_wrap() {
        assert_eq!(ticks_to_ns(u64::MAX, 1_000_000_000), None);
        assert_eq!(ticks_to_ns(u64::MAX, 1_000_000), None);
        assert_eq!(ticks_to_ns(5, 1_000), Some(5_000_000));
    }
}
