"""`thinwire fit-channel`: a two-state channel fitted to a frame-error trace."""

from __future__ import annotations

import json
import sys

from .common import die


def add(sub) -> None:
    fc = sub.add_parser("fit-channel", help="fit a two-state (Gilbert–Elliott) channel to a frame-error trace")
    fc.add_argument("file", help="frame-error trace (thinwire channel-trace, or your own measurement)")
    fc.add_argument("--direction", choices=("down", "up"), default="down", help="which table of the file")
    fc.add_argument("--slot", help="for a trace by time: the frame time that cuts it into frames (e.g. 20ms)")
    fc.add_argument("--plot", metavar="PNG", help="burst- and gap-length distributions of trace and fit")
    fc.add_argument("--json", action="store_true", help="print the fit as JSON")
    fc.set_defaults(fn=cmd)


def cmd(a) -> int:
    from ..channel_trace import TraceError, fit, plot, read, two_state_toml

    slot = None
    if a.slot:
        from ..channel_trace import _duration_s

        try:
            slot = _duration_s(a.slot)
        except TraceError as e:
            die(f"--slot: {e}")
        if slot <= 0:
            die("--slot: must be a positive duration")
    try:
        fates, meta = read(a.file, a.direction, slot)
        res = fit(fates, meta)
    except TraceError as e:
        die(str(e))
    if a.plot:
        plot(res, a.plot, title=f"{a.file} [{a.direction}]")
    if a.json:
        out = {k: v for k, v in res.items() if k not in ("trace", "model")}
        for k in ("trace", "model"):
            out[k] = {x: res[k][x] for x in ("mean_burst", "mean_gap", "loss_ratio")}
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    f = res["fit"]
    print(f"{a.file} [{a.direction}]: {res['frames']:,} frames, {res['loss_ratio']:.4%} lost")
    print(
        f"Gilbert–Elliott fit (maximum likelihood, {f['iterations']} iterations, log-likelihood {f['loglik']:.1f}):\n"
        f"  p (good→bad) = {f['p']:.4g}, r (bad→good) = {f['r']:.4g}, "
        f"loss | good = {f['eg']:.4g}, loss | bad = {f['eb']:.4g}"
    )
    print(f"{'':14}{'trace':>10}{'fit':>10}")
    for k, label in (("loss_ratio", "loss ratio"), ("mean_burst", "mean burst"), ("mean_gap", "mean gap")):
        print(f"{label:<14}{res['trace'][k]:>10.4g}{res['model'][k]:>10.4g}")
    snippet = two_state_toml(res, a.direction)
    if snippet:
        print("\nAs thinwire's two-state channel (same means; exponential sojourns):\n" + snippet, end="")
    else:
        print("\n(no frame_time/frame_bits in the trace: give them to get a two-state channel)")
    if a.plot:
        print(f"\nburst and gap lengths, trace against fit: {a.plot}")
    return 0
