import json

from conftest import assert_golden_claims, thinwire_cli


def test_reproduce_shared_link_arq_quick(tmp_path):
    out = tmp_path / "s"
    p = thinwire_cli("reproduce", "shared-link-arq", "--quick", "--json", "--out", out, "--workers", "2")
    assert p.returncode == 0, p.stderr[-2000:]
    claims = json.loads(p.stdout)
    assert_golden_claims("shared-link-arq", claims)
    # Every claim under both link-sharing structures, the paper's (shared-queue) first.
    assert [c["structure"] for c in claims] == ["shared-queue"] * 45 + ["pull"] * 45
    for mux in ("shared-queue", "pull"):
        cs = [c for c in claims if c["structure"] == mux]
        sections = [c["section"] for c in cs]
        assert {s: sections.count(s) for s in set(sections)} == {"IV": 8, "V": 8, "VI": 8, "VII": 21}
        assert [c["id"] for c in cs] == [c["id"] for c in claims[:45]] and len({c["id"] for c in cs}) == 45
    for c in claims:
        assert set(c) == {"id", "claim", "section", "expected", "measured", "pass", "inconclusive", "why", "structure"}
        assert isinstance(c["pass"], bool) and isinstance(c["inconclusive"], bool)
        assert "kbit/s" in c["measured"] or " ms" in c["measured"], c
        # A failure says why (with what was measured); a pass says nothing.
        assert (c["why"] == "") == c["pass"], c
    ranked = [c for c in claims if c["section"] in ("IV", "V", "VI") and not c["pass"]]
    assert ranked and all(
        ("retransmissions" if c["id"].startswith("VI") else "link timeouts") in c["why"] for c in ranked
    )
    for d in (out, out / "pull"):
        for fig in range(2, 28):
            pngs = list(d.glob(f"fig{fig:02d}_*.png"))
            pdfs = list(d.glob(f"fig{fig:02d}_*.pdf"))
            assert len(pngs) == 1 and len(pdfs) == 1 and pngs[0].stat().st_size > 10_000, (d, fig)
        assert len(list(d.glob("extra_web_asr_*.png"))) == 4 and len(list(d.glob("extra_web_rlc_*.png"))) == 4
        assert len(list(d.glob("extra_web_media_delay_*.png"))) == 2
    # claims.md: one row per claim with a result column per structure.
    md = (out / "claims.md").read_text()
    assert md.count("| IV |") == 8 and md.count("| VII |") == 21
    rows = [line for line in md.splitlines() if line.startswith("| IV |")]
    assert all(r.count("PASS") + r.count("FAIL") + r.count("INCONCLUSIVE") >= 2 for r in rows)
    n_sq = sum(c["pass"] and not c["inconclusive"] for c in claims[:45])
    n_inc = sum(c["inconclusive"] for c in claims[:45])
    assert f"shared-queue: {n_sq} of 45 ({n_inc} inconclusive" in md
    # Quick mode (3 replications): verdicts that rest on means within each other's
    # 95 % CIs are inconclusive, not PASS or FAIL.
    assert n_inc > 0
    for c in claims:
        if c["section"] in ("IV", "VI") and c["inconclusive"]:
            assert "±" in c["measured"]
    assert json.loads((out / "claims.json").read_text()) == claims
    # Every protocol and setting has data at every FLR of both error models, per structure.
    import polars as pl

    s = pl.read_parquet(out / "summary.parquet")
    assert s.filter(pl.col("protocol") == "rlc").height == 2 * 2 * 2 * 2 * 5 * 5
    assert s.filter(pl.col("protocol") == "raw").height == 2 * 2 * 2 * 2 * 5
    assert s["n"].min() == 3
    # Rerunning resumes: nothing is simulated again and the claims are identical.
    p2 = thinwire_cli("reproduce", "shared-link-arq", "--quick", "--json", "--out", out, "--workers", "1")
    assert p2.returncode == 0 and json.loads(p2.stdout) == claims
    # One structure alone: the same claims as that structure's half of the full run.
    p3 = thinwire_cli("reproduce", "shared-link-arq", "--quick", "--json", "--out", out, "--mux", "pull")
    assert p3.returncode == 0 and json.loads(p3.stdout) == claims[45:]


