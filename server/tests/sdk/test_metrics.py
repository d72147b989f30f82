"""`GET /metrics` (README §1.2 tier C): Prometheus's text by default, LangGraph's JSON snapshot
with `?format=json`; the queue, this process's workers and the HTTP requests by route."""

import re

import pytest


async def test_metrics_count_requests_by_route_and_show_the_queue(client, raw):
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "chain", input={"topic": "m"})
    snapshot = (await raw.get("/metrics", params={"format": "json"})).json()
    assert set(snapshot) == {"queue", "api", "workers"}
    assert set(snapshot["queue"]) == {
        "n_pending", "n_running", "pending_runs_wait_time_max_secs", "pending_runs_wait_time_med_secs",
        "pending_unblocked_runs_wait_time_max_secs",
    }
    assert snapshot["queue"]["n_pending"] >= 0 and snapshot["queue"]["n_running"] >= 0
    workers = snapshot["workers"]
    assert workers["max"] == workers["active"] + workers["available"] and workers["max"] > 0
    waits = {(r["method"], r["path"], r["status"]): r["count"] for r in snapshot["api"]["http_requests_total"]}
    assert waits[("POST", "/threads/{thread_id}/runs/wait", 200)] >= 1
    assert waits[("POST", "/threads", 200)] >= 1
    # No URL is a series of its own.
    assert not any(thread["thread_id"] in path for _, path, _ in waits)


@pytest.mark.weir_only  # langgraph dev 0.16.7's text format has no lg_api_* series (its platform's has)
async def test_metrics_text_names_the_series_as_langgraphs_platform(client, raw):
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "chain", input={"topic": "m"})
    text = await raw.get("/metrics")
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    body = text.text
    for name in ["lg_api_workers_max", "lg_api_workers_active", "lg_api_workers_available",
                 "lg_api_num_pending_runs", "lg_api_num_running_runs", "lg_api_http_requests_total",
                 "lg_api_http_requests_latency", "process_resident_memory_bytes"]:
        assert f"# TYPE {name} " in body, name
    line = re.search(r'^lg_api_http_requests_total\{method="POST",path="/threads/\{thread_id\}/runs/wait",status="200"\} (\S+)$', body, re.M)
    assert line and float(line.group(1)) >= 1
    inf = re.search(r'^lg_api_http_requests_latency_bucket\{method="POST",path="/threads/\{thread_id\}/runs/wait",le="\+Inf"\} (\S+)$', body, re.M)
    count = re.search(r'^lg_api_http_requests_latency_count\{method="POST",path="/threads/\{thread_id\}/runs/wait"\} (\S+)$', body, re.M)
    assert inf and count and inf.group(1) == count.group(1)

    before = float(line.group(1))
    await client.runs.wait(thread["thread_id"], "chain", input={"topic": "n"})
    after = re.search(r'^lg_api_http_requests_total\{method="POST",path="/threads/\{thread_id\}/runs/wait",status="200"\} (\S+)$', (await raw.get("/metrics")).text, re.M)
    assert float(after.group(1)) == before + 1
