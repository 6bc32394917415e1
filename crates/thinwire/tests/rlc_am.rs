//! UMTS RLC Acknowledged Mode (seed 002 §VI, Table I) over a scripted wire, and
//! driven by hand where the timing of polls and Status PDUs matters.
use thinwire::link::{
    rlc_am::{Rlc, RlcConfig, RlcStats},
    Arq, ArqMachine, Body, Frame, FrameKind,
};
use thinwire::rng::Rng;
use thinwire::testkit::{ArqPair, DropFn};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, UdpRepr, L4};

fn pkt(ident: u16, size: u32) -> Packet {
    Packet::new(
        [10, 0, 0, 1],
        [10, 0, 1, 2],
        ident,
        L4::Udp(UdpRepr { src_port: 1, dst_port: 2 }),
        size - 28,
        0,
        Instant::ZERO,
    )
}
fn rlc(cfg: RlcConfig) -> Arq {
    Rlc::new(cfg).into()
}
fn rlc_ref(a: &Arq) -> &Rlc {
    a.try_into().expect("an RLC end")
}
fn stats(a: &Arq) -> RlcStats {
    rlc_ref(a).stats.clone()
}
fn uniform() -> RlcConfig {
    RlcConfig::preset("uniform").unwrap()
}
fn drop_from(from: usize, list: &[u64]) -> DropFn {
    let l = list.to_vec();
    Box::new(move |s, i, _| s == from && l.contains(&i))
}
fn ms(x: i64) -> Instant {
    Instant::ZERO + Duration::from_millis(x)
}

fn transfer(cfg: RlcConfig, n: u16, size: u32, drop: DropFn) -> ArqPair {
    let mut p = ArqPair::new(rlc(cfg), rlc(cfg), 64_000, Duration::from_millis(50), drop);
    for i in 0..n {
        p.send(0, pkt(i, size));
    }
    p.run(Duration::from_secs(600));
    p
}
fn idents(p: &ArqPair) -> Vec<u16> {
    p.delivered[1].iter().map(|p| p.ident() as u16).collect()
}

#[test]
fn without_loss_everything_arrives_in_order_with_few_status_pdus() {
    let mut p =
        ArqPair::new(rlc(uniform()), rlc(uniform()), 64_000, Duration::from_millis(50), Box::new(|_, _, _| false));
    for i in 0..100 {
        p.send(0, pkt(i, 250));
    }
    p.run(Duration::from_secs(5));
    assert_eq!(idents(&p), (0..100).collect::<Vec<_>>());
    let (s, r) = (stats(p.side(0)), stats(p.side(1)));
    assert_eq!((s.retransmissions, s.sdu_discards), (0, 0));
    // 100 PDUs of 31.75 ms take 3.2 s; in 5 s the receiver sends a periodic status
    // every 400 ms plus replies to window polls, never one per PDU.
    assert!(r.status_sent >= 5 && r.status_sent <= 20, "status PDUs {}", r.status_sent);
    assert_eq!(rlc_ref(p.side(0)).outstanding(), 0, "the last periodic status releases the window");
}

#[test]
fn pdus_and_status_pdus_are_padded_to_the_pdu_size() {
    let mut s = Rlc::new(uniform());
    s.send(Instant::ZERO, pkt(0, 40));
    let f = s.poll_transmit(Instant::ZERO).unwrap();
    assert_eq!(f.payload, 250, "a 40-byte SDU still occupies a whole PDU");
    let mut r = Rlc::new(uniform());
    let mut f2 = f.clone();
    f2.set_poll(true);
    r.on_frame(ms(10), f2);
    let st = r.poll_transmit(ms(10)).unwrap();
    assert_eq!((st.kind, st.payload), (FrameKind::Status, 250));
    let mut unpadded = Rlc::new(RlcConfig { pad: false, ..uniform() });
    unpadded.send(Instant::ZERO, pkt(0, 40));
    assert_eq!(unpadded.poll_transmit(Instant::ZERO).unwrap().payload, 40);
}

#[test]
fn a_gap_triggers_a_status_pdu_and_a_retransmission() {
    let p = transfer(uniform(), 20, 250, drop_from(0, &[5]));
    assert_eq!(idents(&p), (0..20).collect::<Vec<_>>());
    assert_eq!((stats(p.side(0)).retransmissions, stats(p.side(0)).sdu_discards), (1, 0));
}