def test_reproduce_mux_is_checked():
    p = thinwire_cli("reproduce", "shared-link-arq", "--quick", "--mux", "fifo")
    assert (
        p.returncode == 2
        and "accepted: both, shared-queue, pull" in p.stderr
        and len(p.stderr.strip().splitlines()) == 1
    )
    p = thinwire_cli("reproduce", "gprs-tcp", "--quick", "--mux", "pull")
    assert p.returncode == 2 and "--mux applies only to shared-link-arq" in p.stderr


def test_reproduce_unknown_study():
    p = thinwire_cli("reproduce", "no-such-study")
    assert (
        p.returncode == 2
        and "available: aqm-wireless, gprs-proxy, gprs-tcp, gsm-multilayer, is707-idle-frames, shared-link-arq, sim-vs-real\n"
        in p.stderr
        and len(p.stderr.strip().splitlines()) == 1
    )


def test_reproduce_is707_idle_frames_quick(tmp_path):
    out = tmp_path / "i"
    p = thinwire_cli("reproduce", "is707-idle-frames", "--quick", "--json", "--out", out, "--workers", "2")
    assert p.returncode == 0, p.stderr[-2000:]
    claims = json.loads(p.stdout)
    assert_golden_claims("is707-idle-frames", claims)
    assert len(claims) == 9
    for c in claims:
        assert set(c) == {"claim", "section", "expected", "measured", "pass", "inconclusive"}
        assert isinstance(c["pass"], bool) and isinstance(c["inconclusive"], bool)
    for fig in range(3, 13):
        pngs = list(out.glob(f"fig{fig:02d}_*.png"))
        assert len(pngs) == 1 and pngs[0].stat().st_size > 10_000 and pngs[0].with_suffix(".pdf").exists(), fig
    import polars as pl

    s = pl.read_parquet(out / "summary.parquet")
    # 3 fdT × 6 Pe without and with unlimited idle frames, 3 fdT × 7 idle counts.
    assert s.height == 2 * 18 + 21 and s["n"].min() == 3
    # Physics the claims do not test: goodput falls with Pe on every curve, and the
    # histograms hold every 10 s window of the runs.
    for (sweep, fdt), g in s.filter(pl.col("sweep") != "idle-n").group_by(["sweep", "fdt"]):
        m = g.sort("pe")["mean"].to_list()
        assert m[0] > m[-1] + 0.3, (sweep, fdt, m)
    h = json.loads((out / "data" / "histograms-first-arrivals.json").read_text())
    assert all(len(ws["10.0"]) >= 1990 for ws in h["values"].values())
    # Rerunning resumes from the saved results and gives the same claims.
    p2 = thinwire_cli("reproduce", "is707-idle-frames", "--quick", "--json", "--out", out, "--workers", "1")
    assert p2.returncode == 0 and json.loads(p2.stdout) == claims
    # More replications into the same folder: the first three are the quick
    # default's runs, kept; only the fourth is simulated, at every point.
    before = pl.read_parquet(out / "data" / "pe-idle0" / "runs.parquet").drop("wall_s")
    p3 = thinwire_cli("reproduce", "is707-idle-frames", "--quick", "--replications", "4", "--json", "--out", out)
    assert p3.returncode == 0, p3.stderr[-2000:]
    sweep = json.loads((out / "data" / "pe-idle0" / "sweep.json").read_text())
    assert (sweep["replications"], sweep["runs"], sweep["new_runs"]) == (4, 72, 18)
    after = pl.read_parquet(out / "data" / "pe-idle0" / "runs.parquet").drop("wall_s")
    assert after.filter(pl.col("replication") < 3).equals(before)
    assert pl.read_parquet(out / "summary.parquet")["n"].unique().to_list() == [4]
    assert json.loads((out / "timing.json").read_text())["replications"] == 4
    # And back to the default: the quick run's claims again.
    p4 = thinwire_cli("reproduce", "is707-idle-frames", "--quick", "--json", "--out", out)
    assert p4.returncode == 0 and json.loads(p4.stdout) == claims


