"""Why a claim of study `shared-link-arq` fails in a link-sharing structure: one or
two sentences per (claim id, structure) citing the paper's text (or its silence)
and the mechanism measured, written from the full study's results (30
replications, 2026-11-24; docs/studies/shared-link-arq.md). `"*"` stands for every
structure. The figures of each run (timeouts or retransmissions per run, ties
within 95 % CIs) are appended by `claims.py`; nothing here decides a
claim, and a failure without an entry says it was not examined.
"""

WHY: dict[tuple[str, str], str] = {}


def _each(ids, mux: str, text: str) -> None:
    for i in ids:
        WHY[(i, mux)] = text


_CASES = [(a, m, c) for a in ("ft", "web") for m in ("uniform", "two-state") for c in ("alone", "contention")]

# §IV: SR's fixed timeout.
_each(
    [f"IV-{a}-{m}-alone" for a, m, c in _CASES if c == "alone"],
    "shared-queue",
    "§IV finds the shortest timeout (0.9 s) best without contention. In the shared interface queue an SR timer "
    "starts when the frame enters the FIFO below the link layer, and even alone a 20-segment TCP window keeps up "
    "to ≈0.6 s of the flow's own frames queued ahead of it, so 0.9 s expires before many frames reach the air and "
    "the spurious retransmissions take airtime (link timeouts fall with the timeout, below). The paper does not "
    "say where its timers start; with `pull` (the timer starts on the air) the claim holds.",
)
_each(
    [f"IV-{a}-{m}-contention" for a, m, c in _CASES if c == "contention"],
    "pull",
    "§IV's reversal (the longest timeout best under contention) needs the timer to run while frames wait behind "
    "media. With `pull` the link layer hands a frame over only when the radio is free, so its timer never covers "
    "time spent behind media frames: it sees the bare link round trip with or without contention, and the shortest "
    "timeout repairs losses fastest (the five timeouts lie within ≈2 %). The paper's simulator (ns-2) has a FIFO "
    "interface queue below the link layer, which `shared-queue` models and where this claim holds.",
)

# §V: ASR policies.
_V_PULL = (
    "With `pull` 1+4 is the worst policy in every case, as the paper finds: its whole-tick timeout equals srtt "
    "once srttvar decays below a tick, and fires even without errors (see the 0 % points). The other four "
    "policies lie within ≈1–2 % of each other, so which of them leads is decided by fractions of a kbit/s."
)
_each([f"V-{a}-{m}-{c}" for a, m, c in _CASES], "pull", _V_PULL)
_each(
    [f"V-{a}-uniform-{c}" for a, m, c in _CASES if m == "uniform"],
    "shared-queue",
    "§V ranks 3+2 best and 1+4 worst with uniform errors. In the shared queue ASR's RTT samples include the time "
    "frames wait below the link layer behind the flow's own and media frames, so srtt is inflated and α·srtt "
    "with α ≥ 3 waits long before repairing a lost retransmission: TCP's RTO fires first (TCP timeouts rise with "
    "α, below). 1+4 wastes airtime on early retransmissions but repairs promptly, so with independent losses it "
    "ranks best or mid-field. The paper does not say where its timers start; with `pull` (samples are link round "
    "trips) 1+4 is the worst policy.",
)
_each(
    [f"V-{a}-two-state-{c}" for a, m, c in _CASES if m == "two-state"],
    "shared-queue",
    "§V ranks 4+0 best and 1+4 worst with two-state errors. 1+4 is the worst here, as the paper finds (its short "
    "timeouts fire again and again in a bad period); but 2+4 or 3+2 lead, not 4+0: in the shared queue ASR's "
    "samples include queueing, and 4·srtt of an inflated srtt waits so long that TCP times out first (TCP "
    "timeouts rise with α, below).",
)

