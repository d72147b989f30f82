#!/usr/bin/env python3
"""The eight workloads of WORKLOADS.md on LangGraph 1.2.9 (sync ``graph.invoke``).

weir's own copy of the Python side, so that ``bench/compare.sh`` runs both on the same sizes
and flags. Same protocol as the Rust harness (``benches/weir_bench.rs``): build and compile
untimed (checkpoint workloads: a fresh saver and graph per invocation, schema created), one
verified warm-up, R timed invocations (``time.perf_counter`` around ``invoke`` only,
``gc.collect()`` before each), every output verified, then one line

    workload=<name> size=<n> median_ms=<x> min_ms=<y> per_unit_us=<z> unit=<u> units=<k> runs_ms=...

and ``peak_rss_kb=<n>`` (getrusage) at exit. Exit status 1 when a check fails.

Usage: langgraph_workloads.py WORKLOAD [SIZE] [--repeat R] [--durability sync|async|exit]
                              [--sqlite-synchronous OFF|NORMAL|FULL]
"""

from __future__ import annotations

import argparse
import gc
import operator
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Annotated, Any, Callable

from typing_extensions import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

THREAD = "bench"


class Failed(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Failed(msg)


# ------------------------------------------------------------------ states


class Count(TypedDict):
    count: int


class Fan(TypedDict):
    items: Annotated[list[int], operator.add]
    total: int


class MapReduce(TypedDict):
    n: int
    results: Annotated[list[int], operator.add]
    total: int


class Grow(TypedDict):
    count: int
    items: Annotated[list[str], operator.add]


K_FIELDS, PER_NODE = 100, 10
Wide = TypedDict(  # type: ignore[misc]
    "Wide", {**{f"f{k}": int for k in range(K_FIELDS)}, "log": Annotated[list[int], operator.add]}
)


def item(k: int) -> str:
    return f"{k:06d}" + "x" * 94


# ------------------------------------------------------------------ graphs


def inc(s: dict) -> dict:
    return {"count": s["count"] + 1}


def g_sequential(n: int):
    b = StateGraph(Count)
    prev = START
    for i in range(n):
        b.add_node(f"n{i}", inc)
        b.add_edge(prev, f"n{i}")
        prev = f"n{i}"
    b.add_edge(prev, END)
    return b.compile()


MERGES = [0]


def g_fanout(w: int):
    b = StateGraph(Fan)
    b.add_node("split", lambda s: {})
    names = [f"w{i}" for i in range(w)]
    for i, name in enumerate(names):
        b.add_node(name, (lambda i: lambda s: {"items": [i]})(i))
        b.add_edge("split", name)

    def merge(s: dict) -> dict:
        MERGES[0] += 1
        return {"total": sum(s["items"])}

    b.add_node("merge", merge)
    b.add_edge(START, "split")
    b.add_edge(names, "merge")  # waiting edge
    b.add_edge("merge", END)
    return b.compile()


def g_send():
    b = StateGraph(MapReduce)
    b.add_node("plan", lambda s: {})
    b.add_node("work", lambda a: {"results": [a["i"] * a["i"]]})
    b.add_node("reduce", lambda s: {"total": sum(s["results"])})
    b.add_edge(START, "plan")
    b.add_conditional_edges("plan", lambda s: [Send("work", {"i": i}) for i in range(s["n"])], ["work"])
    b.add_edge("work", "reduce")
    b.add_edge("reduce", END)
    return b.compile()


def g_loop(m: int, step=inc, state=Count, checkpointer=None):
    b = StateGraph(state)
    b.add_node("a", step)
    b.add_node("b", step)
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_conditional_edges("b", lambda s: END if s["count"] >= m else "a", ["a", END])
    return b.compile(checkpointer=checkpointer)


def grow_step(s: dict) -> dict:
    c = s["count"]
    return {"count": c + 1, "items": [item(c)]}


def g_wide(n: int):
    b = StateGraph(Wide)

    def node(j: int):
        names = [f"f{(PER_NODE * j + k) % K_FIELDS}" for k in range(PER_NODE)]

        def run(s: dict) -> dict:
            u: dict[str, Any] = {f: s[f] + 1 for f in names}
            u["log"] = [j]
            return u

        return run

    prev = START
    for j in range(n):
        b.add_node(f"n{j}", node(j))
        b.add_edge(prev, f"n{j}")
        prev = f"n{j}"
    b.add_edge(prev, END)
    return b.compile()


# ------------------------------------------------------------------ workloads
# Each returns (unit, units, prepare(r) -> (graph, input, config, after), verify(out, after) -> facts)


def lexicographic(w: int) -> list[int]:
    return sorted(range(w), key=lambda i: f"w{i}")


def wl_sequential(n: int, o):
    g = g_sequential(n)

    def verify(out, _):
        check(out == {"count": n}, f"sequential: {out}")
        return {}

    return "node", n, lambda r: (g, {"count": 0}, {"recursion_limit": n + 10}, None), verify


def wl_fanout(w: int, o):
    g = g_fanout(w)
    seen: list = []

    def prep(r):
        MERGES[0] = 0
        return g, {"items": [], "total": 0}, {"recursion_limit": 25}, None

    def verify(out, _):
        check(MERGES[0] == 1, f"fanout: merge ran {MERGES[0]} times")
        check(out["total"] == w * (w - 1) // 2, f"fanout: total {out['total']}")
        check(sorted(out["items"]) == list(range(w)), "fanout: not a permutation")
        seen.append(out["items"])
        check(seen[0] == out["items"], "fanout: order differs between runs")
        order = (
            "numeric" if out["items"] == list(range(w))
            else "node_name_lexicographic" if out["items"] == lexicographic(w) else "other"
        )
        return {"items_order": order}

    return "node", w + 2, prep, verify


def wl_send(w: int, o):
    g = g_send()

    def verify(out, _):
        check(out["total"] == (w - 1) * w * (2 * w - 1) // 6, f"send: total {out['total']}")
        check(out["results"] == [i * i for i in range(w)], "send: results not the squares in Send order")
        return {"results_order": "send_order"}

    return "node", w + 2, lambda r: (g, {"n": w, "results": [], "total": 0}, {"recursion_limit": 25}, None), verify


def wl_loop(m: int, o):
    check(m % 2 == 0, "M must be even")
    g = g_loop(m)

    def verify(out, _):
        check(out == {"count": m}, f"loop: {out}")
        return {}

    return "superstep", m, lambda r: (g, {"count": 0}, {"recursion_limit": m + 10}, None), verify


def wl_wide(n: int, o):
    check(n % 10 == 0, "N must be a multiple of 10")
    g = g_wide(n)
    inp = {**{f"f{k}": 0 for k in range(K_FIELDS)}, "log": []}

    def verify(out, _):
        want = n * PER_NODE // K_FIELDS
        check(all(out[f"f{k}"] == want for k in range(K_FIELDS)), "wide: a field is off")
        check(out["log"] == list(range(n)), "wide: log")
        return {}

    return "node", n, lambda r: (g, dict(inp), {"recursion_limit": n + 10}, None), verify


def cfg(m: int) -> dict:
    return {"configurable": {"thread_id": THREAD}, "recursion_limit": m + 10}


def expected_checkpoints(m: int, o) -> int:
    return 1 if o.durability == "exit" else m + 2


def wl_ckpt_memory(m: int, o):
    check(m % 2 == 0, "M must be even")

    def prep(r):
        saver = InMemorySaver()
        g = g_loop(m, checkpointer=saver)
        return g, {"count": 0}, cfg(m), (g, saver)

    def verify(out, after):
        g, saver = after
        check(out == {"count": m}, f"checkpoint_memory: {out}")
        snap = g.get_state(cfg(m))
        check(snap.values == {"count": m} and snap.next == (), f"saved state {snap.values} next {snap.next}")
        n = sum(len(v) for v in saver.storage[THREAD].values())
        check(n == expected_checkpoints(m, o), f"{n} checkpoints")
        return {"checkpoints": n}

    return "superstep", m, prep, verify


def new_sqlite(o, r: int):
    path = os.path.join(o.tmpdir, f"run{r}.sqlite")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(path + sfx):
            os.remove(path + sfx)
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()  # schema + WAL, untimed
    if o.sqlite_synchronous:
        conn.execute(f"PRAGMA synchronous={o.sqlite_synchronous}")
    return saver, path


def sqlite_facts(saver, path: str) -> dict:
    c = saver.conn.cursor()
    one = lambda q: c.execute(q).fetchone()[0]  # noqa: E731
    facts = {
        "sqlite_checkpoint_rows": one("SELECT count(*) FROM checkpoints"),
        "sqlite_write_rows": one("SELECT count(*) FROM writes"),
        "checkpoint_blob_bytes": one("SELECT coalesce(sum(length(checkpoint)),0) FROM checkpoints"),
        "max_checkpoint_blob_bytes": one("SELECT coalesce(max(length(checkpoint)),0) FROM checkpoints"),
        "write_blob_bytes": one("SELECT coalesce(sum(length(value)),0) FROM writes"),
        "sqlite_synchronous": one("PRAGMA synchronous"),
        "sqlite_journal_mode": one("PRAGMA journal_mode"),
    }
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    facts["db_file_bytes"] = os.path.getsize(path)
    saver.conn.close()
    return facts


def wl_sqlite(m: int, o, grow: bool = False):
    check(m % 2 == 0, "M must be even")

    def prep(r):
        saver, path = new_sqlite(o, r)
        if grow:
            g = g_loop(m, step=grow_step, state=Grow, checkpointer=saver)
            inp = {"count": 0, "items": []}
        else:
            g = g_loop(m, checkpointer=saver)
            inp = {"count": 0}
        return g, inp, cfg(m), (g, saver, path)

    def verify(out, after):
        g, saver, path = after
        check(out["count"] == m, f"count {out['count']}")
        snap = g.get_state(cfg(m))
        check(snap.next == (), "saved state not finished")
        if grow:
            check(out["items"] == [item(k) for k in range(m)], "items")
            check(snap.values["items"] == out["items"], "saved items differ")
        else:
            check(snap.values == {"count": m}, f"saved {snap.values}")
        n = saver.conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id=?", (THREAD,)).fetchone()[0]
        check(n == expected_checkpoints(m, o), f"{n} checkpoints")
        return {"checkpoints": n, **sqlite_facts(saver, path)}

    return "superstep", m, prep, verify


# ------------------------------------------------------------------ functional API (issue 26)
from langgraph.func import entrypoint, task  # noqa: E402


@task
def bump(i: int) -> int:
    return i + 1


def wl_func(n: int, o, parallel: bool, sqlite: bool):
    """An entrypoint calling `n` tasks one after the other, or starting all before awaiting any;
    with `sqlite`, on a fresh SQLite file (every call's result saved as a pending write)."""

    def body(k: int) -> int:
        if parallel:
            futures = [bump(i) for i in range(k)]
            return sum(f.result() for f in futures)
        return sum(bump(i).result() for i in range(k))

    want = n * (n + 1) // 2

    def prep(r):
        saver, path = new_sqlite(o, r) if sqlite else (None, None)
        g = entrypoint(checkpointer=saver)(body) if sqlite else entrypoint()(body)
        return g, n, {"configurable": {"thread_id": THREAD}}, (saver, path)

    def verify(out, after):
        check(out == want, f"sum {out}, want {want}")
        saver, path = after
        return sqlite_facts(saver, path) if saver else {}

    return "task", n, prep, verify


WORKLOADS: dict[str, tuple[int, Callable]] = {
    "sequential": (1000, wl_sequential),
    "fanout": (1000, wl_fanout),
    "send_map_reduce": (1000, wl_send),
    "loop": (10000, wl_loop),
    "wide_state": (1000, wl_wide),
    "checkpoint_memory": (1000, wl_ckpt_memory),
    "checkpoint_sqlite": (1000, wl_sqlite),
    "checkpoint_growing_state": (1000, lambda m, o: wl_sqlite(m, o, grow=True)),
    "func_sequential": (1000, lambda n, o: wl_func(n, o, parallel=False, sqlite=False)),
    "func_parallel": (1000, lambda n, o: wl_func(n, o, parallel=True, sqlite=False)),
    "func_sequential_sqlite": (1000, lambda n, o: wl_func(n, o, parallel=False, sqlite=True)),
    "func_parallel_sqlite": (1000, lambda n, o: wl_func(n, o, parallel=True, sqlite=True)),
}


# ------------------------------------------------------------------ driver

_PEAK = [0]


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def reset_hwm() -> bool:
    _PEAK[0] = max(_PEAK[0], _maxrss())
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def read_hwm() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    kb = int(line.split()[1])
                    _PEAK[0] = max(_PEAK[0], kb)
                    return kb
    except OSError:
        pass
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("size", nargs="?", type=int)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--durability", choices=["sync", "async", "exit"])
    ap.add_argument("--sqlite-synchronous", choices=["OFF", "NORMAL", "FULL"])
    o = ap.parse_args()
    if o.workload not in WORKLOADS:
        print(f"unknown workload {o.workload!r}; known: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    default, make = WORKLOADS[o.workload]
    n = o.size or default
    rc = 0
    with tempfile.TemporaryDirectory(prefix="weir-lg-") as tmp:
        o.tmpdir = tmp
        try:
            unit, units, prep, verify = make(n, o)
            kwargs = {"durability": o.durability} if o.durability else {}
            times, facts, peak = [], {}, None
            for r in range(o.repeat + 1):
                g, inp, config, after = prep(r)
                gc.collect()
                can = reset_hwm()
                t0 = time.perf_counter()
                out = g.invoke(inp, config, **kwargs)
                t1 = time.perf_counter()
                if can:
                    hwm = read_hwm()
                    peak = max(peak or 0, hwm or 0)
                facts = verify(out, after)
                if r > 0:
                    times.append((t1 - t0) * 1000)
            med = statistics.median(times)
            fields = [
                f"workload={o.workload}", f"size={n}", f"median_ms={med:.3f}", f"min_ms={min(times):.3f}",
                f"per_unit_us={med * 1000 / units:.3f}", f"unit={unit}", f"units={units}",
                "runs_ms=" + ",".join(f"{t:.3f}" for t in times),
            ]
            if o.workload.startswith("checkpoint"):
                fields.append(f"durability={o.durability or 'async'}")
            if peak:
                fields.append(f"invoke_peak_rss_kb={peak}")
            fields += [f"{k}={v}" for k, v in facts.items()]
            print(" ".join(fields), flush=True)
        except Failed as e:
            print(f"workload={o.workload} size={n} FAILED: {e}", flush=True)
            rc = 1
    print(f"peak_rss_kb={max(_PEAK[0], _maxrss())}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
