//! Where a run's traces and captures go: into memory (the `engine::RunResult`'s
//! trace table and byte buffers, for small runs and tests) or, when the run is given
//! an output folder, streamed into its files while the run goes and never held
//! whole: `trace.parquet` (row groups of [`ROW_GROUP`] rows, in time order),
//! `server.pcap`, `mobile.pcap`, `mm-down.log`, `mm-up.log`.
//!
//! Memory stays bounded whatever the run length: the trace keeps at most a few row
//! groups pending, the pcap taps hand over batches of 4,096 packets, files go out
//! in 1 MiB chunks. Files are written (the trace encoded, the packets' bytes made)
//! by threads of their own, a few batches in flight, so a run on two cores waits
//! little for its outputs; each file is made by one thread in order, so outputs are
//! byte-identical run to run and to the in-memory path's.
//!
//! Order. Every trace row is recorded at its event's time except channel
//! transitions, which the two-state channel reveals when a frame is next sent in
//! that direction, stamped with the transition's own (earlier) time. Pending rows
//! are kept sorted (a late row is inserted after the rows of its time, as a stable
//! sort puts it), and only rows no later than the link's *horizon* (the earliest
//! time a transition not yet revealed can carry, [`WirelessLink::channel_horizon`])
//! are written. If a direction's channel stays unrevealed for longer than
//! [`MAX_PENDING`] rows (no frame sent that way for a long time), rows are written
//! anyway; the transitions that then arrive later than rows already written are
//! written at the end, and the file's metadata says `thinwire.sorted = false` so
//! readers sort it (python/thinwire/traces.py does).
//!
//! Errors. A write error (a full disk) is kept, later writes are dropped, the run
//! stops at its next poll (`engine::POLL_EVERY` events), and
//! `engine::RunResult::output_error` names the file and the error. The emulator
//! (realtime.rs) streams its `trace.parquet` through the same [`ParquetSink`].
//!
//! [`WirelessLink::channel_horizon`]: crate::link::wireless::WirelessLink::channel_horizon
use crate::pcap::PcapStream;
use crate::trace::parquet::{ParquetWriter, ROW_GROUP, SORTED_KEY};
use crate::trace::{Row, Sink, TraceTable};
use crate::wire::Packet;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Pending rows beyond which rows are written even past the horizon.
pub const MAX_PENDING: usize = 16 * ROW_GROUP;
/// Bytes a [`FileOut`] collects before handing them to its writer thread.
const CHUNK: usize = 1 << 20;
/// Chunks (or row groups) in flight to a writer thread before the run waits.
const IN_FLIGHT: usize = 4;

/// A file written by a thread of its own, in 1 MiB chunks (at most `IN_FLIGHT`
/// in flight), so that the run does not wait for the kernel's copies. The first
/// error is kept and later writes are dropped; the run checks
/// [`FileOut::failed`] and stops.
pub struct FileOut {
    path: PathBuf,
    buf: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    worker: Option<JoinHandle<io::Result<()>>>,
    failed: Arc<AtomicBool>,
}

impl FileOut {
    pub fn create(dir: &Path, name: &str) -> io::Result<FileOut> {
        let path = dir.join(name);
        let mut f = File::create(&path).map_err(|e| with_path(&path, e))?;
        let failed = Arc::new(AtomicBool::new(false));
        let (tx, rx) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let flag = failed.clone();
        let worker = std::thread::Builder::new().name(format!("thinwire {name}")).spawn(move || {
            // Not fsynced, as no output of a simulation is (it can be made again); a
            // full disk shows at write time.
            let r = rx.iter().try_for_each(|chunk| f.write_all(&chunk));
            if r.is_err() {
                flag.store(true, Ordering::Relaxed);
            }
            r
        })?;
        Ok(FileOut { path, buf: Vec::with_capacity(CHUNK), tx: Some(tx), worker: Some(worker), failed })
    }
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
    /// The flag [`FileOut::failed`] reads, for a thread that owns the file.
    fn failed_flag(&self) -> Arc<AtomicBool> {
        self.failed.clone()
    }
    fn send(&mut self) {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        if let Some(tx) = &self.tx {
            // A closed channel means the writer stopped on an error it keeps.
            let _ = tx.send(chunk);
        }
    }
    /// Writes what is left; the first error of the file's life, with its path.
    pub fn close(mut self) -> Result<(), String> {
        self.send();
        self.tx = None;
        let r = match self.worker.take().map(|w| w.join()) {
            Some(Ok(r)) => r,
            _ => Err(io::Error::other("its writer thread panicked")),
        };
        r.map_err(|e| with_path(&self.path, e).to_string())
    }
}

