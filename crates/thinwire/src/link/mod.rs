//! Link-layer protocols for the wireless link, one module each, all sans-IO:
//! `raw` (no ARQ), `sr` and `asr` (Selective Repeat with fixed or adaptive timeout;
//! ASR is SR's machine with its adaptive timer, `asr.rs`),
//! `rlc` (UMTS RLC Acknowledged Mode), `is707` (IS-707 RLP with NAK rounds and idle frames),
//! `rlp-gsm` (GSM RLP byte stream, `rlp_gsm`, under PPP/VJ and L2R, `gsm_csd`), `gprs`
//! (a GPRS link: TBF set-up delays, outages, uplink bunching). Beside them: `capacity`
//! (a radio's capacity from a Mahimahi delivery trace), `frame`, and `wireless` (the
//! link as one machine).
pub mod asr;
pub mod capacity;
pub mod frame;
pub mod gprs;
pub mod gsm_csd;
pub mod is707;
pub(crate) mod path;
pub mod raw;
pub mod rlc_am;
pub mod rlp_gsm;
pub mod sr;
pub mod wireless;

use crate::schema::FieldError;
use crate::time::Instant;
use crate::wire::Packet;
pub use frame::{Body, Frame, FrameKind};
pub use wireless::LinkStats;

crate::registry! {
    /// A link-layer protocol at one end of the wireless link: the sender for its
    /// direction and the receiver for the other, so that ACKs can ride on reverse
    /// data frames. [`Arq`] holds any of them; each is built from its own
    /// scenario section ([`LinkCfg`], `[wireless.arq] protocol = "NAME"`, declared
    /// in the protocol's file) by [`LinkSection::build`].
    trait ArqMachine sections LinkCfg: LinkSection for Arq, ArqKind {
        "raw" => Raw(raw::Raw),
        "sr" => Sr(sr::Sr) [boxed],
        "asr" => Asr(asr::Asr) [boxed],
        "rlc" => Rlc(rlc_am::Rlc) [boxed],
        "is707" => Is707(is707::Is707) [boxed],
        "rlp-gsm" => Gsm(gsm_csd::GsmCsd) [boxed],
        "gprs" => Gprs(gprs::Gprs) [boxed],
    }
    /// Takes an IP packet to carry (only when [`wants_packet`](Self::wants_packet)).
    fn send(&mut self, now: Instant, p: Packet);
    /// The next frame to put on the air now, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame>;
    /// A frame of the peer arrived intact.
    fn on_frame(&mut self, now: Instant, f: Frame);
    /// The next IP packet reassembled in order, for the layer above.
    fn poll_deliver(&mut self) -> Option<Packet>;
    ref {
        /// Whether this end takes another IP packet now.
        fn wants_packet(&self) -> bool;
    }
    provided mut {
        /// When this end next needs [`handle_timeout`](Self::handle_timeout).
        fn poll_timeout(&mut self) -> Option<Instant> {
            None
        }
        /// Runs the timers due by `now`.
        fn handle_timeout(&mut self, _now: Instant) {}
        /// What this end puts into a shared frame queue: as `poll_transmit`, but
        /// no idle frame (IS-707's only fill a slot the queue leaves empty).
        fn poll_transmit_queued(&mut self, now: Instant) -> Option<Frame> {
            self.poll_transmit(now)
        }
        /// Counts `_n` more copies of the idle frame `poll_transmit` just gave
        /// as given, at most [`idle_repeats`](Self::idle_repeats): what `_n`
        /// more polls would have done (an idle stretch run in one step).
        fn repeat_idle(&mut self, _n: u32) {}
    }
    provided ref {
        /// Whether `poll_transmit` may give a frame later with no `send`,
        /// `on_frame` or `handle_timeout` in between: GPRS (TBF set-up, outages,
        /// lifetimes), GSM RLP (the L2R rate gate) and RLC look at the clock there.
        /// RLC's prohibit timers are deadlines of `poll_timeout`, but at the very
        /// instant one ends a poll made before the timer's own event already sees
        /// it over (skipping such polls changed 67 of the 17,880 runs of the
        /// `shared-link-arq` study). Raw, SR/ASR and IS-707 change only through
        /// those calls.
        fn transmits_by_clock(&self) -> bool {
            false
        }
        /// Whether this end sends idle frames when it has nothing else (IS-707).
        fn sends_idle_frames(&self) -> bool {
            false
        }
        /// After `poll_transmit` gave an idle frame, and with no poll since: how
        /// many more polls would give that same idle frame, as long as nothing
        /// is sent (IS-707: its remaining idle frames, `u32::MAX` when
        /// unlimited; 0 once a frame received or a timer gave it a NAK or a
        /// retransmission to send). 0 for protocols without idle frames.
        fn idle_repeats(&self) -> u32 {
            0
        }
        /// Whether the protocol is a circuit of one mobile (GSM RLP, IS-707): a
        /// second mobile cannot share it.
        fn is_circuit(&self) -> bool {
            false
        }
        /// Whether frame `_f` of the peer's ARQ session, arriving here at any later
        /// time, would change nothing (so far only an IS-707 idle frame announcing
        /// frames this end has already noticed). The link then skips its arrival
        /// (an event with no effect; long IS-707 runs are mostly idle frames).
        fn ignores(&self, _f: &Frame) -> bool {
            false
        }
        /// The sender's window (RLC: VT(A), VT(S)), for the trace.
        fn window(&self) -> Option<(u32, u32)> {
            None
        }
        /// Adds this end's counters to the link's: `_sent` is the direction it
        /// sends, `_received` the one it receives (retransmission timer expiries,
        /// SDUs given up, GPRS set-ups and outages, GSM RLP resets, …).
        fn counters(&self, _sent: &mut LinkStats, _received: &mut LinkStats) {}
    }
}

/// What a protocol's machine is made from besides its section: the frame
/// payload (`[wireless] frame`), the end (0 the network side, sending the
/// downlink; 1 the mobile), the mobile whose session it serves (0 for the first
/// or only one), and the run's seed and number for random streams.
#[derive(Clone, Copy, Debug)]
pub struct LinkInit {
    pub max_payload: u32,
    pub side: usize,
    pub mobile: usize,
    pub seed: u64,
    pub run: u64,
}

/// A protocol's scenario section (in the protocol's file): the machine it
/// builds, the checks serde cannot make, and what the configuration cannot do.
pub trait LinkSection: std::fmt::Debug {
    /// The machine at one end.
    fn build(&self, i: &LinkInit) -> Arq;
    /// Ranges and combinations of the protocol's keys.
    fn check(&self) -> Result<(), FieldError> {
        Ok(())
    }
    /// A circuit of one mobile (GSM RLP, IS-707): several mobiles cannot share
    /// it (the machine says the same: [`ArqMachine::is_circuit`]).
    fn is_circuit(&self) -> bool {
        false
    }
    /// A setting that runs but may not do what was meant, as a sentence
    /// (`build::warnings`), for frames of `max_payload` bytes.
    fn warning(&self, _max_payload: u32) -> Option<String> {
        None
    }
}

impl Default for LinkCfg {
    /// No ARQ.
    fn default() -> LinkCfg {
        LinkCfg::default_of(ArqKind::Raw)
    }
}

/// A window of frames must hold at least one.
pub(crate) fn check_window(w: Option<u32>) -> Result<(), FieldError> {
    match w {
        Some(0) => Err(FieldError::new("window", "must be at least 1 frame")),
        _ => Ok(()),
    }
}
