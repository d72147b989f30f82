"""The store benchmark's LangGraph side (bench/store.sh runs it beside weir's
runtime/examples/store_bench.rs): the same puts, gets, filtered searches and namespace listings
over the same 100,000 items, on LangGraph's InMemoryStore, SqliteStore (a file in a temporary
directory) or PostgresStore, one backend per process, printing one JSON line per operation and
the process's peak RSS.

    python bench/store_langgraph.py memory|sqlite|postgres [N]

PostgresStore uses WEIR_POSTGRES_URL, in a schema of its own that is dropped after.
"""

import json
import os
import resource
import sys
import time

from langgraph.store.base import PutOp

NAMESPACES = 100
BATCH = 1_000
GETS = 2_000
SEARCHES_IN_NAMESPACE = 200
SEARCHES_OVER_ALL = 20
LISTINGS = 100
KINDS = ["a", "b", "c", "d"]


def value(i):
    return {"i": i, "kind": KINDS[i % 4], "score": i % 1000, "text": f"item {i} of kind {KINDS[i % 4]}"}


def namespace(i):
    return ("bench", f"u{i % NAMESPACES}")


def report(backend, op, count, started, found):
    line = {"impl": "langgraph", "backend": backend, "op": op, "count": count,
            "seconds": time.perf_counter() - started, "found": found}
    print(json.dumps(line), flush=True)


def run(backend, store, n):
    started = time.perf_counter()
    for start in range(0, n, BATCH):
        store.batch([PutOp(namespace(i), f"k{i}", value(i)) for i in range(start, min(n, start + BATCH))])
    report(backend, "put", n, started, n)

    started = time.perf_counter()
    found = 0
    for j in range(GETS):
        i = (j * 7_919) % n
        found += store.get(namespace(i), f"k{i}") is not None
    report(backend, "get", GETS, started, found)

    flt = {"kind": "b", "score": {"$gte": 500}}
    started = time.perf_counter()
    found = 0
    for j in range(SEARCHES_IN_NAMESPACE):
        found += len(store.search(namespace(j), filter=flt, limit=10))
    report(backend, "search_namespace", SEARCHES_IN_NAMESPACE, started, found)

    started = time.perf_counter()
    found = 0
    for j in range(SEARCHES_OVER_ALL):
        found += len(store.search(("bench",), filter={"kind": "b", "score": {"$gte": 990 - j}}, limit=10))
    report(backend, "search_all", SEARCHES_OVER_ALL, started, found)

    started = time.perf_counter()
    found = 0
    for _ in range(LISTINGS):
        found += len(store.list_namespaces(prefix=("bench",), limit=100))
    report(backend, "list_namespaces", LISTINGS, started, found)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"impl": "langgraph", "backend": backend, "op": "peak_rss_kib", "count": 1, "value": peak}))


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "memory"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    if backend == "memory":
        from langgraph.store.memory import InMemoryStore
        run(backend, InMemoryStore(), n)
    elif backend == "sqlite":
        import tempfile
        from langgraph.store.sqlite import SqliteStore
        with tempfile.TemporaryDirectory() as tmp:
            with SqliteStore.from_conn_string(os.path.join(tmp, "store.db")) as store:
                store.setup()
                run(backend, store, n)
    elif backend == "postgres":
        import psycopg
        from langgraph.store.postgres import PostgresStore
        url = os.environ["WEIR_POSTGRES_URL"]
        schema = f"bench_langgraph_{os.getpid()}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
            try:
                sep = "&" if "?" in url else "?"
                with PostgresStore.from_conn_string(f"{url}{sep}options=-csearch_path%3D{schema}") as store:
                    store.setup()
                    run(backend, store, n)
            finally:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")
    else:
        sys.exit(f"unknown backend {backend!r}: use memory, sqlite or postgres")


if __name__ == "__main__":
    main()