fn with_path(p: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", p.display()))
}

impl Write for FileOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= CHUNK {
            self.send();
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A capture or log: in memory or streamed into a file.
pub enum Out {
    Mem(Vec<u8>),
    File(FileOut),
}

impl Out {
    pub fn failed(&self) -> bool {
        matches!(self, Out::File(f) if f.failed())
    }
    /// The bytes (in memory), or `None` once the file is complete; its error if any.
    pub fn finish(self) -> Result<Option<Vec<u8>>, String> {
        match self {
            Out::Mem(v) => Ok(Some(v)),
            Out::File(f) => f.close().map(|()| None),
        }
    }
}

/// What a run's outputs came to when closed: the files completed and the errors.
#[derive(Default)]
pub struct Closed {
    pub files: Vec<&'static str>,
    pub errors: Vec<String>,
}

impl Closed {
    /// Output `name` closed with `r`: its bytes if kept in memory.
    pub fn take(&mut self, name: &'static str, r: Result<Option<Vec<u8>>, String>) -> Option<Vec<u8>> {
        match r {
            Ok(Some(bytes)) => Some(bytes),
            Ok(None) => {
                self.files.push(name);
                None
            }
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Mem(v) => v.write(buf),
            Out::File(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Packets a [`Tap`] hands its thread at a time.
const TAP_BATCH: usize = 4096;

/// A pcap tap: records in memory, or packets handed to a thread of their own that
/// makes their bytes (headers, virtual payload, checksums) and writes the file, so
/// the run does not spend its time on payload bytes.
pub enum Tap {
    Mem(PcapStream<Vec<u8>>),
    File(Box<TapThread>),
}

pub struct TapThread {
    batch: Vec<(i64, Packet)>,
    tx: Option<SyncSender<Vec<(i64, Packet)>>>,
    worker: Option<JoinHandle<Result<(), String>>>,
    failed: Arc<AtomicBool>,
}

impl Tap {
    /// A capture held in memory whose timestamps start at `epoch_ns`.
    pub fn memory(epoch_ns: i64) -> Tap {
        Tap::Mem(PcapStream::with_epoch(Vec::new(), epoch_ns).expect("writes to memory"))
    }

    /// A capture streamed to `dir/name` by a thread, timestamps from `epoch_ns`.
    pub fn file(dir: &Path, name: &str, epoch_ns: i64) -> io::Result<Tap> {
        let file = FileOut::create(dir, name)?;
        let failed = file.failed_flag();
        let (tx, rx) = sync_channel::<Vec<(i64, Packet)>>(IN_FLIGHT);
        let worker = std::thread::Builder::new().name(format!("thinwire {name} packets")).spawn(move || {
            let mut s = PcapStream::with_epoch(file, epoch_ns).map_err(|e| e.to_string())?;
            for batch in rx {
                for (t, p) in batch {
                    // Errors are kept by the FileOut (and its flag).
                    let _ = s.record_with(t, |b| p.emit_into(b));
                }
            }
            s.into_inner().close()
        })?;
        Ok(Tap::File(Box::new(TapThread {
            batch: Vec::with_capacity(TAP_BATCH),
            tx: Some(tx),
            worker: Some(worker),
            failed,
        })))
    }

    /// Records `pkt` as seen at `t_ns`.
    #[inline]
    pub fn record(&mut self, t_ns: i64, pkt: &Packet) {
        match self {
            Tap::Mem(s) => {
                let _ = s.record_with(t_ns, |b| pkt.emit_into(b));
            }
            Tap::File(f) => {
                f.batch.push((t_ns, pkt.clone()));
                if f.batch.len() >= TAP_BATCH {
                    f.send();
                }
            }
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self, Tap::File(f) if f.failed.load(Ordering::Relaxed))
    }

    /// The capture's bytes (in memory), or `None` once the file is complete; the
    /// file's error if any.
    pub fn finish(self) -> Result<Option<Vec<u8>>, String> {
        match self {
            Tap::Mem(s) => Ok(Some(s.into_inner())),
            Tap::File(mut f) => {
                f.send();
                f.tx = None;
                match f.worker.take().map(|w| w.join()) {
                    Some(Ok(r)) => r.map(|()| None),
                    _ => Err("a pcap writer thread panicked".into()),
                }
            }
        }
    }
}

impl TapThread {
    fn send(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(TAP_BATCH));
        if let Some(tx) = &self.tx {
            // A closed channel means the writer stopped; finish() reports why.
            let _ = tx.send(batch);
        }
    }
}

/// Trace rows: a table in memory, or `trace.parquet` streamed.
// The table is pushed to row by row; boxing it would add an indirection per row.
#[allow(clippy::large_enum_variant)]
pub enum TraceOut {
    Table(TraceTable),
    File(Box<ParquetSink>),
}

impl Default for TraceOut {
    fn default() -> Self {
        TraceOut::Table(TraceTable::default())
    }
}

impl Sink for TraceOut {
    #[inline]
    fn push(&mut self, r: Row) {
        match self {
            TraceOut::Table(t) => t.push(r),
            TraceOut::File(f) => f.push(r),
        }
    }
}

/// Trace rows into a Parquet file in time order with bounded memory (see the
/// module's doc for the order and the horizon). Row groups are encoded and written
/// by a thread of their own (`IN_FLIGHT` batches in flight at most).
pub struct ParquetSink {
    tx: Option<SyncSender<Batch>>,
    worker: Option<JoinHandle<Result<(), String>>>,
    failed: Arc<AtomicBool>,
    /// Rows handed to the writer.
    sent: usize,
    /// Rows not yet handed over, sorted by time (stable).
    pending: TraceTable,
    /// Rows no later than this are final (no row revealed later can precede them).
    horizon: i64,
    /// Time of the last row handed over.
    written_to: i64,
    /// Rows that arrived stamped before rows already handed over.
    late: TraceTable,
    had_late: bool,
}

enum Batch {
    /// Rows to write, in row groups of at most [`ROW_GROUP`].
    Rows(Box<TraceTable>),
    /// The end: whether the file is in time order.
    Finish { sorted: bool },
}

impl ParquetSink {
    pub fn create(dir: &Path) -> io::Result<ParquetSink> {
        let file = FileOut::create(dir, "trace.parquet")?;
        let failed = file.failed_flag();
        let (tx, rx) = sync_channel::<Batch>(IN_FLIGHT);
        let worker = std::thread::Builder::new().name("thinwire trace.parquet".into()).spawn(move || {
            let mut w = ParquetWriter::new(file).map_err(|e| e.to_string())?;
            for b in rx {
                match b {
                    Batch::Rows(t) => {
                        // Write errors are kept by the FileOut (and its flag).
                        let _ = w.write_table(&t);
                    }
                    Batch::Finish { sorted } => {
                        let kv = [(SORTED_KEY, if sorted { "true" } else { "false" })];
                        return w.finish(&kv).map_err(|e| e.to_string())?.close();
                    }
                }
            }
            Err("the trace writer was not finished".into())
        })?;
        Ok(ParquetSink {
            tx: Some(tx),
            worker: Some(worker),
            failed,
            sent: 0,
            pending: TraceTable::default(),
            horizon: i64::MAX,
            written_to: i64::MIN,
            late: TraceTable::default(),
            had_late: false,
        })
    }

    /// Rows stamped at or before `t` will not be preceded by rows still to come.
    pub fn set_horizon(&mut self, t: i64) {
        self.horizon = t;
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Rows recorded.
    pub fn rows(&self) -> usize {
        self.sent + self.pending.len() + self.late.len()
    }

    fn hand_over(&mut self, t: TraceTable) {
        self.sent += t.len();
        if let Some(tx) = &self.tx {
            // A closed channel means the writer stopped; close() reports why.
            let _ = tx.send(Batch::Rows(Box::new(t)));
        }
    }

    fn push(&mut self, r: Row) {
        let last = self.pending.time_ns.last().copied().unwrap_or(i64::MIN);
        if r.t >= last {
            self.pending.push(r);
        } else if r.t >= self.written_to {
            let at = self.pending.time_ns.partition_point(|&t| t <= r.t);
            self.pending.insert(at, r);
        } else {
            self.late.push(r);
            self.had_late = true;
            if self.late.len() >= ROW_GROUP {
                let late = std::mem::take(&mut self.late);
                self.hand_over(late);
            }
        }
        if self.pending.len() >= 2 * ROW_GROUP {
            self.write_final();
        }
    }

    /// Hands over the pending rows that are final, whole row groups of them; past
    /// [`MAX_PENDING`] rows, one group whatever the horizon.
    fn write_final(&mut self) {
        let mut ready = self.pending.time_ns.partition_point(|&t| t <= self.horizon);
        if ready < ROW_GROUP && self.pending.len() >= MAX_PENDING {
            ready = ROW_GROUP;
        }
        let whole = ready / ROW_GROUP * ROW_GROUP;
        if whole == 0 {
            return;
        }
        self.written_to = self.pending.time_ns[whole - 1];
        let rest = self.pending.split_off(whole);
        let done = std::mem::replace(&mut self.pending, rest);
        self.hand_over(done);
    }

    /// Writes every row left and the footer; the file's error if any.
    pub fn close(mut self) -> Result<(), String> {
        let pending = std::mem::take(&mut self.pending);
        self.hand_over(pending);
        let late = std::mem::take(&mut self.late);
        self.hand_over(late);
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Batch::Finish { sorted: !self.had_late });
        }
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(r)) => r,
            _ => Err("trace.parquet: its writer thread panicked".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Ev, Layer};

    fn row(t: i64) -> Row {
        Row { t, layer: Layer::Link, ev: Ev::FrameSend, node: 1, dir: 0, flow: 0, seq: t, ack: -1, len: 40, value: 1 }
    }

    /// The key-value metadata of a file this module wrote says `sorted`.
    fn sorted_flag(path: &Path) -> String {
        let b = std::fs::read(path).unwrap();
        assert_eq!(&b[..4], b"PAR1");
        assert_eq!(&b[b.len() - 4..], b"PAR1");
        let k = SORTED_KEY.as_bytes();
        let at = b.windows(k.len()).rposition(|w| w == k).expect("metadata key");
        // Compact-protocol string field: a one-byte header and a one-byte length.
        let v = &b[at + k.len() + 2..];
        if v.starts_with(b"true") {
            "true".into()
        } else {
            String::from_utf8_lossy(&v[..5]).into()
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("thinwire-outputs-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn late_rows_within_the_horizon_are_put_in_place() {
        let d = dir("inplace");
        let mut s = ParquetSink::create(&d).unwrap();
        s.set_horizon(1_000);
        for t in (0..3 * ROW_GROUP as i64).map(|i| i * 10) {
            s.push(row(t));
        }
        // Nothing past the horizon (t = 1,000) has been handed over: a row stamped
        // 1,005 still goes in place.
        assert_eq!(s.sent, 0);
        s.push(row(1_005));
        assert_eq!(s.pending.time_ns[101], 1_005);
        assert!(s.pending.time_ns.is_sorted());
        s.set_horizon(i64::MAX);
        s.push(row(i64::MAX / 4));
        assert!(s.sent >= 2 * ROW_GROUP, "{}", s.sent);
        assert_eq!(s.rows(), 3 * ROW_GROUP + 2);
        s.close().unwrap();
        assert_eq!(sorted_flag(&d.join("trace.parquet")), "true");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_horizon_stuck_for_too_long_bounds_memory_and_marks_the_file_unsorted() {
        let d = dir("stuck");
        let mut s = ParquetSink::create(&d).unwrap();
        s.set_horizon(0);
        for t in 1..=(MAX_PENDING + ROW_GROUP) as i64 {
            s.push(row(t));
            assert!(s.pending.len() <= MAX_PENDING, "pending {}", s.pending.len());
        }
        assert!(s.sent >= ROW_GROUP);
        // A transition revealed now, stamped before rows already handed over.
        s.push(row(5));
        assert_eq!(s.late.len(), 1);
        assert_eq!(s.rows(), MAX_PENDING + ROW_GROUP + 1);
        s.close().unwrap();
        assert_eq!(sorted_flag(&d.join("trace.parquet")), "false");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
