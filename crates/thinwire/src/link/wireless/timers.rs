//! The wireless link's ARQ timers: the wake-ups its machines ask for, at each
//! end and for each further mobile of a shared cell, and their expiry.
use super::*;

impl WirelessLink {
    /// The timer of end `e`'s session of mobile `k` (>= 1) has fired (kept out of
    /// line: the one-mobile link's timer path stays as it was).
    #[inline(never)]
    pub(super) fn mobile_timer(&mut self, now: Instant, e: usize, k: usize) {
        let m = &mut self.mobiles[k - 1];
        let was = m.dirty[e];
        if arq_fire(&mut m.arq[e], &mut m.sched[e], &mut m.dirty[e], now) {
            if !was {
                self.dirty_mobiles[e].push(k - 1);
            }
            self.arq_fired(now, e, k + 1);
        }
    }

    /// End `e`'s session `sess` handled a timer: it may deliver packets, and it
    /// transmits again once they are taken.
    #[inline(always)]
    pub(super) fn arq_fired(&mut self, now: Instant, e: usize, sess: usize) {
        self.radio[e].drained = false;
        self.delivering = Some((e, sess, now));
        self.resume = Some((e, now));
    }

    /// Asks for end `e`'s ARQ timers: its first mobile's, then the others'.
    pub(super) fn sched_arq(&mut self, now: Instant, e: usize, timers: &mut impl Timers<LinkTimer>) {
        if let Some(t) = arq_wakeup(&mut self.arq[e], &mut self.arq_sched[e], &mut self.arq_dirty[e], now) {
            timers.schedule(t, LinkTimer::Arq(e as u8));
        }
        if !self.dirty_mobiles[e].is_empty() {
            self.sched_mobiles(now, e, timers);
        }
    }

    /// Mobile `i`'s machine at end `e` was driven: its timer is to be looked at.
    pub(super) fn mobile_driven(&mut self, i: usize, e: usize) {
        let d = &mut self.mobiles[i].dirty[e];
        if !*d {
            *d = true;
            self.dirty_mobiles[e].push(i);
        }
    }

    /// The timers of the mobiles driven at end `e`, in the mobiles' order.
    #[inline(never)]
    pub(super) fn sched_mobiles(&mut self, now: Instant, e: usize, timers: &mut impl Timers<LinkTimer>) {
        let mut list = std::mem::take(&mut self.dirty_mobiles[e]);
        list.sort_unstable();
        for &i in &list {
            let m = &mut self.mobiles[i];
            if let Some(t) = arq_wakeup(&mut m.arq[e], &mut m.sched[e], &mut m.dirty[e], now) {
                timers.schedule(t, LinkTimer::ArqOf(e as u8, i as u8 + 1));
            }
        }
        list.clear();
        self.dirty_mobiles[e] = list;
    }
}

/// When an ARQ machine driven since its timer was last looked at (`dirty`) wants
/// a wake-up that is not already asked for (`sched`): the time to schedule.
#[inline(always)]
pub(super) fn arq_wakeup(
    arq: &mut Arq,
    sched: &mut Option<Instant>,
    dirty: &mut bool,
    now: Instant,
) -> Option<Instant> {
    if !std::mem::take(dirty) {
        return None;
    }
    let t = arq.poll_timeout()?.max(now);
    if sched.is_none_or(|x| t < x) {
        *sched = Some(t);
        return Some(t);
    }
    None
}

/// An ARQ timer event at `now`: false if an earlier one superseded it; else the
/// machine handles its timeout.
#[inline(always)]
pub(super) fn arq_fire(arq: &mut Arq, sched: &mut Option<Instant>, dirty: &mut bool, now: Instant) -> bool {
    if *sched != Some(now) {
        return false;
    }
    *sched = None;
    arq.handle_timeout(now);
    *dirty = true;
    true
}
