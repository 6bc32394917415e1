"""Output hashes of every example scenario, for proving that a restructuring changed
nothing a user sees.

For each file in scenarios/ and each of two seeds, the scenario runs with every trace
layer and both pcap taps; the hashes cover the summary (without the wall-clock
fields), the per-flow table, media delays, every trace column and both pcaps. The
content is hashed, not the Parquet files, so a new polars version that writes other
Parquet bytes for the same table does not count as a change.

    python tests/tools/output_hashes.py            # print the hashes as JSON
    python tests/tools/output_hashes.py --write    # rewrite the golden file

Rewrite the golden file only for a deliberate change of outputs, and say in the
commit which outputs changed and why.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "output_hashes.json"
SEEDS = (1, 2)
WALL_CLOCK = ("wall_s", "events_per_s")
LAYERS = ("tcp", "link", "queue", "channel", "proxy")


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:32]


def hashes_of(result) -> dict[str, str]:
    """Hashes of one run's outputs (a thinwire.api.RunResult)."""
    summary = {k: v for k, v in result.summary.items() if k not in WALL_CLOCK and k not in ("scenario", "events")}
    out = {"summary": _sha(json.dumps(summary, sort_keys=True).encode())}
    # The engine's event count is kept apart: a restructuring may change how many
    # events the engine needs without changing any result.
    out["events"] = str(result.summary["events"])
    raw = result.raw
    out["media_delays"] = _sha(b"".join(raw["media_delays"][k] for k in sorted(raw["media_delays"])))
    trace = result.trace
    out["trace_rows"] = str(trace.height)
    # The trace frame as written to trace.parquet (sorted, categorical names).
    out["trace"] = _sha(trace.write_csv().encode())
    for key in ("pcap_server", "pcap_mobile"):
        out[key] = _sha(raw.get(key) or b"")
    return out


def compute() -> dict[str, dict[str, str]]:
    import thinwire

    res = {}
    for path in sorted((ROOT / "scenarios").glob("*.toml")):
        for seed in SEEDS:
            r = thinwire.run(path, seed=seed, trace=list(LAYERS), pcap=True)
            res[f"{path.stem}@{seed}"] = hashes_of(r)
    return res


if __name__ == "__main__":
    got = compute()
    if "--write" in sys.argv:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    else:
        print(json.dumps(got, indent=1, sort_keys=True))
