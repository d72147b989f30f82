"""Side-by-side table of bench/store.sh's JSON lines (stdin): for each operation and backend,
weir's time per call beside LangGraph's on the same data, and the ratio. weir's SQLite store is
set beside LangGraph's InMemoryStore (LangGraph's embedded default here); PostgreSQL beside
PostgresStore."""

import json
import sys

OPS = ["put", "get", "search_namespace", "search_all", "list_namespaces"]
PAIRS = [("memory", "memory"), ("sqlite", "memory"), ("postgres", "postgres")]


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
            name = {"memory": "InMemoryStore", "postgres": "PostgresStore"}[theirs]
            if l:
                lu = l["seconds"] / l["count"] * 1e6
                same = "yes" if l["found"] == w["found"] else f"no ({w['found']} vs {l['found']})"
                print(f"| {op} | {ours} | {wu:,.1f} | {name} | {lu:,.1f} | {lu / wu:,.1f}x | {same} |")
            else:
                print(f"| {op} | {ours} | {wu:,.1f} | {name} | – | – | – |")
    for ours, theirs in PAIRS:
        w = rows.get(("weir", ours, "peak_rss_kib"))
        l = rows.get(("langgraph", theirs, "peak_rss_kib")) if ours != "sqlite" else None
        if w:
            lv = f"{l['value'] / 1024:,.0f} MiB" if l else "–"
            name = {"memory": "InMemoryStore", "postgres": "PostgresStore"}[theirs] if l else "–"
            print(f"| peak RSS (process) | {ours} | {w['value'] / 1024:,.0f} MiB | {name} | {lv} | | |")

if __name__ == "__main__":
    main()
