"""What each result field is, from the Rust core's one description
(`crates/thinwire/src/describe.rs`): which fields sweeps aggregate, and the columns
of the command line's summary tables. A counter added in Rust appears here without
any edit in Python."""

from __future__ import annotations

from . import _core


def fields(section: str) -> list[dict]:
    """Every field of a result section ("flow", "link", "proxy"): name, unit, kind
    (metric, info, hidden), label ("header|format" for summary tables), group, doc."""
    return list(_core.RESULT_FIELDS[section])


def metrics(section: str) -> tuple[str, ...]:
    """Fields a sweep aggregates (mean, sd, n, 95 % CI)."""
    return tuple(f["name"] for f in fields(section) if f["kind"] == "metric")


def columns(section: str, group: str = "") -> list[tuple[str, str, str]]:
    """Summary-table columns of a section (and group): (field, header, format)."""
    out = []
    for f in fields(section):
        if not f["label"] or (group and group not in f["group"].split()):
            continue
        header, _, fmt = f["label"].partition("|")
        out.append((f["name"], header, fmt or f["unit"]))
    return out


def plural(count: int, word: str) -> str:
    """'1 connection', '2 connections', '1,024 segments'."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def fmt_rate(bps: float) -> str:
    return f"{bps / 1e6:.3f} Mbit/s" if bps >= 1e6 else f"{bps / 1e3:.2f} kbit/s"


def format_value(v, fmt: str) -> str:
    """A value as the summary tables show it."""
    if v is None:
        return "-"
    if fmt == "rate":
        return fmt_rate(v)
    if fmt == "s":
        return f"{v:.2f} s"
    if fmt == "ms":
        return f"{v * 1e3:.0f} ms"
    if fmt == "%":
        return f"{v * 100:.2f}%"
    if isinstance(v, bool) or isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4g}"


def table(rows: list[dict], cols: list[tuple[str, str, str]], first: tuple[str, str] | None = None) -> list[str]:
    """Lines of a text table: a header, a rule and one line per row; text columns
    left-aligned, numbers right-aligned. `first`: a leading (header, value key) column.
    A column whose header ends in "?" is shown only when some row has a value
    other than 0 (a counter of a mechanism the run did not use stays out)."""
    cols = [
        (n, h.rstrip("?"), f) for n, h, f in cols if not h.endswith("?") or any(r.get(n) not in (None, 0) for r in rows)
    ]
    heads = ([first[0]] if first else []) + [h for _, h, _ in cols]
    cells = [
        ([str(r[first[1]])] if first else []) + [format_value(r.get(name), fmt) for name, _, fmt in cols] for r in rows
    ]
    left = ([True] if first else []) + [fmt == "text" for _, _, fmt in cols]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]

    def line(vals):
        return " ".join(v.ljust(w) if lft else v.rjust(w) for v, w, lft in zip(vals, widths, left)).rstrip()

    head = line(heads)
    return [head, "-" * len(head)] + [line(c) for c in cells]


def trace_events(layer: str | None = None) -> list[dict[str, str]]:
    """What each (layer, event) of a trace means, from the core's one description
    (`EVENT_DOCS`, crates/thinwire/src/trace/mod.rs): layer, event, node (whose row
    it is), meaning, columns (what seq / ack / len hold), value (what the `value`
    column holds) and unit."""
    return [dict(d) for d in _core.TRACE_EVENT_DOCS if layer is None or d["layer"] == layer]


def trace_events_markdown() -> str:
    """The table of trace events as docs/analysis.md shows it."""
    lines = ["| layer | event | meaning | `value` (unit) | seq / ack / len | node |", "|---|---|---|---|---|---|"]
    for d in trace_events():
        cells = [
            f"`{d['layer']}`",
            f"`{d['event']}`",
            d["meaning"],
            f"{d['value']} ({d['unit']})",
            d["columns"] or "—",
            d["node"],
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
