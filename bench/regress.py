"""Per-run time of two builds side by side, alternating (issue "Speed", part 1).

    .venv/bin/python bench/regress.py                      # this working tree against BASE
    .venv/bin/python bench/regress.py --base 3e21701 --head a4ea6fc --rounds 80
    .venv/bin/python bench/regress.py --scenario scenarios/web-browsing.toml --runs 20
    .venv/bin/python bench/regress.py --base worktree --head worktree --pgo   # bench/pgo.py's gain

Each build is a wheel of one commit (or, for `--head worktree`, of the working tree
as it is now, uncommitted changes included) installed into a venv of its own under
`target/regress/`; the venv finds polars and the other dependencies in this
checkout's `.venv` (one path line), never this checkout's editable `thinwire`. Builds
are cached by commit, so a second comparison against the same base costs nothing.

Every example scenario (`scenarios/*.toml` of this checkout; `--scenario` to choose)
is run through `thinwire.run(path)` — what a script or a sweep pays per run: parsing,
building, simulating, converting the results to Python — in one worker process per
build. A round runs each scenario `--runs` times on one build, then on the other,
the order swapped every round (A B, B A, …), so slow minutes of the machine fall on
both. Printed per scenario: the best round's mean per-run time of each build (the
issue's "best of 3 rounds of 10 runs"), the median round's, and the ratio head/base
of each; the core's own `wall_s` (simulation only, no conversion) the same way, and
its ratio per event; the geometric mean of the ratios over the scenarios. Event
counts are compared: a scenario whose events differ between the builds is marked
`*` with both counts (the builds do not simulate the same thing, so its per-run
ratio is not a like-for-like comparison; the per-event one is closer).

Rounds: 40 by default (about 2 minutes for the eight examples). On this shared
machine a slow spell lasts minutes and falls unevenly on the two builds: with 10
rounds, comparisons of identical code moved between files read 1.046 and 1.078
(best-of, geometric mean), and of a build against itself with one flag changed
1.056, where 40 rounds, repeated, read 0.997–1.001 (bench/RESULTS.md,
2026-11-28, "Ten rounds are not enough"). Believe a difference of a few per
cent only when it survives a second 40-round invocation.

Run it before landing anything that touches the core; record the output in
bench/RESULTS.md. Never a test: timings are not asserted anywhere.
"""

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "target" / "regress"
# The build of 2026-11-23 morning that the issue measured against (d10c636).
DEFAULT_BASE = "d10c636"


def sh(cmd, **kw) -> str:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout.strip()


def resolve(rev: str) -> str:
    if rev == "worktree":
        return rev
    return sh(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT)


