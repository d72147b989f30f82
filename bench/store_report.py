"""Side-by-side table of bench/store.sh's JSON lines (stdin): for each operation and backend,
weir's time per call beside LangGraph's on the same data, and the ratio: each weir backend
beside LangGraph's store of the same kind, and weir's SQLite store also beside LangGraph's
InMemoryStore (the issue's pairing: LangGraph's embedded default)."""

import json
import sys

OPS = ["put", "get", "search_namespace", "search_all", "list_namespaces"]
PAIRS = [("memory", "memory"), ("sqlite", "sqlite"), ("sqlite", "memory"), ("postgres", "postgres")]
NAMES = {"memory": "InMemoryStore", "sqlite": "SqliteStore", "postgres": "PostgresStore"}


def main():
    rows = {}
    for line in sys.stdin:
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["impl"], r["backend"], r["op"])] = r
    print("| operation | weir backend | weir µs/call | LangGraph store | LangGraph µs/call | speed-up | same results |")
    print("|---|---|---:|---|---:|---:|---|")
    for op in OPS:
        for ours, theirs in PAIRS:
            w = rows.get(("weir", ours, op))
            l = rows.get(("langgraph", theirs, op))
            if not w:
                continue
            wu = w["seconds"] / w["count"] * 1e6
            name = NAMES[theirs]
            if l:
                lu = l["seconds"] / l["count"] * 1e6
                same = "yes" if l["found"] == w["found"] else f"no ({w['found']} vs {l['found']})"
                print(f"| {op} | {ours} | {wu:,.1f} | {name} | {lu:,.1f} | {lu / wu:,.1f}x | {same} |")
            else:
                print(f"| {op} | {ours} | {wu:,.1f} | {name} | – | – | – |")
    for ours, theirs in PAIRS:
        if ours != theirs:
            continue
        w = rows.get(("weir", ours, "peak_rss_kib"))
        l = rows.get(("langgraph", theirs, "peak_rss_kib"))
        if w:
            lv = f"{l['value'] / 1024:,.0f} MiB" if l else "–"
            name = NAMES[theirs] if l else "–"
            print(f"| peak RSS (process) | {ours} | {w['value'] / 1024:,.0f} MiB | {name} | {lv} | | |")

if __name__ == "__main__":
    main()
