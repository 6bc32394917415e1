//! Adaptive Selective Repeat (`asr`, seed 002 §V): Selective Repeat (`sr.rs`)
//! whose retransmission timeout follows the measured round trip, rtxto =
//! α·srtt + β·srttvar (the policy "α+β"); the machine is `sr.rs`'s with its
//! adaptive timer on, and this file is the protocol as a scenario names it.
//!
//! Defaults (seed 002 §IV/§V): window 127, ack_delay 500 ms, policy "3+2"
//! (`sr::DEFAULT_POLICY`), initial srtt 1.1 s, renack unset (multireject by
//! detection).
use super::frame::Frame;
use super::sr::{Sr, SrConfig, DEFAULT_POLICY};
use super::{check_window, Arq, ArqMachine, LinkInit, LinkSection, LinkStats};
use crate::schema::{positive_duration, Configured, FieldError};
use crate::time::Instant;
use crate::units::Dur;
use crate::wire::Packet;

/// `protocol = "asr"`: SR's window and ACK delay, the policy "α+β" (default 3+2),
/// the initial srtt (1.1 s) and renack (unset: multireject by detection).
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AsrCfg {
    pub window: Option<u32>,
    pub ack_delay: Option<Dur>,
    pub policy: Option<Policy>,
    pub initial_srtt: Option<Dur>,
    pub renack: Option<Dur>,
}

/// An ASR timeout policy "α+β": rtxto = α·srtt + β·srttvar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy(pub u32, pub u32);
impl<'de> serde::Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        parse_policy(&s).map(|(a, b)| Policy(a, b)).ok_or_else(|| {
            <D::Error as serde::de::Error>::custom(format!("{s:?} is not an ASR policy \"α+β\" such as \"3+2\""))
        })
    }
}

/// Parses an ASR policy "α+β".
pub fn parse_policy(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('+')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

impl AsrCfg {
    /// The model's configuration: SR's defaults, the adaptive timer on, and
    /// what the section sets.
    pub fn config(&self, max_payload: u32) -> SrConfig {
        let d = SrConfig::default();
        SrConfig {
            window: self.window.unwrap_or(d.window),
            ack_delay: self.ack_delay.map(|x| x.0).unwrap_or(d.ack_delay),
            adaptive: Some(self.policy.map(|p| (p.0, p.1)).unwrap_or(DEFAULT_POLICY)),
            initial_srtt: self.initial_srtt.map(|x| x.0).unwrap_or(d.initial_srtt),
            renack: self.renack.map(|x| x.0).or(d.renack),
            max_payload,
            ..d
        }
    }
}

impl LinkSection for AsrCfg {
    fn build(&self, i: &LinkInit) -> Arq {
        Asr(Sr::new(self.config(i.max_payload))).into()
    }
    fn check(&self) -> Result<(), FieldError> {
        check_window(self.window)?;
        positive_duration("initial_srtt", self.initial_srtt)?;
        positive_duration("renack", self.renack)
    }
}

/// An SR machine with its adaptive timeout (`SrConfig::adaptive`); everything
/// else is SR's (reach it through `Deref`).
pub struct Asr(pub Sr);

impl Configured for Asr {
    type Section = AsrCfg;
}

impl std::ops::Deref for Asr {
    type Target = Sr;
    fn deref(&self) -> &Sr {
        &self.0
    }
}

impl ArqMachine for Asr {
    #[inline]
    fn send(&mut self, now: Instant, p: Packet) {
        self.0.send(now, p)
    }
    #[inline]
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        self.0.poll_transmit(now)
    }
    #[inline]
    fn on_frame(&mut self, now: Instant, f: Frame) {
        self.0.on_frame(now, f)
    }
    #[inline]
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.0.poll_deliver()
    }
    #[inline]
    fn wants_packet(&self) -> bool {
        self.0.wants_packet()
    }
    #[inline]
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        self.0.handle_timeout(now)
    }
    fn counters(&self, sent: &mut LinkStats, received: &mut LinkStats) {
        self.0.counters(sent, received)
    }
}