#[test]
fn a_lost_tail_pdu_waits_without_a_poll_and_is_repaired_with_one() {
    // Seed 002 §VII: "when the last packet of a transfer is lost, RLC will not detect
    // the loss until a Status PDU is asked for". Table I's uniform column has no poll
    // on the last PDU: the periodic status cannot report what the receiver never saw.
    let p = transfer(uniform(), 10, 250, drop_from(0, &[9]));
    assert_eq!(idents(&p), (0..9).collect::<Vec<_>>());
    assert_eq!(rlc_ref(p.side(0)).outstanding(), 1);
    let p = transfer(RlcConfig { poll_last_tx: true, ..uniform() }, 10, 250, drop_from(0, &[9]));
    assert_eq!(idents(&p), (0..10).collect::<Vec<_>>());
    assert!(stats(p.side(0)).poll_timeouts >= 1, "the poll timer repeats the lost poll");
}

#[test]
fn sdu_discard_after_the_retransmission_limit_moves_the_receiver_window() {
    // Every transmission of the PDU carrying packet 5 is lost (it is frame 5 the
    // first time; its retransmissions are the only retransmitted frames).
    let cfg = RlcConfig { max_retransmissions: 2, ..uniform() };
    let mut p = ArqPair::new(
        rlc(cfg),
        rlc(cfg),
        64_000,
        Duration::from_millis(50),
        Box::new(|s, i, retx| s == 0 && (i == 5 || retx)),
    );
    for i in 0..30 {
        p.send(0, pkt(i, 250));
    }
    p.run(Duration::from_secs(600));
    let want: Vec<u16> = (0..30).filter(|&i| i != 5).collect();
    assert_eq!(idents(&p), want);
    let s = stats(p.side(0));
    assert_eq!((s.retransmissions, s.sdu_discards), (2, 1), "1 + 2 transmissions, then discard");
    assert!(s.mrw_sent >= 1);
    assert_eq!(rlc_ref(p.side(0)).outstanding(), 0, "MRW_ACK releases the window");
}

fn status(st: thinwire::link::frame::Status) -> Frame {
    Frame { body: Body::Status(Box::new(st)), ..Frame::control(FrameKind::Status, 0, None) }
}

#[test]
fn a_lost_mrw_is_repeated_by_the_mrw_timer_and_the_receiver_skips_the_sdu() {
    let cfg = RlcConfig { max_retransmissions: 1, ..uniform() };
    let (mut tx, mut rx) = (Rlc::new(cfg), Rlc::new(cfg));
    for i in 0..5 {
        tx.send(Instant::ZERO, pkt(i, 250));
    }
    let frames: Vec<Frame> = (0..5).map(|i| tx.poll_transmit(ms(i)).unwrap()).collect();
    for f in frames.iter().filter(|f| f.seq != 2) {
        rx.on_frame(ms(60), f.clone());
    }
    let st = rx.poll_transmit(ms(60)).expect("gap → status");
    tx.on_frame(ms(120), st);
    let re = tx.poll_transmit(ms(120)).unwrap();
    assert_eq!((re.seq, re.tx), (2, 2));
    // The retransmission is lost too; the periodic status reports PDU 2 missing again.
    rx.handle_timeout(ms(460));
    let st = rx.poll_transmit(ms(460)).expect("periodic status");
    tx.on_frame(ms(520), st);
    assert_eq!(tx.stats.sdu_discards, 1, "2 transmissions used: the SDU is discarded");
    let mrw = tx.poll_transmit(ms(520)).unwrap();
    assert_eq!(mrw.status().unwrap().mrw, Some(3));
    // That MRW is lost: the MRW timer (500 ms) sends it again.
    assert_eq!(tx.poll_timeout(), Some(ms(1020)));
    tx.handle_timeout(ms(1020));
    let mrw = tx.poll_transmit(ms(1020)).unwrap();
    assert_eq!((mrw.status().unwrap().mrw, tx.stats.mrw_sent), (Some(3), 2));
    rx.on_frame(ms(1080), mrw);
    let got: Vec<u16> = std::iter::from_fn(|| rx.poll_deliver()).map(|p| p.ident() as u16).collect();
    assert_eq!(got, vec![0, 1, 3, 4], "the receiver skips the discarded SDU and delivers what it held");
    let ack = rx.poll_transmit(ms(1080)).unwrap();
    assert_eq!(ack.status().unwrap().mrw_ack, Some(5));
    tx.on_frame(ms(1140), ack);
    assert_eq!(tx.outstanding(), 0, "MRW_ACK releases the window");
    assert!(tx.poll_transmit(ms(1140)).is_none());
}

