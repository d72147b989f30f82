#!/usr/bin/env python3
"""Turns the raw lines of bench/compare.sh into a Markdown table and an SVG chart.

Usage: report.py RESULTS.txt [MORE.txt ...] [--svg docs/benchmarks.svg]

Each input line looks like ``impl=<name> flags=<flags> workload=<w> size=<n> median_ms=...``.
When a row was measured several times (passes, or several files), the median of the medians is
shown. No dependencies: the SVG is written by hand.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict

PEERS = ["adk-graph", "weavegraph", "langgraph-rs"]
IMPLS = ["weir", "langgraph", *PEERS]


def parse(paths: list[str]):
    rows: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    notes: dict[tuple, dict[str, str]] = defaultdict(dict)
    floors: dict[tuple, list[dict]] = defaultdict(list)
    header: list[str] = []
    order: list[tuple] = []
    for path in paths:
        for line in open(path):
            line = line.rstrip("\n")
            if line.startswith("#"):
                header.append(line)
                continue
            if not line.startswith("impl="):
                continue
            head, _, rest = line.partition(" workload=")
            if not rest:
                continue
            kv = dict(p.split("=", 1) for p in head.split() if "=" in p)
            impl, flags = kv.get("impl"), kv.get("flags", "-")
            fields: dict[str, str] = {"workload": rest.split()[0]}
            if " FAILED: " in rest or " SKIPPED: " in rest or " UNSUPPORTED: " in rest:
                word = next(w for w in ("FAILED", "SKIPPED", "UNSUPPORTED") if f" {w}: " in rest)
                size = rest.split()[1].split("=", 1)[1]
                key = (fields["workload"], int(size), flags)
                if key not in order:
                    order.append(key)
                notes[key][impl] = word.lower() + ": " + rest.split(f" {word}: ", 1)[1]
                continue
            for p in rest.split()[1:]:
                if "=" in p:
                    k, v = p.split("=", 1)
                    fields[k] = v
            key = (fields["workload"], int(fields["size"]), flags)
            if fields["workload"] == "sqlite_floor":
                floors[key].append(fields)
                continue
            if key not in order:
                order.append(key)
            rows[key][impl].append(fields)
    return header, order, rows, notes, floors


def med(recs: list[dict], field: str) -> float | None:
    vals = [float(r[field]) for r in recs if field in r]
    return statistics.median(vals) if vals else None


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 1:
        return f"{x:.1f}"
    return f"{x:.3f}"


def fmt_us(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.0f}" if x >= 100 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def settings(workload: str, flags: str) -> str:
    out = []
    if workload.startswith("checkpoint"):
        f = flags.replace("_", " ")
        out.append("sync=OFF" if "synchronous OFF" in f else "sync=FULL" if workload != "checkpoint_memory" else "")
        out.append("durability=sync" if "durability sync" in f else "durability=async")
    return ", ".join(o for o in out if o)


def table(order, rows, notes, floors) -> str:
    lines = [
        "| workload | size | settings | LangGraph ms | weir ms | weir µs/unit | LangGraph / weir "
        "| adk-graph ms | weavegraph ms | langgraph-rs ms | best peer / weir |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in order:
        workload, size, flags = key
        r = rows.get(key, {})
        m = {i: med(r.get(i, []), "median_ms") for i in IMPLS}

        def cell(i: str) -> str:
            if m[i] is not None:
                return fmt_ms(m[i])
            note = notes.get(key, {}).get(i)
            return f"n/a ({note.split(': ', 1)[0]})" if note else "–"

        weir = m["weir"]
        ratio = f"{m['langgraph'] / weir:,.0f}×" if weir and m["langgraph"] else "–"
        peers = [m[p] for p in PEERS if m[p] is not None]
        best = f"{min(peers) / weir:,.1f}×" if weir and peers else "–"
        lines.append(
            f"| {workload} | {size:,} | {settings(workload, flags)} | {cell('langgraph')} | {cell('weir')} "
            f"| {fmt_us(med(r.get('weir', []), 'per_unit_us'))} | {ratio} | {cell('adk-graph')} "
            f"| {cell('weavegraph')} | {cell('langgraph-rs')} | {best} |"
        )
    return "\n".join(lines)


def facts(order, rows, floors) -> str:
    """The checkpoint facts of weir and LangGraph, and weir's SQLite step against the floor."""
    out = [
        "| workload | size | settings | impl | checkpoints | checkpoint blob bytes | db file bytes | µs/step "
        "| bare insert µs | step / insert |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in order:
        workload, size, flags = key
        if not workload.startswith("checkpoint"):
            continue
        for impl in ("weir", "langgraph"):
            recs = rows.get(key, {}).get(impl, [])
            if not recs:
                continue
            last = recs[-1]
            fl = med(recs, "floor_insert_us")
            step = med(recs, "per_unit_us")
            blob = int(last.get("checkpoint_blob_bytes", 0) or 0)
            db = f"{int(last['db_file_bytes']):,}" if "db_file_bytes" in last else "–"
            vs = f"{step / fl:.2f}×" if fl and step else "–"
            paired = med(recs, "vs_floor_paired")
            if paired and impl == "weir":
                vs += f" ({paired:.2f}× paired)"
            out.append(
                f"| {workload} | {size:,} | {settings(workload, flags)} | {impl} | {last.get('checkpoints', '–')} "
                f"| {blob:,} | {db} | {fmt_us(step)} | {fmt_us(fl)} | {vs} |"
            )
    return "\n".join(out)


# ----------------------------------------------------------------------------------- SVG

COLORS = {
    "weir": "#1b7f3b",
    "langgraph": "#c0392b",
    "adk-graph": "#2c6fbb",
    "weavegraph": "#8e44ad",
    "langgraph-rs": "#d68910",
}
LABELS = {"langgraph": "LangGraph 1.2.9 (Python)"}


def series(order, rows, workload: str, flags_pred) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for key in order:
        w, size, flags = key
        if w != workload or not flags_pred(flags):
            continue
        for impl, recs in rows.get(key, {}).items():
            v = med(recs, "per_unit_us")
            if v:
                out[impl].append((size, v))
    return {k: sorted(v) for k, v in out.items()}


def panel(x0: float, y0: float, w: float, h: float, title: str, unit: str, data) -> list[str]:
    pts = [p for s in data.values() for p in s]
    if not pts:
        return []
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    lx0, lx1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if lx1 == lx0:
        lx1 += 1
    if ly1 == ly0:
        ly1 += 1
    left, right, top, bottom = 62, 12, 30, 40
    pw, ph = w - left - right, h - top - bottom

    def X(v: float) -> float:
        return x0 + left + (math.log10(v) - lx0) / (lx1 - lx0) * pw

    def Y(v: float) -> float:
        return y0 + top + ph - (math.log10(v) - ly0) / (ly1 - ly0) * ph

    s = [f'<text x="{x0 + w / 2}" y="{y0 + 18}" text-anchor="middle" font-weight="bold">{title}</text>']
    s.append(f'<rect x="{x0 + left}" y="{y0 + top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    for e in range(ly0, ly1 + 1):
        y = Y(10**e)
        s.append(f'<line x1="{x0 + left}" x2="{x0 + left + pw}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        label = f"{10**e:g}"
        s.append(f'<text x="{x0 + left - 6}" y="{y + 4}" text-anchor="end" font-size="11">{label}</text>')
    for e in range(lx0, lx1 + 1):
        x = X(10**e)
        s.append(f'<line x1="{x}" x2="{x}" y1="{y0 + top}" y2="{y0 + top + ph}" stroke="#ddd"/>')
        s.append(f'<text x="{x}" y="{y0 + top + ph + 15}" text-anchor="middle" font-size="11">{10**e:,.0f}</text>')
    s.append(
        f'<text x="{x0 + left + pw / 2}" y="{y0 + h - 6}" text-anchor="middle" font-size="12">size (log)</text>'
    )
    s.append(
        f'<text transform="translate({x0 + 14},{y0 + top + ph / 2}) rotate(-90)" text-anchor="middle" '
        f'font-size="12">{unit} (log)</text>'
    )
    ly = y0 + top + 14
    for impl in IMPLS:
        if impl not in data:
            continue
        c = COLORS[impl]
        path = " ".join(f"{'M' if i == 0 else 'L'}{X(a):.1f},{Y(b):.1f}" for i, (a, b) in enumerate(data[impl]))
        s.append(f'<path d="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for a, b in data[impl]:
            s.append(
                f'<circle cx="{X(a):.1f}" cy="{Y(b):.1f}" r="3.5" fill="{c}"><title>{impl} {a:,}: {b:.3g} µs</title></circle>'
            )
        s.append(f'<rect x="{x0 + left + 8}" y="{ly - 9}" width="10" height="10" fill="{c}"/>')
        s.append(f'<text x="{x0 + left + 22}" y="{ly}" font-size="11">{LABELS.get(impl, impl)}</text>')
        ly += 15
    return s


def svg(order, rows) -> str:
    seq = series(order, rows, "sequential", lambda f: True)
    grow = series(order, rows, "checkpoint_growing_state", lambda f: "synchronous_OFF" in f)
    W, H = 920, 380
    body = panel(0, 0, W / 2, H, "sequential: cost per node", "µs per node", seq)
    body += panel(
        W / 2, 0, W / 2, H, "checkpoint_growing_state (SQLite, sync=OFF): cost per step", "µs per superstep", grow
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="sans-serif" font-size="13">\n'
        f'<rect width="{W}" height="{H}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )


def main() -> int:
    args = sys.argv[1:]
    out_svg = None
    if "--svg" in args:
        i = args.index("--svg")
        out_svg = args[i + 1]
        del args[i : i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    header, order, rows, notes, floors = parse(args)
    for h in header:
        if h.startswith("# date") or h.startswith("# cpu") or h.startswith("# rustc") or h.startswith("# python"):
            print(h)
    print()
    print(table(order, rows, notes, floors))
    print()
    print(facts(order, rows, floors))
    unsupported = {(k[0], i): n for k, v in notes.items() for i, n in v.items() if "unsupported" in n}
    if unsupported:
        print()
        for (w, i), n in sorted(unsupported.items()):
            print(f"- {i} / {w}: {n}")
    if out_svg:
        with open(out_svg, "w") as f:
            f.write(svg(order, rows))
        print(f"\nchart: {out_svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
