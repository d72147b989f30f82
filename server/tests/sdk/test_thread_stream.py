"""A thread's own stream (`GET /threads/{thread_id}/stream`, README §1.2 tier C): every run made on
the thread, one after the other, each closed by `metadata` `{"status": "run_done"}`, and the
thread's state edits (`state_update`), for as long as the client listens."""

import asyncio
import json

import pytest

from conftest import Listener


async def sse_parts(raw, path, params=(), headers=None):
    """An SSE stream read with plain httpx, as `(event, data, id)` triples: for the parameters the
    SDK does not send."""
    async with raw.stream("GET", path, params=list(params), headers=headers or {}, timeout=None) as r:
        assert r.status_code == 200, await r.aread()
        event, data, id_ = None, None, None
        async for line in r.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line.startswith("id: "):
                id_ = line[4:]
            elif line == "" and event is not None:
                yield (event, data, id_)
                event, data, id_ = None, None, None


def run_done(run_id):
    return ("metadata", {"status": "run_done", "run_id": run_id})


def ends(parts):
    return [p for p in parts if p[0] == "metadata" and p[1].get("status") == "run_done"]


async def test_a_thread_stream_sends_each_run_then_its_end(client, thread):
    tid = thread["thread_id"]
    listener = Listener(await client.threads.join_stream(tid))
    await asyncio.sleep(0.3)  # the stream is open before the runs are made
    first = await client.runs.create(tid, "chain", input={"topic": "a"}, stream_mode=["values", "updates"])
    first_values = await client.runs.join(tid, first["run_id"])
    second = await client.runs.create(tid, "chain", input={"topic": "b"})
    await client.runs.join(tid, second["run_id"])
    parts = await listener.until(lambda ps: len(ends([(p.event, p.data) for p in ps])) == 2)
    await listener.stop()

    seen = [(p.event, p.data) for p in parts]
    assert seen[0] == ("metadata", {"run_id": first["run_id"], "attempt": 1})
    at_second = seen.index(("metadata", {"run_id": second["run_id"], "attempt": 1}))
    assert seen[at_second - 1] == run_done(first["run_id"])
    assert seen[-1] == run_done(second["run_id"])
    # Each run's own modes: values and updates for the first, values (the default) for the second.
    assert {e for e, _ in seen[1:at_second - 1]} == {"values", "updates"}
    assert {e for e, _ in seen[at_second + 1:-1]} == {"values"}
    assert seen[at_second - 2] == ("values", first_values)
    assert all(p.id for p in parts), parts


async def test_lifecycle_and_state_update_modes(client, thread, raw):
    tid = thread["thread_id"]
    listener = Listener(sse_parts(raw, f"/threads/{tid}/stream", [("stream_modes", "lifecycle,state_update")]))
    await asyncio.sleep(0.3)
    run = await client.runs.create(tid, "chain", input={"topic": "c"})
    await client.runs.join(tid, run["run_id"])
    await client.threads.update_state(tid, {"topic": "edited"})
    parts = await listener.until(lambda ps: len(ps) == 3)
    await listener.stop()

    # The run's start and end, and the edit (which LangGraph may send before the run's end).
    assert [(e, d) for e, d, _ in parts if e == "metadata"] == [
        ("metadata", {"run_id": run["run_id"], "attempt": 1}),
        run_done(run["run_id"]),
    ]
    edits = [(e, d) for e, d, _ in parts if e != "metadata"]
    assert len(edits) == 1
    event, data = edits[0]
    assert event == "state_update"
    assert data["thread_id"] == tid
    state = await client.threads.get_state(tid)
    assert data["state"]["values"] == state["values"] and data["state"]["values"]["topic"] == "edited"
    assert data["state"]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    assert data["state"]["metadata"]["source"] == "update"


@pytest.mark.weir_only
async def test_the_sdks_stream_mode_picks_the_events(client, thread):
    # LangGraph's server reads `stream_modes` and passes over the SDK's `stream_mode`.
    tid = thread["thread_id"]
    listener = Listener(await client.threads.join_stream(tid, stream_mode="lifecycle"))
    await asyncio.sleep(0.3)
    run = await client.runs.create(tid, "chain", input={"topic": "d"})
    await client.runs.join(tid, run["run_id"])
    parts = await listener.until(lambda ps: len(ps) == 2)
    await listener.stop()
    assert [(p.event, p.data) for p in parts] == [
        ("metadata", {"run_id": run["run_id"], "attempt": 1}),
        run_done(run["run_id"]),
    ]


@pytest.mark.weir_only
async def test_a_client_that_comes_back_gets_what_it_missed_once(client, thread, raw):
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "chain", input={"topic": "e"})
    await client.runs.join(tid, first["run_id"])
    second = await client.runs.create(tid, "chain", input={"topic": "f"})
    await client.runs.join(tid, second["run_id"])

    # `-1`: everything still kept, both runs in order.
    listener = Listener(sse_parts(raw, f"/threads/{tid}/stream", headers={"Last-Event-ID": "-1"}))
    everything = await listener.until(lambda ps: len(ends([(e, d) for e, d, _ in ps])) == 2)
    await asyncio.sleep(0.3)
    await listener.stop()
    assert len(listener.parts_seen) == len(everything)  # nothing twice
    assert [(e, d) for e, d, _ in everything][0] == ("metadata", {"run_id": first["run_id"], "attempt": 1})
    ids = [i for _, _, i in everything]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))

    # After the first run's end: the second run only, its end once.
    first_end = next(i for e, d, i in everything if d == run_done(first["run_id"])[1])
    listener = Listener(sse_parts(raw, f"/threads/{tid}/stream", headers={"Last-Event-ID": first_end}))
    rest = await listener.until(lambda ps: len(ends([(e, d) for e, d, _ in ps])) == 1)
    await asyncio.sleep(0.3)
    await listener.stop()
    assert rest == everything[everything.index(next(p for p in everything if p[2] == first_end)) + 1:]
    assert len(listener.parts_seen) == len(rest)

    # A run made now reaches a client that came back.
    listener = Listener(sse_parts(raw, f"/threads/{tid}/stream", headers={"Last-Event-ID": everything[-1][2]}))
    await asyncio.sleep(0.3)
    third = await client.runs.create(tid, "chain", input={"topic": "g"})
    parts = await listener.until(lambda ps: len(ends([(e, d) for e, d, _ in ps])) == 1)
    await listener.stop()
    assert (parts[0][0], parts[0][1]) == ("metadata", {"run_id": third["run_id"], "attempt": 1})


@pytest.mark.weir_only
async def test_a_thread_stream_refuses_what_it_cannot_serve(raw, thread):
    tid = thread["thread_id"]
    missing = await raw.get("/threads/00000000-0000-0000-0000-000000000000/stream")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "Thread 00000000-0000-0000-0000-000000000000 not found"
    assert (await raw.get("/threads/nope/stream")).status_code == 422
    bad_mode = await raw.get(f"/threads/{tid}/stream", params={"stream_mode": "values"})
    assert bad_mode.status_code == 422 and "query parameter `stream_mode`" in bad_mode.json()["detail"]
    assert "`values`" in bad_mode.json()["detail"]
    bad_id = await raw.get(f"/threads/{tid}/stream", headers={"Last-Event-ID": "yesterday"})
    assert bad_id.status_code == 422 and "header `Last-Event-ID`" in bad_id.json()["detail"]
