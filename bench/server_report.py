#!/usr/bin/env python3
"""Turns the lines of bench/server.sh into a Markdown table and an SVG chart.

Usage: server_report.py RESULTS.txt [MORE.txt ...] [--svg docs/server.svg]

Each result line is ``impl=<weir|langgraph> mode=<m> workers=<n> client=<load|probe> key=value ...``
with the keys seq_p50_ms, seq_p99_ms, seq_rps, conc_rps, first_p50_ms (runs), ping_rps (`GET /ok`
100 at once: the HTTP stack alone), idle_threads,
peak_rss_mib (memory with idle threads) or idle_connections, conn_peak_rss_mib (memory with
open connections). A row measured several times shows the median. No dependencies: the SVG
is written by hand, on log scales (the servers differ by orders of magnitude).
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict

FIELDS = [
    "seq_p50_ms",
    "seq_p99_ms",
    "seq_rps",
    "conc_rps",
    "first_p50_ms",
    "ping_rps",
    "peak_rss_mib",
    "conn_peak_rss_mib",
]


def parse(paths):
    rows = defaultdict(lambda: defaultdict(list))
    order = []
    header = []
    for path in paths:
        for line in open(path):
            line = line.strip()
            if line.startswith("#"):
                header.append(line)
                continue
            if not line.startswith("impl="):
                continue
            kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
            key = (kv["impl"], kv["mode"], int(kv["workers"]), kv["client"], kv.get("build", "release"))
            if key not in order:
                order.append(key)
            for f in FIELDS:
                if f in kv:
                    rows[key][f].append(float(kv[f]))
    return header, order, rows


def med(rows, key, field):
    vals = rows[key].get(field, [])
    return statistics.median(vals) if vals else None


def fmt(x, unit=""):
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:,.0f}{unit}"
    if x >= 1:
        return f"{x:.1f}{unit}"
    return f"{x:.2f}{unit}"


def label(key):
    impl, mode, workers, _, build = key
    if impl == "langgraph":
        return "langgraph dev"
    debug = " (debug build)" if build == "dev" else ""
    if mode == "embedded":
        return f"weir serve, embedded{debug}"
    return f"weir serve, PostgreSQL + Redis, {workers} worker{'s' if workers > 1 else ''}{debug}"


def short(key):
    """The chart's label: `label` in a few words."""
    impl, mode, workers, _, build = key
    debug = " (debug)" if build == "dev" else ""
    if impl == "langgraph":
        return "langgraph dev"
    return f"weir embedded{debug}" if mode == "embedded" else f"weir PG + Redis, {workers} w{debug}"


def table(order, rows):
    base = {c: med(rows, k, "conc_rps") for k in order if k[0] == "langgraph" for c in [k[3]]}
    lines = [
        "| server | client | runs.wait p50 ms | p99 ms | sequential runs/s | runs/s, 100 at once "
        "| × langgraph dev | first event p50 ms | `GET /ok`/s, 100 at once | peak RSS MiB, 10,000 idle threads "
        "| peak RSS MiB, 5,000 open connections |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in order:
        conc = med(rows, key, "conc_rps")
        lg = base.get(key[3])
        ratio = f"{conc / lg:,.0f}×" if conc and lg and conc / lg >= 10 else f"{conc / lg:.2g}×" if conc and lg else "–"
        ratio = "–" if key[0] == "langgraph" else ratio
        lines.append(
            f"| {label(key)} | {key[3]} | {fmt(med(rows, key, 'seq_p50_ms'))} | {fmt(med(rows, key, 'seq_p99_ms'))} "
            f"| {fmt(med(rows, key, 'seq_rps'))} | {fmt(conc)} | {ratio} | {fmt(med(rows, key, 'first_p50_ms'))} "
            f"| {fmt(med(rows, key, 'ping_rps'))} "
            f"| {fmt(med(rows, key, 'peak_rss_mib'))} | {fmt(med(rows, key, 'conn_peak_rss_mib'))} |"
        )
    return "\n".join(lines)


def svg(order, rows) -> str:
    keys = [k for k in order if k[3] == "load"]
    panels = [
        ("runs/s, 100 at once (higher is better)", "conc_rps"),
        ("runs.wait p50, ms (lower is better)", "seq_p50_ms"),
        ("first streamed event p50, ms (lower is better)", "first_p50_ms"),
    ]
    bar_h, gap, left, width, panel_w = 18, 6, 290, 1000, 220
    top = 50
    height = top + len(keys) * (bar_h + gap) + 40
    colors = {"weir": "#2f6fb3", "langgraph": "#c8553d"}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        '<text x="10" y="20" font-size="14" font-weight="bold">weir serve and langgraph dev on the anchor graphs '
        "(native load generator; log scales)</text>",
    ]
    for i, key in enumerate(keys):
        y = top + i * (bar_h + gap)
        out.append(f'<text x="10" y="{y + 13}">{short(key)}</text>')
    for p, (title, field) in enumerate(panels):
        x0 = left + p * (panel_w + 10)
        vals = [med(rows, k, field) for k in keys]
        present = [v for v in vals if v]
        if not present:
            continue
        lo = 10 ** math.floor(math.log10(min(present))) / 1.0
        hi = 10 ** math.ceil(math.log10(max(present)))
        if hi <= lo:
            hi = lo * 10
        span = math.log10(hi) - math.log10(lo)
        out.append(f'<text x="{x0}" y="{top - 12}" font-size="11">{title}</text>')
        for i, (key, v) in enumerate(zip(keys, vals)):
            y = top + i * (bar_h + gap)
            if not v:
                continue
            w = max(2.0, (math.log10(v) - math.log10(lo)) / span * (panel_w - 50))
            out.append(f'<rect x="{x0}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colors[key[0]]}"/>')
            out.append(f'<text x="{x0 + w + 3:.1f}" y="{y + 13}" font-size="10">{fmt(v)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    svg_path = None
    if "--svg" in argv:
        i = argv.index("--svg")
        svg_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    header, order, rows = parse(argv)
    print("\n".join(header))
    print()
    print(table(order, rows))
    if svg_path:
        with open(svg_path, "w") as f:
            f.write(svg(order, rows))


if __name__ == "__main__":
    main(sys.argv[1:])
