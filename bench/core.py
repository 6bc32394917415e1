"""The event core against a bare heap loop (issue "Performance at scale", part 3).

Writes the study mix — one run per sweep of `shared-link-arq` (both structures, FT
and web, every protocol, alone and with contention) at FLR 5.4 % with the paper's
tuned setting — then runs `examples/core_bench` on scenario (a) and the mix. Both
rates are printed as a fraction of a bare `BinaryHeap` loop measured in the same
process and round; `--per-run` adds a table of events, link frames, events per frame
and nanoseconds per event for each scenario of the mix.
    .venv/bin/python bench/core.py [--repeat N] [--per-run]"""

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from thinwire.studies.shared_link_arq import SETTINGS, TUNED, channel, jobs

ROOT = Path(__file__).resolve().parent.parent


def write_mix(d: Path) -> int:
    n = 0
    for j in jobs(quick=False):
        model = j["models"][0]
        axis, _ = SETTINGS[j["protocol"]]
        sets = [f"wireless.channel={_inline(channel(model, 0.054))}"]
        if axis:
            v = TUNED[j["protocol"]][model]
            sets.append(f"{axis}={v}" if j["protocol"] == "rlc" else f'{axis}="{v}"')
        name = j["name"].replace("/", "-")
        (d / f"{n:02d}-{name}.toml").write_text("".join(f"#set {s}\n" for s in sets) + j["text"])
        n += 1
    return n


def _inline(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_inline(x)}" for k, x in v.items()) + " }"
    return f'"{v}"' if isinstance(v, str) else repr(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--per-run", action="store_true", help="also print each mix scenario's cost")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "-q", "--release", "--example", "core_bench"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as d:
        n = write_mix(Path(d))
        print(f"study mix: {n} scenarios")
        exe = ROOT / "target/release/examples/core_bench"
        env = dict(os.environ, PER_RUN="1") if a.per_run else None
        subprocess.run([exe, ROOT / "scenarios/shared-link-sr.toml", d, str(a.repeat)], check=True, env=env)


if __name__ == "__main__":
    main()