# §VI: RLC's retransmission limit.
_RLC_UNIFORM = (
    "§VI finds 2 retransmissions best with uniform errors (1 at low FLRs) with a 13.6 % gap. With independent "
    "losses a PDU rarely needs a third transmission, so limits 2–5 end within ≈1 % of each other and only 1 discards often enough "
    "to cost TCP timeouts; the paper does not say what else its RLC charged for a retransmission."
)
_SQ_RETX = (
    " In the shared queue a PDU still waiting in the FIFO is reported missing again by the next Status PDU and "
    "sent again (TS 25.322 allows it; see the RLC module doc), so retransmissions exceed losses and SDUs are "
    "discarded whose PDUs did arrive (below)."
)
_each([f"VI-{a}-uniform-{c}" for a, m, c in _CASES if m == "uniform"], "pull", _RLC_UNIFORM)
_each([f"VI-{a}-uniform-{c}" for a, m, c in _CASES if m == "uniform"], "shared-queue", _RLC_UNIFORM + _SQ_RETX)
_each(
    [f"VI-{a}-two-state-alone" for a in ("ft", "web")],
    "shared-queue",
    "§VI finds 1 retransmission best with two-state errors. Without contention the limits lie within a few "
    "percent (below): losses inside a bad period are repaired after it ends whatever the limit. With contention, "
    "where each retransmission waits behind media frames in the shared queue and delays the MRW, 1 is best as in "
    "the paper.",
)
_each(
    [f"VI-{a}-two-state-{c}" for a, m, c in _CASES if m == "two-state"],
    "pull",
    "§VI finds 1 retransmission best with two-state errors. With `pull` a retransmission reaches the air as soon "
    "as the radio is free, so extra retransmissions cost little delay while SDU discards fall steeply with the "
    "limit, and the limits tie within ≈1–2 % (below). The paper's optimum appears with the shared queue and "
    "contention, where each retransmission waits behind media frames.",
)

# §VII: the tuned protocols compared.
_each(
    ["VII-asr-beats-sr-ft-uniform-alone"],
    "shared-queue",
    "In the shared queue ASR 3+2's samples include the flow's own queueing, so its timeout is long and TCP "
    "times out more often than over SR 1.1 s (≈68 against ≈19 TCP timeouts per run in the full study); with "
    "`pull` ASR beats SR, as the paper finds.",
)
_each(
    ["VII-rlc-beats-asr-9.8-ft-uniform-contention"],
    "shared-queue",
    "This held before multireject detected lost retransmissions (ASR 16.0 against RLC 18.8 kbit/s, with a "
    "1.1 s re-NACK timer and the earlier ASR arithmetic); detection NACKs a lost retransmission again within one "
    "round trip, which accounts for most of ASR's rise to ≈19.6 kbit/s (at 5.4 %, 3+2 alone, 3 seeds: ≈34 kbit/s "
    "with the timer against ≈39 with detection). The paper does not say how its receiver detects a lost "
    "retransmission; a slower rule favours RLC, whose bitmaps report every loss at once.",
)
_each(
    ["VII-rlc-beats-asr-9.8-ft-uniform-alone", "VII-rlc-beats-asr-9.8-ft-uniform-contention"],
    "pull",
    "With `pull` ASR's samples are link round trips and its repairs (NACK, then multireject by detection) take "
    "one round trip each, while RLC waits for polls or periodic Status PDUs (every 400 ms) that each take a whole "
    "padded 250-byte PDU; ASR stays well ahead at 9.8 %.",
)
_each(
    ["VII-sr-beats-asr-ft-two-state-alone"],
    "pull",
    "With `pull` ASR 4+0 keeps a timeout just above the link round trip and repairs faster than SR's fixed "
    "1.1 s; the paper's slightly better SR appears in the shared queue, where ASR's samples include queueing.",
)
_each(
    ["VII-sr-below-raw-ft-two-state-contention"],
    "pull",
    "SR's collapse under contention is §IV's mechanism: its timer runs while frames wait behind media. With "
    "`pull` that never happens and SR stays well above the Raw Link; the claim holds in the shared queue.",
)
_each(
    [f"VII-delay-order-{a}-{m}" for a in ("ft", "web") for m in ("uniform", "two-state")],
    "pull",
    "With `pull` the radio alternates between the ARQ and media sessions (round robin), so media frames never "
    "wait behind ARQ retransmissions in a common FIFO; media delay then depends little on the ARQ protocol, and "
    "the paper's ordering — how much each protocol's retransmissions crowd the interface queue — does not "
    "appear. It holds in the shared queue for file transfer.",
)
_each(
    ["VII-delay-order-web-two-state"],
    "shared-queue",
    "Web browsing leaves the link idle between pages, so retransmissions crowd the queue less than in file "
    "transfer (where the ordering holds); RLC and ASR end up close (below).",
)
