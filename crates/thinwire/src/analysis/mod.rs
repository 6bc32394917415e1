//! MultiTracer's capture side: reading pcap/pcapng captures (real or simulated) and
//! computing per-connection TCP statistics in the manner of tcptrace.
//!
//! - `capture`: pcap and pcapng readers;
//! - [`decode`]: link layer, IPv4/IPv6 and TCP header decoding;
//! - [`conn`]: connection tracking, statistics, retransmission and RTT analysis.
//!
//! Analyses of the simulator's own multi-layer traces (utilization, competing
//! retransmissions, link frames) live in the Python layer (`thinwire.analysis`),
//! which reads the trace table the simulator returns.
pub mod conn;
pub mod decode;

pub use crate::pcap::{read_capture, read_capture_chunks, read_capture_from, CaptureError, Chunks, ReadReport};
pub use conn::{Columns, Conn, DirStats, Tracker};

/// Everything found in one capture.
pub struct Analysis {
    pub report: ReadReport,
    pub tracker: Tracker,
    pub tcp_packets: u64,
    pub other_packets: u64,
    pub short_packets: u64,
}

/// Analyses a capture held in memory. `keep_columns` also records per-packet,
/// RTT-sample and event columns for plotting.
pub fn analyze(data: &[u8], keep_columns: bool) -> Result<Analysis, CaptureError> {
    analyze_from(data, keep_columns)
}

/// Analyses a capture read from a stream (a file), holding only a few MB at a time.
pub fn analyze_from<R: std::io::Read>(src: R, keep_columns: bool) -> Result<Analysis, CaptureError> {
    analyze_chunks(crate::pcap::ReadChunks(src), keep_columns)
}

/// Analyses a capture given as consecutive chunks.
pub fn analyze_chunks<C: Chunks>(src: C, keep_columns: bool) -> Result<Analysis, CaptureError> {
    analyze_chunks_on(src, keep_columns, None)
}

/// Like [`analyze_chunks`], analysing the packets of pcapng interface `interface`
/// (None: the first interface that has packets).
pub fn analyze_chunks_on<C: Chunks>(
    src: C,
    keep_columns: bool,
    interface: Option<u32>,
) -> Result<Analysis, CaptureError> {
    let mut tracker = Tracker::new(keep_columns);
    let (mut tcp, mut other, mut short) = (0u64, 0u64, 0u64);
    let mut unknown: Option<u32> = None;
    let mut short_why: Option<&'static str> = None;
    let mut last_t = 0i64;
    let mut backwards = 0u64;
    // A pcapng with several interfaces may hold the same packet seen at several
    // points of a path (the emulator's capture.pcapng does): counting them all
    // would make every packet a retransmission. Only the first interface that
    // has packets is analysed; the others are counted and reported.
    let mut iface: Option<u32> = interface;
    let mut seen_ifaces: std::collections::BTreeSet<u32> = Default::default();
    let mut elsewhere: std::collections::BTreeMap<u32, u64> = Default::default();
    let mut report = read_capture_chunks(src, |p| {
        seen_ifaces.insert(p.iface);
        if *iface.get_or_insert(p.iface) != p.iface {
            *elsewhere.entry(p.iface).or_default() += 1;
            return;
        }
        // Simple packet blocks carry no time: they take the previous packet's.
        // Time never goes backwards here (as in tcptrace): a packet stamped before
        // the one before it (a clock step, an unsorted merge) takes that packet's
        // time, so no RTT, idle time or duration comes out negative; times before
        // the epoch count as 0. Counted and reported.
        let raw = if p.t_ns == 0 { last_t } else { p.t_ns };
        if raw < last_t {
            backwards += 1;
        }
        let t = raw.max(last_t);
        last_t = t;
        match decode::decode(p.linktype, p.data, p.orig_len) {
            decode::Decoded::Tcp(h) => {
                tcp += 1;
                tracker.packet(t, &h);
            }
            decode::Decoded::Other => other += 1,
            decode::Decoded::Short(why) => {
                short += 1;
                short_why.get_or_insert(why);
            }
            decode::Decoded::UnknownLink(l) => {
                other += 1;
                unknown.get_or_insert(l);
            }
        }
    })?;
    if let Some(want) = interface {
        if !seen_ifaces.contains(&want) {
            let have: Vec<String> = seen_ifaces.iter().map(|i| i.to_string()).collect();
            return Err(CaptureError(format!(
                "interface {want} has no packets in this capture (interfaces with packets: {})",
                if have.is_empty() { "none".to_string() } else { have.join(", ") }
            )));
        }
        elsewhere.clear(); // chosen: no warning about the others
    }
    if !elsewhere.is_empty() {
        let n: u64 = elsewhere.values().sum();
        let ids: Vec<String> = elsewhere.keys().map(|i| i.to_string()).collect();
        report.warnings.push(format!(
            "packets on several interfaces: analysed interface {} only (the first with packets); {n} packets of interface(s) {} were not (one path seen at several points would count every packet twice; --interface N chooses another)",
            iface.unwrap_or(0),
            ids.join(", ")
        ));
    }
    if backwards > 0 {
        report.warnings.push(format!(
            "{backwards} packets were stamped earlier than the packet before them (a clock step or an unsorted capture): each was given the previous packet's time, so no RTT or interval is negative; sort the capture (e.g. reordercap) for exact times"
        ));
    }
    if let Some(l) = unknown {
        report.warnings.push(format!("link type {l} is not supported (Ethernet 1, raw IP 101/228/229, loopback 0/108, Linux cooked 113/276 are); its packets were skipped"));
    }
    if short > 0 {
        report.warnings.push(format!(
            "{short} TCP packets were too short to analyse (first: {}); they were skipped",
            short_why.unwrap_or("?")
        ));
    }
    Ok(Analysis { report, tracker, tcp_packets: tcp, other_packets: other, short_packets: short })
}

