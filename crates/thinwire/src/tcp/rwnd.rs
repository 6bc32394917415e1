//! Linux 6.x's receive window (`rwnd = "linux"`): what a Linux receiver
//! advertises, from its receive buffer, as `net/ipv4/tcp_output.c`
//! (`tcp_select_initial_window`, `__tcp_select_window`, `tcp_select_window`) and
//! `net/ipv4/tcp_input.c` (`tcp_init_buffer_space`, `tcp_measure_rcv_mss`,
//! `tcp_grow_window`, `tcp_rcv_rtt_update`, `tcp_rcv_space_adjust`,
//! `tcp_rcvbuf_grow`) compute it, and `include/net/tcp.h` (`tcp_win_from_space`).
//!
//! - Memory and window: the buffer `sk_rcvbuf` (`tcp.rcv_buf`, Linux
//!   `tcp_rmem[1]` = 131,072 B) counts memory, the window counts payload; the
//!   kernel converts with `scaling_ratio`/256, 128 (50 %) until the first
//!   full-sized segment, then that segment's payload over its `truesize`
//!   (`tcp_measure_rcv_mss`). The truesize here is that of a linear skb as a TUN
//!   or veth device allocates it: `NET_SKB_PAD` (64) + the IP packet, aligned to
//!   64, + `skb_shared_info` (320), in a kmalloc bucket (powers of two, 96, 192),
//!   plus 256 for `struct sk_buff`: 2,304 B for a 1,500-byte packet, ratio 160 for
//!   1,448 B of payload. Measured over the emulator's TUN path (`ss -tinm`:
//!   `r2304` for one queued segment).
//! - The SYN's window: the buffer at 50 %, rounded down to the MSS (the
//!   passive side's without the timestamp option), at most 65,535; window scale
//!   from max(buffer, `tcp_rmem[2]`, `net.core.rmem_max` = 4 MiB) (log2 − 15,
//!   at most 14). Stock: 64,240 with scale 10; `tcp_rmem` 65,535: 32,120, scale 7.
//! - At the handshake's end the window clamp is the buffer's window less one
//!   segment (`tcp_app_win` = 31's "force reservation of one segment");
//!   `rcv_ssthresh` starts at the SYN's window, within the clamp. A ratio change
//!   moves the clamp to the buffer's window (`tcp_set_window_clamp`: when it
//!   grows, `rcv_ssthresh` becomes at least the window last advertised).
//! - Each data segment of 128 B or more (in order, or out of order with SACK)
//!   raises `rcv_ssthresh` by max(2·advmss, 2·len) up to min(clamp, free space),
//!   the free space counting the memory of the segments held (the one just
//!   queued before the application reads it — with those it released from the
//!   out-of-order queue when it filled a hole, `tcp_ofo_queue` in the same
//!   softirq — and the out-of-order queue), and
//!   asks for one quick ACK (`icsk_ack.quick |= 1`).
//! - The window advertised is min(free space, `rcv_ssthresh`), aligned up to the
//!   scale unit (rounded down to the MSS without scaling), zero when the free
//!   space falls under 1/16 of the buffer or one MSS, and never shrinking the
//!   right edge already offered (`tcp_shrink_window` = 0).
//! - Autotuning (`tcp.autotune`, Linux `tcp_moderate_rcvbuf` = 1): the receiver
//!   estimates the RTT (`tcp_rcv_rtt_update`: the minimum, from timestamp echoes
//!   of full-sized segments and from the time a window of data takes), and once
//!   per such RTT, if the application read more than the last measure, grows
//!   the buffer to twice that plus the slow-start term (`tcp_rcvbuf_grow`:
//!   2·new + 4·new·(new − old)/old in window bytes), up to `tcp.rcv_buf_max`
//!   (`tcp_rmem[2]` = 32 MiB), the clamp following. Since 6.16 the kernel
//!   subtracts what is still queued unread (`copied -= inq`, commit ea33537d):
//!   the model's application reads all in-order data at once, so nothing is
//!   queued when it measures and the term is zero here — a real reader that
//!   takes the queue in chunks (curl) measures less after a hole is filled.
//!
//! Not modelled: memory pressure (`tcp_mem`), `tcp_clamp_window`'s growth when
//! a queue overruns the buffer, coalescing of queued segments (each held
//! segment counts its own truesize), `SO_RCVBUF` locks, the low-RTT variant of
//! later kernels (`tcp_rcvbuf_low_rtt`, not in 6.18), and 6.16's growth for
//! reordering ("tcp: adjust rcvbuf in presence of reorders": an out-of-order
//! segment calls `tcp_rcvbuf_grow`, which adds the span from `rcv_nxt` to the
//! last out-of-order byte to twice the last measure; the same span is added at
//! each measure while the out-of-order queue is not empty).
use crate::time::Instant;

