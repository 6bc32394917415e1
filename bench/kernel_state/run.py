"""Real downloads of a sim-vs-real cell with the server kernel's TCP state traced,
for `examples/kernel_replay.rs` (not CI: needs root, bpftrace and a kernel with
BTF; about a minute per run on `rlc-uniform`).

    .venv/bin/python bench/kernel_state/run.py rlc-uniform cubic 1 8 /tmp/ks

For each seed: the emulated download (`sim_vs_real.real_run`, the study's own
real run: its capture is `<out>/<cell>-<tcp>-<seed>/out/server.pcap`) while
`tcpstate.bt` prints the server socket's `struct tcp_sock` before each inbound
segment (the `tcp_probe` tracepoint, at the start of `tcp_rcv_established`), at
each congestion-state change and each retransmission, into
`<out>/bt-<tcp>-<seed>.txt`. Then, for instance:

    cargo run --release --example kernel_replay --features testkit -- \\
        /tmp/ks/rlc-uniform-cubic-7/out/server.pcap --state /tmp/ks/bt-cubic-7.txt

The tracepoints are global: run nothing else on port 8000 meanwhile.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import thinwire.studies.sim_vs_real as svr

HERE = Path(__file__).resolve().parent


def main() -> None:
    if len(sys.argv) != 6:
        sys.exit("usage: run.py CELL TCP FIRST_SEED LAST_SEED OUT_DIR")
    cell, tcp, a, b, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(a, b + 1):
        with open(out / f"bt-{tcp}-{seed}.txt", "w") as f:
            bt = subprocess.Popen(["bpftrace", str(HERE / "tcpstate.bt")], stdout=f, stderr=subprocess.DEVNULL)
            time.sleep(4)  # the probes attach
            try:
                row = svr.real_run(cell, tcp, seed, out)
            finally:
                time.sleep(0.5)
                bt.terminate()
                bt.wait()
        (out / f"row-{tcp}-{seed}.json").write_text(json.dumps(row))
        print(seed, round(row["completion_s"], 2), "s,", row["timeouts"], "timeouts", flush=True)


if __name__ == "__main__":
    main()
