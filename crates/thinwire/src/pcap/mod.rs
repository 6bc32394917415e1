//! Capture files, both ways: `write` makes classic pcap files (nanosecond
//! timestamps, raw IP) from packets as they pass a tap; `read` reads pcap and
//! pcapng files as a stream of packets for the analyser (and for anything else that
//! replays captures).
pub mod read;
pub mod write;

pub use read::{
    read_capture, read_capture_chunks, read_capture_from, CaptureError, Chunks, Pkt, ReadChunks, ReadReport,
};
pub use write::{Direction, PcapStream, PcapWriter, PcapngWriter};
