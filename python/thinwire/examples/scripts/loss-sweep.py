# From Python: one run of a shipped example, then a sweep of its frame loss rate
# with replications, plotted with 95 % confidence intervals (loss-sweep.png).
# Run it as a plain script: python loss-sweep.py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
import thinwire

base = thinwire.examples.path("shared-link-sr")
fixed = {"flow.0.bytes": "100KB", "wireless.channel": {"model": "uniform", "p": 0.0}}

one = thinwire.run(base, seed=1, set=fixed)
print(one)
print(one.flows.select("id", "bytes_delivered", "throughput_bps", "tcp_retransmits", "tcp_timeouts"))

runs, summary = thinwire.sweep(
    base,
    axes={"wireless.channel.p": [0.0, 0.02, 0.05, 0.1]},
    set=fixed,
    replications=4,
    workers=2,
)
col = "flow0.throughput_bps"
points = summary.select(
    pl.col("axis:wireless.channel.p").alias("p"),
    (pl.col(f"{col}:mean") / 1e3).alias("throughput_kbps"),
    (pl.col(f"{col}:ci95") / 1e3).alias("ci95_kbps"),
)
print(points)

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.errorbar(points["p"], points["throughput_kbps"], yerr=points["ci95_kbps"], marker="o", capsize=3)
ax.set_xlabel("frame loss rate")
ax.set_ylabel("TCP throughput (kbit/s)")
ax.set_title("100 KB over 64 kbit/s SR, 4 replications")
fig.tight_layout()
fig.savefig("loss-sweep.png", dpi=120)
print("wrote loss-sweep.png")
