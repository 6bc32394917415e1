//! Trace rows streamed to a file as they happen (`trace.rows`): what the proxy
//! daemon writes while it runs (thinwire-emu proxyd/record.rs), so that a long
//! run's trace costs disk, not memory, and survives a killed daemon; the run
//! directory's `trace.parquet` is made from it when the daemon stops
//! (python/thinwire/proxyd.py `read_rows`).
//!
//! One row is 48 bytes, little-endian: `time_ns` i64, `value` i64, `seq` i64,
//! `ack` i64, `len` i64, `flow` i32, then `layer`, `event`, `node`, `dir` as one
//! byte each (the codes of [`super::LAYERS`], [`super::EVENTS`], ...). Rows are
//! in the order they were recorded, which is time order but for the few a
//! driver stamps with an earlier time; readers sort stably by time.
use super::{Row, Sink};
use std::io::Write;

/// Bytes per row in a `trace.rows` file.
pub const ROW_BYTES: usize = 48;

/// Writes rows to `W` as they come. A failed write is remembered (the rows
/// after it are dropped) and reported by [`RowWriter::finish`], so nothing is
/// lost silently.
pub struct RowWriter<W: Write> {
    w: W,
    failed: Option<std::io::Error>,
    pub rows: u64,
}

impl<W: Write> RowWriter<W> {
    pub fn new(w: W) -> RowWriter<W> {
        RowWriter { w, failed: None, rows: 0 }
    }

    /// Flushes; the first error of any write so far, or of the flush.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.w.flush()
    }

    /// Flushes and gives the writer back.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush()?;
        Ok(self.w)
    }
}

/// One row's bytes.
pub fn encode(r: &Row) -> [u8; ROW_BYTES] {
    let mut b = [0u8; ROW_BYTES];
    b[0..8].copy_from_slice(&r.t.to_le_bytes());
    b[8..16].copy_from_slice(&r.value.to_le_bytes());
    b[16..24].copy_from_slice(&r.seq.to_le_bytes());
    b[24..32].copy_from_slice(&r.ack.to_le_bytes());
    b[32..40].copy_from_slice(&r.len.to_le_bytes());
    b[40..44].copy_from_slice(&r.flow.to_le_bytes());
    b[44] = r.layer as u8;
    b[45] = r.ev as u8;
    b[46] = r.node;
    b[47] = r.dir;
    b
}

impl<W: Write> Sink for RowWriter<W> {
    fn push(&mut self, r: Row) {
        if self.failed.is_some() {
            return;
        }
        match self.w.write_all(&encode(&r)) {
            Ok(()) => self.rows += 1,
            Err(e) => self.failed = Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Ev, Layer};

    #[test]
    fn a_row_is_48_little_endian_bytes_in_the_documented_order() {
        let r = Row {
            t: 1,
            layer: Layer::Queue,
            ev: Ev::Drop,
            node: 3,
            dir: 1,
            flow: -1,
            seq: 2,
            ack: 3,
            len: 4,
            value: 5,
        };
        let mut w = RowWriter::new(Vec::new());
        w.push(r);
        let b = w.finish().unwrap();
        assert_eq!(b.len(), ROW_BYTES);
        assert_eq!(i64::from_le_bytes(b[0..8].try_into().unwrap()), 1);
        assert_eq!(i64::from_le_bytes(b[8..16].try_into().unwrap()), 5);
        assert_eq!(i64::from_le_bytes(b[32..40].try_into().unwrap()), 4);
        assert_eq!(i32::from_le_bytes(b[40..44].try_into().unwrap()), -1);
        assert_eq!((b[44], b[45], b[46], b[47]), (Layer::Queue as u8, Ev::Drop as u8, 3, 1));
    }

    /// A full disk: the error comes back from `finish`, not lost.
    #[test]
    fn a_failed_write_is_reported() {
        #[derive(Debug)]
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("No space left on device"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = RowWriter::new(Full);
        w.push(Row {
            t: 0,
            layer: Layer::Tcp,
            ev: Ev::Send,
            node: 0,
            dir: 0,
            flow: 0,
            seq: 0,
            ack: 0,
            len: 0,
            value: 0,
        });
        assert!(w.finish().unwrap_err().to_string().contains("No space"));
    }
}