def test_reproduce_replications_are_checked(tmp_path):
    p = thinwire_cli("reproduce", "gprs-tcp", "--quick", "--replications", "3", "--out", tmp_path / "g")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "(is707-idle-frames, shared-link-arq), not gprs-tcp" in p.stderr
    p = thinwire_cli("reproduce", "shared-link-arq", "--quick", "--replications", "0", "--out", tmp_path / "s")
    assert p.returncode == 2 and "--replications: 0 is not a positive number" in p.stderr
    assert not (tmp_path / "g").exists() and not (tmp_path / "s").exists()


def test_reproduce_gsm_multilayer_quick(tmp_path):
    out = tmp_path / "g"
    p = thinwire_cli("reproduce", "gsm-multilayer", "--quick", "--json", "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    claims = json.loads(p.stdout)
    assert_golden_claims("gsm-multilayer", claims)
    assert len(claims) == 9 and {c["section"] for c in claims} == {"4.4", "5.1", "5.2", "5.3", "5.4"}
    for c in claims:
        assert set(c) == {"claim", "section", "expected", "measured", "pass"} and isinstance(c["pass"], bool)
    for fig in range(5, 13):
        pngs = list(out.glob(f"fig{fig:02d}_*.png"))
        assert len(pngs) == 1 and pngs[0].stat().st_size > 10_000, fig
        assert pngs[0].with_suffix(".pdf").stat().st_size > 5_000, f"fig {fig}: no PDF"
    import polars as pl

    runs = pl.read_csv(out / "runs.csv")
    good = runs.filter((pl.col("radio") == "good") & ~pl.col("hc"))
    # Facts the claims do not check: without radio trouble nothing is reset, flushed
    # or dropped by checksum, and compression (no timestamps) raises throughput.
    assert good["link_resets"].sum() == 0 and good["flushed_bytes"].sum() == 0 and good["checksum_drops"].sum() == 0
    hc = runs.filter((pl.col("radio") == "good") & pl.col("hc"))
    assert hc["throughput_Bps"].mean() > good["throughput_Bps"].mean() * 1.05
    poor = runs.filter(pl.col("radio") == "poor")
    assert poor.filter(pl.col("n2") == 6)["link_resets"].sum() > poor.filter(pl.col("n2") == 20)["link_resets"].sum()
    # Same command, same numbers.
    p2 = thinwire_cli("reproduce", "gsm-multilayer", "--quick", "--json", "--out", tmp_path / "g2")
    assert json.loads(p2.stdout) == claims
    # The timing names the kind of build that made it (`make pgo`'s or the plain one).
    from thinwire._core import BUILD

    timing = json.loads((out / "timing.json").read_text())
    assert timing["build"] == BUILD and BUILD in ("plain", "profile-guided", "instrumented")
    assert timing["simulate_and_analyse_s"] > 0


def test_reproduce_gprs_tcp_quick(tmp_path):
    out = tmp_path / "t"
    p = thinwire_cli("reproduce", "gprs-tcp", "--quick", "--json", "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    claims = json.loads(p.stdout)
    assert_golden_claims("gprs-tcp", claims)
    assert len(claims) == 12
    for c in claims:
        assert set(c) == {"claim", "section", "expected", "measured", "pass"} and isinstance(c["pass"], bool)
    for stem in (
        "fig003-02_latency",
        "fig003-04_progress",
        "fig003-05_slow_start",
        "fig003-06_outstanding_rtt",
        "fig004-04_second_flow",
        "fig004-03_recovery",
    ):
        assert (out / f"{stem}.png").stat().st_size > 10_000, stem
    import polars as pl

    runs = pl.read_csv(out / "runs.csv")
    # Facts the claims do not check: every download completes; the outage costs time.
    assert runs["completion_s"].null_count() == 0
    dl = runs.filter((pl.col("kind") == "dl") & (pl.col("radio") == "good"))["completion_s"].mean()
    assert runs.filter(pl.col("kind") == "stall")["completion_s"].min() > dl + 20
    p2 = thinwire_cli("reproduce", "gprs-tcp", "--quick", "--json", "--out", tmp_path / "t2")
    assert json.loads(p2.stdout) == claims


def test_reproduce_gprs_proxy_quick(tmp_path):
    out = tmp_path / "p"
    p = thinwire_cli("reproduce", "gprs-proxy", "--quick", "--json", "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    claims = json.loads(p.stdout)
    assert_golden_claims("gprs-proxy", claims)
    assert len(claims) == 14
    for c in claims:
        assert set(c) == {"claim", "section", "expected", "measured", "pass"} and isinstance(c["pass"], bool)
    for stem in ("fig004-11_windows", "fig004-09_short_downloads", "fig004-10_fairness", "fig004-12_stall_recovery"):
        assert (out / f"{stem}.png").stat().st_size > 10_000, stem
    import polars as pl

    short = pl.read_csv(out / "short_downloads.csv")
    assert short.height == 2 * 2 * 6
    # Facts the claims do not check: larger downloads take longer in every setting,
    # and the proxy's stall runs time out and probe rather than give up.
    for (rcv, proxy), g in short.group_by(["receiver", "proxy"]):
        assert g.sort("size_kb")["mean_s"].is_sorted(), (rcv, proxy)
    stalls = pl.read_csv(out / "stalls.csv").filter(pl.col("proxy"))
    assert (stalls["proxy_timeouts"] >= 1).all() and stalls["completion_s"].null_count() == 0
    p2 = thinwire_cli("reproduce", "gprs-proxy", "--quick", "--json", "--out", tmp_path / "p2")
    assert json.loads(p2.stdout) == claims


def test_reproduce_aqm_wireless_quick(tmp_path):
    """Seed 000 §5.2's remedy on its two over-buffered links (quick: 6 seeds):
    the claims as recorded, the figures and tables written, and the study's
    central facts checked here too (so a change that keeps the claims' text but
    not their meaning fails)."""
    out = tmp_path / "a"
    p = thinwire_cli("reproduce", "aqm-wireless", "--quick", "--json", "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    claims = json.loads(p.stdout)
    assert_golden_claims("aqm-wireless", claims)
    for stem in ("fig1_rtt", "fig2_second_setup", "fig3_goodput", "fig4_interactive_abort"):
        assert (out / f"{stem}.png").stat().st_size > 10_000, stem
        assert (out / f"{stem}.pdf").stat().st_size > 1_000, stem
    s = json.loads((out / "summary.json").read_text())
    gsm, gprs = s["gsm"]["main"], s["gprs"]["main"]
    # Drop-tail inflates the RTT; CoDel with ECN removes most of it with no
    # retransmission and the drop-tail throughput; a small link-layer buffer
    # lets the AQM's queue be the queue.
    assert gsm["droptail"]["rtt_p50_s"][0] > 2.5 * gsm["codel+ecn"]["rtt_p50_s"][0]
    assert gsm["codel+ecn"]["retransmits"][0] == 0 and gsm["codel+ecn"]["marks"][0] > 0
    assert gprs["codel+ecn+ll2"]["rtt_p50_s"][0] < 0.6 * gprs["codel+ecn"]["rtt_p50_s"][0]
    assert (out / "tables.md").read_text().count("| droptail |") == 3