def build(rev: str, quiet: bool, pgo: bool = False) -> Path:
    """A venv holding `rev`'s wheel (profile-guided with `pgo`, bench/pgo.py);
    returns its python."""
    # bench/pgo.py builds the wheels and venvs (imported here: a worker runs
    # this file with `-I`, which leaves its folder off the path).
    import pgo as pgo_build

    name = ("worktree" if rev == "worktree" else rev[:12]) + ("-pgo" if pgo else "")
    venv = CACHE / f"venv-{name}"
    py = venv / "bin" / "python"
    if rev != "worktree" and (venv / ".ok").exists():
        return py
    if rev == "worktree":
        src = ROOT
    else:
        src = CACHE / f"src-{name}"
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
        # -m: the files get the time of extraction, not the commit's. Cargo judges a
        # path crate fresh by modification times, and with one target folder for
        # every commit an older commit's sources would otherwise look older than the
        # library built from another commit, which would then be linked unchanged.
        subprocess.run(["tar", "-x", "-m", "-C", src], input=archive, check=True)
    wheels = CACHE / f"wheels-{name}"
    if not quiet:
        print(f"building {name} ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    if pgo:
        wheel = pgo_build.pgo_wheel(src, wheels, quiet)
    else:
        # One cargo target folder for every exported commit: crates.io
        # dependencies are compiled once.
        target = CACHE / "cargo-target" if rev != "worktree" else None
        wheel = pgo_build.wheel(src, wheels, target, "", quiet)
    pgo_build.venv_with(wheel, venv)
    (venv / ".ok").write_text(rev + "\n")
    if not quiet:
        print(f"built {name} in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return py


class Worker:
    """`python regress.py --worker` in a build's venv, answering one batch per line."""

    def __init__(self, py: Path, label: str):
        self.label = label
        self.p = subprocess.Popen(
            [str(py), "-I", str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=CACHE,
        )
        self.where = self.ask({"hello": True})["thinwire"]

    def ask(self, msg: dict) -> dict:
        assert self.p.stdin and self.p.stdout
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(f"regress: the {self.label} worker died")
        return json.loads(line)

    def close(self) -> None:
        if self.p.stdin:
            self.p.stdin.close()
        self.p.wait()


def worker() -> None:
    import thinwire

    for line in sys.stdin:
        msg = json.loads(line)
        if "hello" in msg:
            out = {"thinwire": str(Path(thinwire.__file__).parent)}
        else:
            try:
                thinwire.run(msg["path"])  # warm: page cache, allocator, lazy imports
                per, core = [], []
                for _ in range(msg["runs"]):
                    t = time.perf_counter()
                    r = thinwire.run(msg["path"])
                    per.append(time.perf_counter() - t)
                    core.append(r.summary["wall_s"])
                out = {"per": per, "core": core, "events": r.summary["events"]}
            except Exception as e:  # a scenario this build cannot run
                out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        print(json.dumps(out), flush=True)


def cpu() -> str:
    try:
        for line in sh(["lscpu"]).splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=DEFAULT_BASE, help=f"commit to compare against (default {DEFAULT_BASE})")
    ap.add_argument("--head", default="worktree", help="commit, or 'worktree' for this checkout as it is (default)")
    ap.add_argument("--rounds", type=int, default=40, help="rounds, builds alternated (default 40)")
    ap.add_argument("--runs", type=int, default=10, help="runs per scenario per round and build")
    ap.add_argument("--scenario", action="append", help="scenario file (repeatable; default scenarios/*.toml)")
    ap.add_argument("--pgo", action="store_true", help="build head profile-guided (bench/pgo.py)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker()
        return
    if a.rounds < 1 or a.runs < 1:
        ap.error("--rounds and --runs must be at least 1")
    try:
        base, head = resolve(a.base), resolve(a.head)
    except subprocess.CalledProcessError:
        ap.error(f"not a commit: {a.base!r} or {a.head!r}")
    paths = [Path(p).resolve() for p in a.scenario] if a.scenario else sorted((ROOT / "scenarios").glob("*.toml"))
    for p in paths:
        if not p.is_file():
            ap.error(f"no such scenario file: {p}")
    CACHE.mkdir(parents=True, exist_ok=True)
    builds = {"base": build(base, False), "head": build(head, False, a.pgo)}
    workers = {k: Worker(py, k) for k, py in builds.items()}
    print(f"machine: {cpu()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}")
    print(f"base {a.base} ({base[:12]})  head {a.head} ({head[:12]}){' profile-guided' if a.pgo else ''}")
    for k, w in workers.items():
        print(f"  {k} imports thinwire from {w.where}")
    print(f"{a.rounds} rounds x {a.runs} runs per scenario and build, alternating; load {os.getloadavg()[0]:.2f}")
    # rounds[name][build] = list of (mean per-run, mean core) per round
    res: dict = {p.stem: {"base": [], "head": []} for p in paths}
    events: dict = {p.stem: {} for p in paths}
    errors: dict = {}
    for rnd in range(a.rounds):
        order = ["base", "head"] if rnd % 2 == 0 else ["head", "base"]
        for p in paths:
            for k in order:
                if (p.stem, k) in errors:
                    continue
                out = workers[k].ask({"path": str(p), "runs": a.runs})
                if "error" in out:
                    errors[(p.stem, k)] = out["error"]
                    continue
                res[p.stem][k].append((statistics.fmean(out["per"]), statistics.fmean(out["core"])))
                events[p.stem][k] = out["events"]
        print(f"  round {rnd + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    for w in workers.values():
        w.close()
    hdr = (
        f"{'scenario':<24} {'events':>17}  {'base ms':>8} {'head ms':>8} {'ratio':>6} {'median':>6}   "
        f"{'core base':>9} {'core head':>9} {'ratio':>6} {'/event':>6}"
    )
    print(hdr)
    best, med, core, per_event = [], [], [], []
    for name, r in res.items():
        if not r["base"] or not r["head"]:
            why = errors.get((name, "base")) or errors.get((name, "head"))
            print(f"{name:<24} not compared: {why}")
            continue
        bb, hb = min(x[0] for x in r["base"]), min(x[0] for x in r["head"])
        bm, hm = statistics.median(x[0] for x in r["base"]), statistics.median(x[0] for x in r["head"])
        cb, ch = min(x[1] for x in r["base"]), min(x[1] for x in r["head"])
        eb, eh = events[name]["base"], events[name]["head"]
        ev = f"{eh:,} " if eb == eh else f"{eb:,}/{eh:,}*"
        print(
            f"{name:<24} {ev:>18} {bb * 1e3:8.2f} {hb * 1e3:8.2f} {hb / bb:6.3f} {hm / bm:6.3f}   "
            f"{cb * 1e3:9.2f} {ch * 1e3:9.2f} {ch / cb:6.3f} {(ch / eh) / (cb / eb):6.3f}"
        )
        best.append(hb / bb)
        med.append(hm / bm)
        core.append(ch / cb)
        per_event.append((ch / eh) / (cb / eb))
    print(
        f"{'geometric mean':<43} {'':>17} {gmean(best):6.3f} {gmean(med):6.3f}   {'':>19} {gmean(core):6.3f} {gmean(per_event):6.3f}"
    )
    if any(events[n].get("base") != events[n].get("head") for n in events if len(events[n]) == 2):
        print("* events (base/head) differ between the builds: not the same simulation")


if __name__ == "__main__":
    main()
