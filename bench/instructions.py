"""Instructions per event, counted exactly (issue "Performance at scale", part 3).

Wall-clock rates on this shared 2-core machine drift by ~10 % over hours and have no
hardware counters; valgrind's callgrind counts every instruction executed, so two
builds compare to the instruction whatever else runs. This runs `examples/core_bench`
once under callgrind on scenario (a) and the study mix (`bench/core.py` writes it),
counting only inside the simulator's event loop (`Sim::run_polled`) and the bare heap
loop, and prints instructions per event for both and where the simulator's go, by
component (self cost grouped by the source file it was written in; standard-library
code inlined into a function counts for that function's module).
Instructions are not time (the bare loop's unpredictable branches make it slower per
instruction than the simulator), so the time ratio stays `bench/core.py`'s figure.
    .venv/bin/python bench/instructions.py [--top N] [--keep FILE]      (needs valgrind; ~2 minutes)"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import write_mix  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "target" / "callgrind"

# (source-path pattern, component), first match wins.
FILES = [
    ("src/link/wireless", "link: multiplexer and radio (wireless.rs, wireless/)"),
    ("src/link/", "link: ARQ machines, frames"),
    ("src/tcp/", "TCP endpoints"),
    ("src/sched.rs", "event queue"),
    ("src/engine/", "simulator: event loop, dispatch, glue"),
    ("src/queue/", "IP queues, wired link"),
    ("src/channel/", "channels and random numbers"),
    ("src/rng.rs", "channels and random numbers"),
    ("src/app/", "applications"),
    ("src/wire/", "packet representations"),
    ("malloc", "allocation (libc)"),
    ("memmove", "memory moves (libc)"),
    ("memcpy", "memory moves (libc)"),
]
# Module of the enclosing function, for inlined standard-library code.
MODULES = [
    ("thinwire::link::wireless", "link: multiplexer and radio (wireless.rs, wireless/)"),
    ("thinwire::link", "link: ARQ machines, frames"),
    ("thinwire::tcp", "TCP endpoints"),
    ("thinwire::sched", "event queue"),
    ("thinwire::engine", "simulator: event loop, dispatch, glue"),
    ("thinwire::queue", "IP queues, wired link"),
    ("thinwire::channel", "channels and random numbers"),
    ("thinwire::app", "applications"),
    ("thinwire::wire", "packet representations"),
]
LINE = re.compile(r"^\s*([\d,]+)\s+(\S+?):(.+?)(?: \[.*\])?$")


def component(path: str, func: str) -> str:
    for pat, name in FILES:
        if pat in path:
            return name
    for pat, name in MODULES:
        if pat in func:
            return name
    return "other (std, hashing, ...)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=12, help="also list the N costliest functions (self)")
    ap.add_argument("--keep", type=Path, help="also copy callgrind's output here (for callgrind_annotate --auto=yes)")
    a = ap.parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if not shutil.which(tool):
            sys.exit(f"bench/instructions.py: needs {tool} (apt-get install valgrind)")
    env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="line-tables-only", CARGO_TARGET_DIR=str(TARGET))
    subprocess.run(["cargo", "build", "-q", "--release", "--example", "core_bench"], cwd=ROOT, check=True, env=env)
    exe = TARGET / "release/examples/core_bench"
    with tempfile.TemporaryDirectory() as d:
        mix = Path(d) / "mix"
        mix.mkdir()
        n = write_mix(mix)
        out = Path(d) / "callgrind.out"
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                "--toggle-collect=*Sim::run_polled*",
                "--toggle-collect=*bare_loop*",
                exe,
                ROOT / "scenarios/shared-link-sr.toml",
                mix,
                "1",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        events_a = int(re.search(r"toml: (\d+) events", run.stdout).group(1))
        events_mix = int(re.search(r"mix \(\d+ scenarios\): (\d+) events", run.stdout).group(1))
        flat = subprocess.run(
            ["callgrind_annotate", "--threshold=100", "--show-percs=no", out],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        if a.keep:
            shutil.copyfile(out, a.keep)
    bare = 0
    sim = 0
    parts: dict[str, int] = defaultdict(int)
    funcs: dict[str, int] = defaultdict(int)
    for line in flat.splitlines():
        m = LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        ir, path, func = int(m.group(1).replace(",", "")), m.group(2), m.group(3)
        if "bare_loop" in func:
            bare += ir
            continue
        sim += ir
        parts[component(path, func)] += ir
        funcs[func] += ir
    # The bare loop pops and pushes once per event, as many events as scenario (a) has.
    per_bare = bare / events_a
    events = events_a + events_mix
    per_sim = sim / events
    print(f"scenario (a) and the study mix ({n} scenarios): {events:,} events")
    print(f"simulator: {per_sim:,.0f} instructions per event; bare heap loop: {per_bare:,.0f}")
    print()
    print("| component | instructions per event | share |")
    print("|---|---|---|")
    for name, ir in sorted(parts.items(), key=lambda x: -x[1]):
        print(f"| {name} | {ir / events:,.0f} | {100 * ir / sim:.1f} % |")
    if a.top:
        print()
        print("| function (self, with what is inlined into it) | instructions per event |")
        print("|---|---|")
        for f, ir in sorted(funcs.items(), key=lambda x: -x[1])[: a.top]:
            print(f"| `{f}` | {ir / events:,.0f} |")


if __name__ == "__main__":
    main()
