//! What the two replay examples share: the TCP segments of a capture, and one
//! line and exit 2 on bad input.
use thinwire::pcap::read_capture_from;
use thinwire::wire::{Ipv4Repr, TcpRepr};

/// A captured TCP segment: time (s), whether it left the captured host, the
/// header, the payload's length.
pub struct P {
    pub t: f64,
    pub out: bool,
    pub r: TcpRepr,
    pub len: u32,
}

pub fn usage(tool: &str, msg: &str) -> ! {
    eprintln!("{tool}: {msg}");
    std::process::exit(2)
}

/// The TCP segments of `pcap` (Ethernet or raw IP); `out` tells those the
/// captured host sent.
pub fn read(tool: &str, pcap: &str, out: impl Fn(&TcpRepr) -> bool) -> Vec<P> {
    let mut pk = vec![];
    let f = std::fs::File::open(pcap).unwrap_or_else(|e| usage(tool, &format!("{pcap}: {e}")));
    read_capture_from(std::io::BufReader::new(f), |p| {
        let ip = &p.data[if p.linktype == 1 { 14 } else { 0 }..];
        let Ok((ipr, seg)) = Ipv4Repr::parse_mode(ip, false) else { return };
        if ipr.protocol != 6 {
            return;
        }
        let Ok((r, payload)) = TcpRepr::parse_lenient(seg) else { return };
        pk.push(P { t: p.t_ns as f64 * 1e-9, out: out(&r), r, len: payload.len() as u32 });
    })
    .unwrap_or_else(|e| usage(tool, &format!("{pcap}: {e:?}")));
    pk
}
