//! The daemon's writes to its TUN device, on a thread of their own.
//!
//! A write to a TUN device runs the receiving host's stack inside the `write()`
//! (`tun_get_user` → `netif_receive_skb` → `tcp_v4_rcv`): 39.5 % of the
//! single-threaded daemon's CPU during 100 bulk connections (bench/RESULTS.md,
//! 2026-11-28), while PEPsal spreads its work over both cores. The event loop
//! appends each packet (or merged super-packet) to a batch and hands the batch
//! over when it has settled — before it waits again — so the writes leave in the
//! order the loop made them, on the other core.
//!
//! Bounds: a batch is handed over once it holds `BATCH_BYTES`, at most
//! `IN_FLIGHT` batches wait for the thread (`sync_channel`), so the daemon holds
//! at most about 16 MiB of written-but-unsent packets; when the thread falls
//! that far behind, the loop waits for it (the same pace as writing itself). The
//! device is non-blocking and a full queue is a counted drop, so the thread never
//! waits on a peer. Emptied batches go back to the loop for reuse (at most
//! `SPARE` of them are kept).
//!
//! A small batch (at most `INLINE_BYTES`) handed over while the thread has
//! nothing left to write is written by the loop itself: the order is the same,
//! and a request/response exchange does not wait for the other thread to wake
//! (+10–25 µs per packet measured otherwise).
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A batch is handed over at this size (or when the loop settles).
const BATCH_BYTES: usize = 256 * 1024;
/// Batches waiting for the thread at most.
const IN_FLIGHT: usize = 64;
/// Emptied batches kept for reuse.
const SPARE: usize = 4;
/// A batch this small is written at once when the thread is idle.
const INLINE_BYTES: usize = 4096;

#[derive(Default)]
struct Shared {
    writes: AtomicU64,
    drops: AtomicU64,
    /// Batches handed over and not yet written.
    pending: AtomicU64,
}

pub(super) struct TunWriter {
    /// Frames `[len: u32][packets: u32][bytes]`, in order.
    batch: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    free: Receiver<Vec<u8>>,
    /// The device, for the small batches written here.
    fd: OwnedFd,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl TunWriter {
    /// A writer thread for (a duplicate of) `tun`.
    pub(super) fn new(tun: &OwnedFd) -> std::io::Result<TunWriter> {
        let fd = tun.try_clone()?;
        let own = tun.try_clone()?;
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (free_tx, free) = mpsc::sync_channel::<Vec<u8>>(SPARE);
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let thread = std::thread::Builder::new().name("tun-writer".into()).spawn(move || {
            for mut b in rx {
                write_batch(&fd, &b, &sh);
                sh.pending.fetch_sub(1, Ordering::Release);
                b.clear();
                if b.capacity() <= 2 * BATCH_BYTES {
                    let _ = free_tx.try_send(b);
                }
            }
        })?;
        Ok(TunWriter {
            batch: Vec::with_capacity(BATCH_BYTES),
            tx: Some(tx),
            free,
            fd: own,
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `data`, which carries `packets` packets (one, or a merged
    /// super-packet), behind everything queued before.
    pub(super) fn write(&mut self, data: &[u8], packets: usize) {
        self.batch.extend_from_slice(&(data.len() as u32).to_ne_bytes());
        self.batch.extend_from_slice(&(packets as u32).to_ne_bytes());
        self.batch.extend_from_slice(data);
        if self.batch.len() >= BATCH_BYTES {
            self.flush();
        }
    }

    /// Hands what is queued to the thread.
    pub(super) fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        if self.batch.len() <= INLINE_BYTES && self.shared.pending.load(Ordering::Acquire) == 0 {
            write_batch(&self.fd, &self.batch, &self.shared);
            self.batch.clear();
            return;
        }
        let next = self.free.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH_BYTES));
        let b = std::mem::replace(&mut self.batch, next);
        if let Some(tx) = &self.tx {
            self.shared.pending.fetch_add(1, Ordering::Release);
            // The thread ends only when this side is dropped.
            let _ = tx.send(b);
        }
    }

    /// Writes made, and packets the device refused (its queue full), so far.
    pub(super) fn writes(&self) -> u64 {
        self.shared.writes.load(Ordering::Relaxed)
    }
    pub(super) fn drops(&self) -> u64 {
        self.shared.drops.load(Ordering::Relaxed)
    }

    /// Writes everything queued and waits until it is written.
    pub(super) fn finish(&mut self) {
        self.flush();
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes a batch's frames in order, counting writes and refused packets.
fn write_batch(fd: &OwnedFd, b: &[u8], sh: &Shared) {
    let (mut writes, mut drops) = (0u64, 0u64);
    let mut at = 0;
    while at + 8 <= b.len() {
        let len = u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize;
        let packets = u32::from_ne_bytes(b[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        crate::sys::write_counted(fd, &b[at + 8..at + 8 + len], packets, &mut drops);
        writes += 1;
        at += 8 + len;
    }
    sh.writes.fetch_add(writes, Ordering::Relaxed);
    sh.drops.fetch_add(drops, Ordering::Relaxed);
}

impl Drop for TunWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    fn pipe() -> (std::fs::File, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors we then own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors from pipe2.
        unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn writes_leave_whole_and_in_order_across_batches_and_inline_writes() {
        let (mut r, w) = pipe();
        let reader = std::thread::spawn(move || {
            let mut all = vec![];
            r.read_to_end(&mut all).unwrap();
            all
        });
        let mut tw = TunWriter::new(&w).unwrap();
        drop(w);
        let mut want = vec![];
        for i in 0..3000u32 {
            // Sizes around a batch's end, so several batches are handed over.
            let p: Vec<u8> = (0..(i % 1500) as usize + 1).map(|k| (k as u32 ^ i) as u8).collect();
            tw.write(&p, 1 + (i as usize % 3));
            want.extend_from_slice(&p);
            // Large batches go to the thread; one packet at a time, those in
            // (1000, 1100) are written here whenever the thread is idle.
            if i % 700 == 0 || (1000..1100).contains(&i) {
                tw.flush();
            }
        }
        tw.finish();
        assert_eq!(tw.writes(), 3000);
        assert_eq!(tw.drops(), 0);
        drop(tw);
        assert_eq!(reader.join().unwrap(), want);
    }
}
