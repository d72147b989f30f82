"""Bad input gets a clear `{"detail": ...}` error, never a crash: malformed JSON, unknown ids,
wrong types, a resume with nothing paused, an oversized body, and a client that goes away
mid-stream under each `on_disconnect`."""

import uuid

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import Command

from conftest import URL, assistant_id


async def test_malformed_json_is_422(raw):
    r = await raw.post("/threads", content=b'{"metadata": ', headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "detail" in r.json()


async def test_text_plain_json_body_is_accepted(raw):
    r = await raw.post("/threads", content=b'{"metadata": {"via": "text"}}', headers={"content-type": "text/plain"})
    assert r.status_code == 200 and r.json()["metadata"] == {"via": "text"}


async def error_of(call):
    """The status and JSON body of the error `call` raised (`runs.wait` raises httpx's own)."""
    try:
        await call
    except httpx.HTTPStatusError as e:
        return e.response.status_code, e.response.json()
    except Exception as e:  # the SDK's typed errors
        return e.response.status_code, e.response.json()
    raise AssertionError("the call succeeded")


async def test_unknown_thread_is_404(client):
    status, body = await error_of(client.runs.wait(str(uuid.uuid4()), "chain", input={"topic": "x"}))
    assert (status, body) == (404, {"detail": "Thread or assistant not found."})


async def test_unknown_assistant_is_404(client, thread):
    status, body = await error_of(client.runs.wait(thread["thread_id"], str(uuid.uuid4()), input={"topic": "x"}))
    assert status == 404 and "not found" in body["detail"].lower()


async def test_unknown_graph_name_as_assistant_is_422_naming_it(client, thread):
    status, body = await error_of(client.runs.wait(thread["thread_id"], "no_such_graph", input={"topic": "x"}))
    assert status == 422 and "no_such_graph" in body["detail"]


async def test_wrong_type_body_field_is_422_naming_it(raw, thread):
    r = await raw.post("/threads/search", json={"limit": "many"})
    assert r.status_code == 422
    assert "limit" in r.text


async def test_wrong_type_run_field_is_422_naming_it(raw, thread):
    r = await raw.post(f"/threads/{thread['thread_id']}/runs/wait",
                       json={"assistant_id": "chain", "input": {"topic": "x"}, "stream_mode": 5})
    assert r.status_code == 422
    assert "stream_mode" in r.text


@pytest.mark.weir_only  # the real server does not check input against the graph's state schema
async def test_wrong_type_input_is_422_naming_the_field(raw, thread):
    r = await raw.post(f"/threads/{thread['thread_id']}/runs/wait",
                       json={"assistant_id": "chain", "input": {"topic": 5}})
    assert r.status_code == 422
    assert "topic" in r.json()["detail"]


async def test_resume_with_nothing_interrupted(client, thread):
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chain", input={"topic": "x"})
    # the real server runs the command against a finished thread: nothing changes
    try:
        out = await client.runs.wait(tid, "chain", command=Command(resume="yes"))
    except Exception as e:  # weir refuses it (409/422), naming the thread's state
        assert getattr(e, "status_code", None) in (400, 409, 422), repr(e)
        return
    assert out == {"topic": "x", "log": ["a:x", "b"]}


@pytest.mark.weir_only  # langgraph dev has no body limit
async def test_oversized_body_is_413(raw):
    r = await raw.post("/threads", json={"metadata": {"blob": "x" * (16 * 1024 * 1024)}})
    assert r.status_code == 413
    assert "detail" in r.json()


async def disconnect_after_first_event(tid, on_disconnect):
    """Starts a `slow` run's stream and drops the connection after its first event."""
    async with httpx.AsyncClient(base_url=URL, timeout=30.0) as c:
        async with c.stream("POST", f"/threads/{tid}/runs/stream", json={
                "assistant_id": "slow", "input": {"topic": "d"}, "stream_mode": "values",
                "on_disconnect": on_disconnect}) as r:
            assert r.status_code == 200
            rid = r.headers["content-location"].rsplit("/", 1)[1]
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    break
    return rid


async def final_status(client, tid, rid):
    """The run's status once it has ended (`runs.join` returns then)."""
    await client.runs.join(tid, rid)
    return (await client.runs.get(tid, rid))["status"]


async def test_disconnect_with_on_disconnect_cancel_stops_the_run(client, thread):
    tid = thread["thread_id"]
    rid = await disconnect_after_first_event(tid, "cancel")
    assert await final_status(client, tid, rid) == "interrupted"
    assert "slow:d" not in ((await client.threads.get_state(tid))["values"] or {}).get("log", [])


async def test_disconnect_with_on_disconnect_continue_finishes_the_run(client, thread):
    tid = thread["thread_id"]
    rid = await disconnect_after_first_event(tid, "continue")
    assert await final_status(client, tid, rid) == "success"
    assert (await client.threads.get_state(tid))["values"]["log"] == ["slow:d"]