/// `TCP_RMEM_TO_WIN_SCALE`: the ratio is in 1/256.
const RATIO_SHIFT: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO` (50 %) until a full-sized segment is measured.
const DEFAULT_RATIO: u64 = 1 << (RATIO_SHIFT - 1);
/// `net.core.rmem_max` of Linux 6.x (4 MiB), which bounds the window scale offered.
pub const CORE_RMEM_MAX: u64 = 4 << 20;
/// `TCP_MSS_DEFAULT`: the receiver's first guess of the peer's MSS.
const MSS_DEFAULT: u64 = 536;

/// The memory a received segment of `payload` bytes (with `hdr` bytes of IP and
/// TCP headers) occupies: a linear skb's `truesize` (see the module comment).
pub fn skb_truesize(payload: u64, hdr: u64) -> u64 {
    let data = (64 + payload + hdr).div_ceil(64) * 64 + 320;
    let bucket = match data {
        0..=96 => 96,
        97..=128 => 128,
        129..=192 => 192,
        _ => data.next_power_of_two(),
    };
    bucket + 256
}

#[derive(Clone, Debug)]
pub struct LinuxRwnd {
    /// `sk_rcvbuf`.
    rcvbuf: u64,
    /// `tcp_rmem[2]`.
    rcvbuf_max: u64,
    autotune: bool,
    /// `scaling_ratio`, in 1/256.
    ratio: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// `icsk_ack.rcv_mss`.
    rcv_mss: u64,
    /// Our MSS for the peer's data, without options after the handshake.
    advmss: u64,
    /// `rcvq_space`: the last measure, from where and when.
    space: u64,
    space_seq: u64,
    space_time: Instant,
    /// `rcv_rtt_est`: the RTT in µs × 8 (0: none yet), the window measure's
    /// end and start.
    rtt_us8: u64,
    rtt_seq: u64,
    rtt_time: Option<Instant>,
    last_tsecr: u32,
}

impl LinuxRwnd {
    pub fn new(rcv_buf: u32, rcv_buf_max: u32, autotune: bool) -> LinuxRwnd {
        LinuxRwnd {
            rcvbuf: rcv_buf as u64,
            rcvbuf_max: (rcv_buf_max as u64).max(rcv_buf as u64),
            autotune,
            ratio: DEFAULT_RATIO,
            window_clamp: 65535 << 14,
            rcv_ssthresh: 0,
            rcv_mss: MSS_DEFAULT,
            advmss: MSS_DEFAULT,
            space: 0,
            space_seq: 0,
            space_time: Instant::ZERO,
            rtt_us8: 0,
            rtt_seq: 0,
            rtt_time: None,
            last_tsecr: 0,
        }
    }

    fn win(&self, space: u64) -> u64 {
        (space * self.ratio) >> RATIO_SHIFT
    }

    /// The window scale to offer (`tcp_select_initial_window`).
    pub(crate) fn wscale(&self) -> u8 {
        let space = self.win(self.rcvbuf).max(self.rcvbuf_max).max(CORE_RMEM_MAX).min(self.window_clamp);
        (space.ilog2().saturating_sub(15)).min(14) as u8
    }

    /// The SYN's (or SYN-ACK's) window, for segments of `mss` bytes
    /// (`tcp_select_initial_window`).
    pub(crate) fn syn_window(&self, mss: u64) -> u64 {
        let mut space = self.win(self.rcvbuf).min(self.window_clamp);
        if space > mss {
            space -= space % mss;
        }
        space.min(65535)
    }

    /// The handshake is over (`tcp_init_buffer_space`): `advmss` is our MSS
    /// without options, `rcv_wnd` the window offered in the SYN (where
    /// `rcv_ssthresh` starts, `tcp_connect_init`), `seq` the next byte the
    /// application will read.
    pub(crate) fn established(&mut self, now: Instant, advmss: u64, wscale: u8, rcv_wnd: u64, seq: u64) {
        self.advmss = advmss;
        self.window_clamp = self.window_clamp.min(65535 << wscale);
        let maxwin = self.win(self.rcvbuf);
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin;
        }
        if self.window_clamp > 2 * advmss && self.window_clamp + advmss > maxwin {
            self.window_clamp = (2 * advmss).max(maxwin.saturating_sub(advmss));
        }
        self.rcv_ssthresh = rcv_wnd.min(self.window_clamp);
        self.space = self.rcv_ssthresh.min(rcv_wnd).min(10 * advmss);
        self.space_seq = seq;
        self.space_time = now;
    }

    fn set_window_clamp(&mut self, val: u64, rcv_wnd: u64) {
        let old = self.window_clamp;
        if val == old {
            return;
        }
        self.window_clamp = val;
        if val < old {
            self.rcv_ssthresh = self.rcv_ssthresh.min(val);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(rcv_wnd.min(val));
        }
    }

    /// A data segment of `len` payload bytes (`hdr` bytes of headers) arrived:
    /// `in_order` (else held out of order, counted only with SACK), `held` the
    /// memory then queued (this segment included when in order), `rcv_wnd` the
    /// window last advertised, `tsecr` its timestamp echo (0: none) and `ts_now`
    /// our timestamp clock (ms), `rcv_nxt` after it. True if the window grew
    /// (the kernel then asks for a quick ACK).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_data(
        &mut self,
        now: Instant,
        len: u64,
        hdr: u64,
        in_order: bool,
        held: u64,
        rcv_wnd: u64,
        tsecr: u32,
        ts_now: u32,
        rcv_nxt: u64,
    ) -> bool {
        let truesize = skb_truesize(len, hdr);
        if in_order {
            // tcp_measure_rcv_mss
            if len >= self.rcv_mss {
                if len != self.rcv_mss {
                    let old = self.ratio;
                    self.ratio = ((len << RATIO_SHIFT) / truesize).max(1);
                    if old != self.ratio {
                        let val = self.win(self.rcvbuf);
                        self.set_window_clamp(val, rcv_wnd);
                        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
                    }
                }
                self.rcv_mss = len.min(self.advmss);
            }
            // tcp_rcv_rtt_measure (by the window), then by timestamps
            match self.rtt_time {
                Some(t) if rcv_nxt >= self.rtt_seq => {
                    self.rtt_update(((now - t).nanos() / 1000).max(1) as u64, true);
                    self.rtt_seq = rcv_nxt + rcv_wnd;
                    self.rtt_time = Some(now);
                }
                Some(_) => {}
                None => {
                    self.rtt_seq = rcv_nxt + rcv_wnd;
                    self.rtt_time = Some(now);
                }
            }
            if tsecr != 0 && tsecr != self.last_tsecr {
                self.last_tsecr = tsecr;
                if len >= self.rcv_mss {
                    let d = ts_now.wrapping_sub(tsecr) as i32;
                    if d >= 0 {
                        self.rtt_update(d.max(1) as u64 * 1000, false);
                    }
                }
            }
        }
        if len < 128 && in_order {
            return false;
        }
        // tcp_grow_window
        let room = self.window_clamp.min(self.win(self.rcvbuf.saturating_sub(held))) as i64 - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        let incr = if self.win(truesize) <= len { 2 * self.advmss } else { self.slow_grow(len, truesize) };
        if incr == 0 {
            return false;
        }
        let incr = incr.max(2 * len);
        self.rcv_ssthresh += incr.min(room as u64);
        true
    }

    /// `__tcp_grow_window`: a segment with a poor payload/truesize ratio
    /// grows the window only while it is small.
    fn slow_grow(&self, len: u64, truesize: u64) -> u64 {
        let mut ts = self.win(truesize) >> 1;
        let mut window = self.win(self.rcvbuf_max) >> 1;
        while self.rcv_ssthresh <= window {
            if ts <= len {
                return 2 * self.rcv_mss;
            }
            ts >>= 1;
            window >>= 1;
        }
        0
    }

    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us << 3;
        if self.rtt_us8 == 0 || m < self.rtt_us8 {
            self.rtt_us8 = m;
        } else if !win_dep {
            self.rtt_us8 = self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us;
        }
    }

    /// The application has read up to `copied` (`tcp_rcv_space_adjust`).
    pub(crate) fn on_read(&mut self, now: Instant, copied: u64) {
        if self.rtt_us8 == 0 {
            return;
        }
        let time_us = ((now - self.space_time).nanos() / 1000).max(0) as u64;
        if time_us < self.rtt_us8 >> 3 {
            return;
        }
        let got = copied.saturating_sub(self.space_seq);
        if got > self.space {
            let old = self.space.max(1);
            self.space = got;
            if self.autotune {
                let mut rcvwin = got << 1;
                rcvwin += ((rcvwin * (got - old)) / old) << 1;
                let rcvbuf = ((rcvwin << RATIO_SHIFT) / self.ratio).min(self.rcvbuf_max);
                if rcvbuf > self.rcvbuf {
                    self.rcvbuf = rcvbuf;
                    self.window_clamp = self.win(rcvbuf);
                }
            }
        }
        self.space_seq = copied;
        self.space_time = now;
    }

    /// The window to advertise (`tcp_select_window`): `held` the memory queued,
    /// `cur_win` what is left of the window last offered, `rcv_wnd` that window,
    /// `wscale` our scale.
    pub(crate) fn select(&self, held: u64, cur_win: u64, rcv_wnd: u64, wscale: u8) -> u64 {
        let unit = 1u64 << wscale;
        let new = self.select_raw(held, rcv_wnd, wscale);
        let new = if new < cur_win { cur_win.div_ceil(unit) * unit } else { new };
        new.min(65535 << wscale)
    }

    fn select_raw(&self, held: u64, rcv_wnd: u64, wscale: u8) -> u64 {
        let allowed = self.win(self.rcvbuf) as i64;
        let mut free = self.win(self.rcvbuf.saturating_sub(held)) as i64;
        let full = (self.window_clamp as i64).min(allowed);
        let mut mss = self.rcv_mss as i64;
        if mss > full {
            mss = full;
            if mss <= 0 {
                return 0;
            }
        }
        if free < full >> 1 {
            free -= free % (1 << wscale);
            if free < allowed >> 4 || free < mss {
                return 0;
            }
        }
        free = free.min(self.rcv_ssthresh as i64);
        if wscale > 0 {
            let unit = 1i64 << wscale;
            return ((free + unit - 1) / unit * unit) as u64;
        }
        let window = rcv_wnd as i64;
        let w = if window <= free - mss || window > free {
            free - free % mss
        } else if mss == full && free > window + (full >> 1) {
            free
        } else {
            window
        };
        w.max(0) as u64
    }

    /// The receive buffer now (`sk_rcvbuf`, after autotuning).
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }
    /// The receiver's RTT estimate (`rcv_rtt_est.rtt_us`: µs × 8, 0 for none).
    pub(crate) fn rtt_us8(&self) -> u64 {
        self.rtt_us8
    }
    /// The receiver's estimate of the peer's MSS (`icsk_ack.rcv_mss`).
    pub(crate) fn rcv_mss(&self) -> u64 {
        self.rcv_mss
    }
    /// The memory of `bytes` of payload held in segments of the peer's size.
    pub fn held(&self, bytes: u64, hdr: u64) -> u64 {
        if bytes == 0 {
            return 0;
        }
        let seg = self.rcv_mss.max(1);
        bytes.div_ceil(seg) * skb_truesize(seg, hdr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truesize_of_a_full_ethernet_frame_is_2304() {
        // 1448 B of payload + 52 B of headers: a 2 KiB buffer + struct sk_buff.
        assert_eq!(skb_truesize(1448, 52), 2304);
        assert_eq!((1448u64 << 8) / skb_truesize(1448, 52), 160);
    }

    #[test]
    fn syn_window_and_scale_as_the_kernel_offers() {
        // Stock (tcp_rmem 4096 131072 33554432): 64,240, scale 10 (measured).
        let r = LinuxRwnd::new(131_072, 32 << 20, true);
        assert_eq!(r.syn_window(1460), 64_240);
        assert_eq!(r.wscale(), 10);
        // The passive side rounds to the MSS less the timestamp option: 65,160.
        let p = LinuxRwnd::new(131_072, 32 << 20, true);
        assert_eq!(p.syn_window(1448), 65_160);
        // tcp_rmem 4096 65535 65535: 32,120, scale 7 (net.core.rmem_max 4 MiB).
        let t = LinuxRwnd::new(65_535, 65_535, true);
        assert_eq!(t.syn_window(1460), 32_120);
        assert_eq!(t.wscale(), 7);
    }

    /// The windows a Linux 6.18 receiver with `tcp_rmem` = 65,535 advertised
    /// over the emulator (captured: 32,128, then 34,944, 37,888 and 39,552 as
    /// 1,448-byte segments arrive; `ss`: rcv_ssthresh 31,319 → 37,792 → 39,519).
    #[test]
    fn window_grows_to_the_buffer_less_the_segment_held() {
        let mut r = LinuxRwnd::new(65_535, 65_535, false);
        let ws = r.wscale();
        let syn = r.syn_window(1460);
        r.established(Instant::ZERO, 1448, ws, syn, 0);
        assert_eq!(r.rcv_ssthresh, 31_319);
        let mut rcv_wnd = r.select(0, syn, syn, ws);
        assert_eq!(rcv_wnd, 32_128);
        // The HTTP reply's header (204 B): no growth, and the right edge kept.
        let t = skb_truesize(204, 52);
        r.on_data(Instant::ZERO, 204, 52, true, t, rcv_wnd, 0, 0, 0);
        rcv_wnd = r.select(t, rcv_wnd - 204, rcv_wnd, ws);
        assert_eq!(rcv_wnd, 32_000);
        let mut got = vec![];
        for _ in 0..5 {
            let t = skb_truesize(1448, 52);
            r.on_data(Instant::ZERO, 1448, 52, true, t, rcv_wnd, 0, 0, 0);
            rcv_wnd = r.select(t, rcv_wnd - 1448, rcv_wnd, ws);
            got.push(rcv_wnd);
        }
        assert_eq!(got, vec![34_944, 37_888, 39_552, 39_552, 39_552]);
        assert_eq!(r.rcv_ssthresh, 39_519);
    }

    /// Autotuning's buffer after a measure, as a Linux 6.18 receiver (stock
    /// sysctls) grew it over the emulator (`ss -tinm`: rcv_space 14,685 →
    /// 28,960 gave rb 272,838; 39,096 → 78,192 gave rb 750,643).
    #[test]
    fn autotuning_grows_the_buffer_as_the_kernel_did() {
        for (old, new, rb) in [(14_685u64, 28_960u64, 272_838u64), (39_096, 78_192, 750_643)] {
            let mut r = LinuxRwnd::new(131_072, 32 << 20, true);
            r.ratio = 160;
            r.rtt_us8 = 8 * 100_000;
            r.space = old;
            r.space_time = Instant::ZERO;
            r.on_read(Instant::ZERO + crate::time::Duration::from_millis(200), new);
            assert_eq!(r.rcvbuf, rb);
            assert_eq!(r.window_clamp, (rb * 160) >> 8);
        }
        // Without autotuning the buffer stays.
        let mut r = LinuxRwnd::new(131_072, 32 << 20, false);
        r.rtt_us8 = 8;
        r.on_read(Instant::ZERO + crate::time::Duration::from_millis(200), 1 << 20);
        assert_eq!(r.rcvbuf, 131_072);
    }
}
