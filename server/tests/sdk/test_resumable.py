"""Resumable streams: `stream_resumable=True` numbers the events, and joining the run's stream
with `Last-Event-ID` replays what came after that id (README §1.4, raw_resume_resumable.sse)."""

import sse_norm


async def test_resumable_stream_has_ids_and_replays_after_last_event_id(client, raw):
    t = await client.threads.create()
    tid = t["thread_id"]
    parts = [p async for p in client.runs.stream(
        tid, "chain", input={"topic": "r"}, stream_mode="updates", stream_resumable=True)]
    parts = [p for p in parts if p.event != "end"]
    assert all(p.id for p in parts), [p.id for p in parts]
    assert [(p.event, p.data) for p in parts[1:]] == [
        ("updates", {"a": {"log": ["a:r"]}}), ("updates", {"b": {"log": ["b"]}})]
    rid = parts[0].data["run_id"]
    # the SDK's reconnect: GET the run's stream with Last-Event-ID
    after = [p async for p in client.runs.join_stream(tid, rid, last_event_id=parts[1].id)]
    after = [(p.event, p.data) for p in after if p.event not in ("end", "metadata")]
    assert after == [("updates", {"b": {"log": ["b"]}})]
    # useStream's -1: everything from the start
    r = await raw.get(f"/threads/{tid}/runs/{rid}/stream", headers={"Last-Event-ID": "-1"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    replay = [(e, d) for e, d, _ in sse_norm.parse(r.text) if e not in ("end", "metadata")]
    assert replay == [(p.event, p.data) for p in parts[1:]]


async def test_resumed_hitl_stream_matches_the_capture(client):
    from langgraph_sdk.schema import Command
    t = await client.threads.create()
    await client.runs.wait(t["thread_id"], "hitl", input={"topic": "z"})
    parts = [p async for p in client.runs.stream(
        t["thread_id"], "hitl", command=Command(resume="ok"), stream_mode="updates", stream_resumable=True)]
    parts = [p for p in parts if p.event != "end"]
    assert all(p.id for p in parts)
    got = [(p.event, p.data) for p in parts]
    diffs = sse_norm.diff_exact(sse_norm.capture("resume_resumable"), got)
    assert not diffs, "\n".join(diffs)


async def test_stream_headers(client, raw, thread):
    tid = thread["thread_id"]
    r = await raw.post(f"/threads/{tid}/runs/stream",
                       json={"assistant_id": "chain", "input": {"topic": "h"}, "stream_mode": "updates"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    rid = r.headers["content-location"].rsplit("/", 1)[1]
    assert r.headers["content-location"] == f"/threads/{tid}/runs/{rid}"
    assert r.headers["location"] == f"/threads/{tid}/runs/{rid}/stream"
    assert "\r\n" in r.text or "\n\n" in r.text
    events = sse_norm.parse(r.text)
    assert events[0][0] == "metadata" and events[0][1]["run_id"] == rid