/// Chunks read ahead by a second thread, so the kernel's copying overlaps the
/// analysis. Used chunks go back to the reader, so their memory is neither zeroed
/// nor faulted in again.
struct ReadAhead {
    rx: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    back: std::sync::mpsc::Sender<Vec<u8>>,
}

impl crate::pcap::Chunks for ReadAhead {
    fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        self.rx.recv().ok()
    }
    fn recycle(&mut self, c: Vec<u8>) {
        let _ = self.back.send(c);
    }
}

/// Analyses a capture file, reading it ahead on a second thread.
pub fn analyze_file(path: &std::path::Path, keep_columns: bool) -> Result<Analysis, CaptureError> {
    let f = std::fs::File::open(path).map_err(|e| CaptureError(format!("cannot read it ({e})")))?;
    analyze_open_file(f, keep_columns)
}

/// Analyses a capture from an open file, reading it ahead on a second thread.
pub fn analyze_open_file(f: std::fs::File, keep_columns: bool) -> Result<Analysis, CaptureError> {
    analyze_open_file_on(f, keep_columns, None)
}

/// Analyses a capture from an open file (or pipe), reading it ahead on a second
/// thread; `interface`: the pcapng interface to analyse (None: the first with
/// packets).
pub fn analyze_open_file_on(
    mut f: std::fs::File,
    keep_columns: bool,
    interface: Option<u32>,
) -> Result<Analysis, CaptureError> {
    use std::io::Read;
    const CHUNK: u64 = 1 << 20;
    let (tx, rx) = std::sync::mpsc::sync_channel(8);
    let (back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || loop {
        let mut c = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK as usize));
        c.clear();
        match (&mut f).take(CHUNK).read_to_end(&mut c) {
            Ok(0) => return,
            Ok(_) => {
                if tx.send(Ok(c)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    });
    let r = analyze_chunks_on(ReadAhead { rx, back }, keep_columns, interface);
    let _ = reader.join();
    r
}
