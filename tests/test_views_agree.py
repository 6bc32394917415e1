"""One definition per reported number: the same run's retransmission and timeout
counts agree in summary.json, the `thinwire run` table, `thinwire analyze`'s flow
table and its pcap sections (thinwire.fields describes each)."""

import json

from conftest import SCENARIOS, thinwire_cli

# A GPRS download over a link that loses a fifth of its frames: handshake, data
# and FIN retransmissions, timeouts (seed 3: all of them non-zero).
ARGS = [
    "--seed",
    "3",
    "--set",
    'wireless.channel={model="uniform",p=0.2}',
    "--set",
    "flow.0.bytes=30KB",
]


def _table(text: str, first_header: str) -> list[dict]:
    """A right-aligned table of the CLI as rows of {header: cell}: each cell ends
    where its header ends."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(first_header))
    head = lines[i]
    ends = []
    # Headers are separated by single spaces but may hold one ("avg RTT"): the
    # columns are found from the rows' cell boundaries instead.
    rows = []
    for line in lines[i + 2 :]:
        if not line.strip() or line.startswith("(") or line.startswith("-"):
            break
        rows.append(line)
    # Column ends: positions where every row and the header have a non-space
    # followed by a space (or the line end).
    width = max(len(x) for x in [head, *rows])
    grid = [x.ljust(width) for x in [head, *rows]]
    for c in range(width):
        if all(g[c] != " " and (c + 1 == width or g[c + 1] == " ") for g in grid[1:]):
            ends.append(c + 1)
    out = []
    for r in grid[1:]:
        cells, prev = {}, 0
        for e in ends:
            cells[head[prev:e].strip()] = r[prev:e].strip()
            prev = e
        out.append(cells)
    return out


def _int(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_retransmissions_and_timeouts_agree_across_the_views(tmp_path):
    out = tmp_path / "g"
    p = thinwire_cli("run", SCENARIOS / "gprs-download.toml", *ARGS, "--out", out, "--pcap")
    assert p.returncode == 0, p.stderr
    (f,) = json.loads((out / "summary.json").read_text())["flows"]
    data, syn, fin, rto = f["tcp_retransmits"], f["tcp_syn_retransmits"], f["tcp_fin_retransmits"], f["tcp_timeouts"]
    assert min(data, syn, fin, rto) > 0, f  # the scenario exercises every counter

    # The run table prints the same numbers.
    (row,) = _table(p.stdout, "flow app")
    assert (_int(row["rexmits"]), _int(row["SYN rexmit"]), _int(row["FIN rexmit"]), _int(row["RTOs"])) == (
        data,
        syn,
        fin,
        rto,
    ), row

    # analyze: the trace's flow table, by the same names.
    a = thinwire_cli("analyze", out, "--json")
    assert a.returncode == 0, a.stderr
    got = json.loads(a.stdout)
    (m,) = got["flows"]
    assert (m["tcp_retransmits"], m["tcp_syn_retransmits"], m["tcp_fin_retransmits"], m["tcp_timeouts"]) == (
        data,
        syn,
        fin,
        rto,
    )
    # and its printed table
    text = thinwire_cli("analyze", out).stdout
    (trow,) = _table(text, "flow dir")
    assert (_int(trow["TCP rexmit"]), _int(trow["SYN rexmit"]), _int(trow["FIN rexmit"]), _int(trow["RTOs"])) == (
        data,
        syn,
        fin,
        rto,
    )

    # The captures: each end's own tap sees everything that end sent (server: b->a,
    # mobile: a->b). tcptrace's "rexmt data pkts" counts SYNs and FINs sent again;
    # its parts are shown beside it.
    (srv,) = got["captures"]["server"]["connections"]
    (mob,) = got["captures"]["mobile"]["connections"]
    s, c = srv["b2a"], mob["a2b"]
    assert s["retransmitted_data_packets"] == data
    assert s["retransmitted_packets"] == data + s["retransmitted_syn_packets"] + s["retransmitted_fin_packets"]
    assert s["retransmitted_syn_packets"] + c["retransmitted_syn_packets"] == syn
    assert s["retransmitted_fin_packets"] + c["retransmitted_fin_packets"] == fin
    assert c["retransmitted_data_packets"] == 0  # a download: the mobile sends no data