#[test]
fn window_limits_the_sender_and_window_polls_respect_poll_prohibit() {
    // Feed one SDU at a time, as the simulator does.
    let mut s = Rlc::new(uniform());
    let mut queue: std::collections::VecDeque<Packet> = (0..200).map(|i| pkt(i, 250)).collect();
    let mut frames: Vec<Frame> = vec![];
    for k in 0..200 {
        while s.wants_packet() {
            match queue.pop_front() {
                Some(p) => s.send(ms(k), p),
                None => break,
            }
        }
        match s.poll_transmit(ms(k)) {
            Some(f) => frames.push(f),
            None => break,
        }
    }
    assert_eq!(frames.len(), 128, "window of 128 PDUs");
    let polls: Vec<u32> = frames.iter().filter(|f| f.poll()).map(|f| f.seq).collect();
    // 70 % of 128 = 89.6: the 90th PDU (SN 89) is the first with usage ≥ 70 %; then
    // poll prohibit (100 ms) holds further polls until SN 189 would be due (1 ms apart here).
    assert_eq!(polls, vec![89]);
}

#[test]
fn poll_timer_repeats_an_unanswered_poll_on_the_newest_pdu() {
    let cfg = RlcConfig { poll_last_tx: true, ..uniform() };
    let mut s = Rlc::new(cfg);
    for i in 0..3 {
        s.send(Instant::ZERO, pkt(i, 250));
    }
    for i in 0..3 {
        assert_eq!(s.poll_transmit(ms(i)).unwrap().poll(), i == 2, "only the last PDU in the buffer polls");
    }
    // No status comes back.
    assert_eq!(s.poll_timeout(), Some(ms(102)), "poll prohibit ends first");
    s.handle_timeout(ms(102));
    assert!(s.poll_transmit(ms(102)).is_none(), "no poll is due yet");
    assert_eq!(s.poll_timeout(), Some(ms(202)), "Timer_Poll: 200 ms after the poll");
    s.handle_timeout(ms(202));
    let f = s.poll_transmit(ms(202)).expect("a poll");
    assert!(f.poll() && f.seq == 2 && f.tx == 2, "retransmits the newest PDU with the poll bit: {f:?}");
    assert_eq!(s.stats.poll_timeouts, 1);
}

#[test]
fn status_prohibit_defers_status_pdus() {
    let cfg = RlcConfig::preset("two-state").unwrap();
    let mut tx = Rlc::new(cfg);
    let mut rx = Rlc::new(cfg);
    let mut frames = vec![];
    for i in 0..6 {
        tx.send(Instant::ZERO, pkt(i, 250));
        frames.push(tx.poll_transmit(ms(i as i64)).unwrap());
    }
    // PDUs 1 and 4 are lost.
    rx.on_frame(ms(60), frames[0].clone());
    rx.on_frame(ms(61), frames[2].clone());
    let st = rx.poll_transmit(ms(61)).expect("gap → status");
    let rep = st.status().unwrap().report.clone().unwrap();
    assert_eq!((rep.ack, rep.end, rep.missing), (1, 3, vec![1]));
    rx.on_frame(ms(70), frames[3].clone());
    rx.on_frame(ms(71), frames[5].clone());
    assert!(rx.poll_transmit(ms(71)).is_none(), "status prohibit (90 ms) holds the next report");
    assert_eq!(rx.poll_timeout(), Some(ms(61 + 90)));
    rx.handle_timeout(ms(151));
    let rep = rx.poll_transmit(ms(151)).unwrap().status().unwrap().report.clone().unwrap();
    assert_eq!((rep.ack, rep.end, rep.missing.clone()), (1, 6, vec![1, 4]));
    // The sender retransmits exactly the missing PDUs, oldest first.
    tx.on_frame(ms(200), status(thinwire::link::frame::Status { report: Some(rep), mrw: None, mrw_ack: None }));
    let a = tx.poll_transmit(ms(200)).unwrap();
    let b = tx.poll_transmit(ms(232)).unwrap();
    assert_eq!((a.seq, a.tx, b.seq, b.tx), (1, 2, 4, 2));
    assert!(b.poll() && !a.poll(), "two-state preset polls on the last PDU of the retransmission buffer");
}

#[test]
fn delivers_every_packet_once_in_order_under_random_loss() {
    let mut retx = 0;
    let mut discards = 0;
    for case in 0..120u64 {
        let mut rng = Rng::stream(case, 0, "prop.rlc");
        let base = if rng.bernoulli(0.5) { uniform() } else { RlcConfig::preset("two-state").unwrap() };
        let persistent = case % 2 == 0;
        let cfg = RlcConfig {
            window: 4 + rng.below(125) as u32,
            max_retransmissions: if persistent { 1000 } else { rng.below(5) as u32 },
            poll_last_tx: true,
            poll_last_retx: rng.bernoulli(0.5),
            poll_window: if rng.bernoulli(0.7) { Some(50 + rng.below(50) as u32) } else { None },
            poll_prohibit: if rng.bernoulli(0.5) {
                Some(Duration::from_millis(10 + rng.below(200) as i64))
            } else {
                None
            },
            // At least one side must report periodically (seed 002 §VI, citing [21]).
            status_periodic: Some(Duration::from_millis(100 + rng.below(600) as i64)),
            status_prohibit: if rng.bernoulli(0.5) {
                Some(Duration::from_millis(10 + rng.below(200) as i64))
            } else {
                None
            },
            status_missing: rng.bernoulli(0.8),
            pad: rng.bernoulli(0.8),
            ..base
        };
        let p_loss = [0.0, 0.05, 0.2, 0.4][case as usize % 4];
        let mut lr = Rng::stream(case, 1, "prop.rlc.loss");
        let mut p = ArqPair::new(
            rlc(cfg),
            rlc(cfg),
            64_000,
            Duration::from_millis(50),
            Box::new(move |_, _, _| lr.bernoulli(p_loss)),
        );
        let n = 1 + rng.below(150) as u16;
        for i in 0..n {
            p.send(0, pkt(i, 40 + rng.below(700) as u32));
            if rng.bernoulli(0.3) {
                p.send(1, pkt(i, 40));
            }
        }
        p.run(Duration::from_secs(3_000));
        let got = idents(&p);
        if persistent {
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "case {case}: {cfg:?} p={p_loss}");
        } else {
            assert!(got.windows(2).all(|w| w[0] < w[1]), "case {case}: out of order or duplicated");
            assert!(got.len() as u64 + stats(p.side(0)).sdu_discards * 150 >= n as u64);
        }
        for w in p.delivered[0].windows(2) {
            assert!(w[0].ident() < w[1].ident(), "case {case}: reverse direction out of order or duplicated");
        }
        assert_eq!(
            rlc_ref(p.side(0)).outstanding(),
            0,
            "case {case}: {cfg:?} p={p_loss}: the sender's window must drain: {} / {}",
            rlc_ref(p.side(0)).describe(),
            rlc_ref(p.side(1)).describe()
        );
        retx += stats(p.side(0)).retransmissions;
        discards += stats(p.side(0)).sdu_discards;
    }
    assert!(retx > 1000 && discards > 20, "the loss patterns must exercise recovery and discard: {retx} {discards}");
}

#[test]
fn a_nack_schedules_a_pdu_once_until_it_is_submitted_then_again() {
    // TS 25.322 (and 36.322 §5.2.1 / 38.322 §5.3.2, which spell it out): a PDU
    // already pending retransmission is not scheduled again; one that has been
    // submitted to the lower layer and is reported missing again is. (Under the
    // study's shared interface queue, "submitted" may still mean waiting in the
    // FIFO — docs/studies/shared-link-arq.md.)
    let mut r = Rlc::new(RlcConfig { poll_timer: None, poll_window: None, poll_last_tx: false, ..uniform() });
    for i in 0..3 {
        r.send(Instant::ZERO, pkt(i, 250));
    }
    let sent: Vec<u32> = (0..3).filter_map(|_| r.poll_transmit(ms(0))).map(|f| f.seq).collect();
    assert_eq!(sent, vec![0, 1, 2]);
    let missing_1 = || {
        status(thinwire::link::frame::Status {
            report: Some(thinwire::link::frame::Report { ack: 0, end: 3, missing: vec![1] }),
            ..Default::default()
        })
    };
    r.on_frame(ms(200), missing_1());
    r.on_frame(ms(210), missing_1());
    let f = r.poll_transmit(ms(220)).expect("the retransmission");
    assert_eq!((f.seq, f.tx), (1, 2));
    assert!(r.poll_transmit(ms(221)).is_none(), "the second report found it pending: scheduled once");
    r.on_frame(ms(230), missing_1());
    let f = r.poll_transmit(ms(240)).expect("reported missing after it was submitted: again");
    assert_eq!((f.seq, f.tx), (1, 3));
    assert_eq!(r.stats.retransmissions, 2);
}
