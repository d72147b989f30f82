"""LangGraph's thread-centric streaming protocol through the official client's
`client.threads.stream()` (langgraph-sdk 0.4.14), over SSE and over WebSocket: a run started by
`run.start`, its values, its model's messages, its tool calls, its subgraphs' lifecycle, an
interrupt answered with `run.respond`, and, on a raw WebSocket, the commands a socket takes
(`subscription.*`, `agent.getTree`) and what it answers to bad ones."""

import asyncio
import json
import uuid

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from conftest import URL, Listener

TRANSPORTS = ["sse", "websocket"]


async def events_of(thread):
    """The thread's protocol events; over a WebSocket, the SDK's own subscription's answer (an
    envelope with no `method`) comes among them, and is left out."""
    async for item in thread.events:
        if item.get("type") == "event":
            yield item


async def until_interrupted(thread, timeout=15.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not thread.interrupted:
        assert asyncio.get_running_loop().time() < deadline, "the run never asked"
        await asyncio.sleep(0.05)


def root_ended(events):
    return any(
        e["method"] == "lifecycle"
        and e["params"]["namespace"] == []
        and e["params"]["data"]["event"] in ("completed", "failed", "interrupted")
        for e in events
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_run_started_on_a_new_thread_ends_with_its_output_and_its_values(client, transport):
    async with client.threads.stream(assistant_id="chain", transport=transport) as thread:
        # Opened after `run.start`, which makes the thread: a stream of a thread that does not
        # exist yet is a 404, as on LangGraph's server. The events replay from the run's start.
        result = await thread.run.start(input={"topic": "x"})
        values = Listener(thread.values)
        events = Listener(events_of(thread))
        assert uuid.UUID(result["run_id"])
        assert await thread.output.with_timeout(15) == {"topic": "x", "log": ["a:x", "b"]}
        seen = await events.until(root_ended)
        snapshots = await values.until(lambda v: {"topic": "x", "log": ["a:x", "b"]} in v)
        await events.stop()
        await values.stop()
    methods = [e["method"] for e in seen]
    assert methods[0] == "lifecycle" and seen[0]["params"]["data"] == {"event": "running", "graph_name": "chain"}
    assert {"values", "updates", "custom", "tasks", "checkpoints"} <= set(methods)
    custom = next(e for e in seen if e["method"] == "custom")
    assert custom["params"]["data"] == {"payload": {"progress": "a running"}}
    updates = [(e["params"]["node"], e["params"]["data"]) for e in seen if e["method"] == "updates"]
    assert updates == [("a", {"log": ["a:x"]}), ("b", {"log": ["b"]})]
    checkpoint = next(e for e in seen if e["method"] == "checkpoints")["params"]["data"]
    assert set(checkpoint) >= {"id", "step", "source"}
    seqs = [e["seq"] for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert {"topic": "x", "log": ["a:x"]} in snapshots


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_interrupt_is_answered_with_run_respond(client, transport):
    async with client.threads.stream(assistant_id="hitl", transport=transport) as thread:
        await thread.run.start(input={"topic": "y"})
        events = Listener(events_of(thread))
        await until_interrupted(thread)
        [interrupt] = thread.interrupts
        assert interrupt["namespace"] == []
        requested = await events.until(lambda es: any(e["method"] == "input.requested" for e in es))
        request = next(e for e in requested if e["method"] == "input.requested")["params"]["data"]
        assert request == {"interrupt_id": interrupt["interrupt_id"], "payload": {"question": "ok?"}}
        await thread.run.respond("yes")
        assert await thread.output.with_timeout(15) == {"topic": "y", "log": ["a:y", "ask:yes"]}
        await events.stop()


async def test_a_models_tokens_stream_as_one_message(client):
    async with client.threads.stream(assistant_id="chatbot") as thread:
        await thread.run.start(input={"messages": [{"type": "human", "content": "hi"}]})
        messages = Listener(thread.messages)
        out = await thread.output.with_timeout(15)
        assert out["messages"][-1]["content"] == "hello there friend"
        [message] = await messages.until(lambda m: len(m) == 1)
        await messages.stop()
        assert await asyncio.wait_for(message.text, 5) == "hello there friend"
        assert (await asyncio.wait_for(message.output, 5)).id == out["messages"][-1]["id"]


async def test_a_tool_call_has_its_name_input_and_output(client):
    async with client.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input={"messages": [{"type": "human", "content": "add 2 and 3"}]})
        calls = Listener(thread.tool_calls)
        out = await thread.output.with_timeout(15)
        assert out["messages"][-1]["content"] == "the sum is 5"
        [call] = await calls.until(lambda c: len(c) == 1)
        await calls.stop()
        assert (call.tool_call_id, call.name, call.input) == ("call-add", "add", {"a": 2, "b": 3})
        output = await asyncio.wait_for(call.output, 5)
        assert output["type"] == "tool" and output["content"] == "5" and output["tool_call_id"] == "call-add"


async def test_a_subgraph_starts_and_completes_under_its_namespace(client):
    async with client.threads.stream(assistant_id="parent") as thread:
        await thread.run.start(input={"topic": "z"})
        events = Listener(events_of(thread))
        await until_interrupted(thread)
        seen = await events.until(root_ended)
        await events.stop()
    lifecycle = [(e["params"]["namespace"], e["params"]["data"]["event"]) for e in seen if e["method"] == "lifecycle"]
    [(ns, _)] = [entry for entry in lifecycle if entry[1] == "started"]
    assert len(ns) == 1 and ns[0].startswith("inner:")
    assert lifecycle == [([], "running"), (ns, "started"), (ns, "completed"), ([], "interrupted")]
    inner = [e for e in seen if e["params"]["namespace"] == ns and e["method"] == "updates"]
    assert [e["params"]["node"] for e in inner] == ["a", "b"]


async def ws_next(ws, want):
    """The next message of the socket that `want` takes."""
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), 15))
        if want(message):
            return message


def ws_url(thread_id):
    return URL.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"


async def test_a_websocket_subscribes_starts_runs_and_answers_its_commands(client):
    tid = str(uuid.uuid4())
    async with connect(ws_url(tid)) as ws:
        await ws.send("not json")
        bad = json.loads(await ws.recv())
        assert (bad["type"], bad["error"], bad["id"]) == ("error", "invalid_argument", None)
        await ws.send(json.dumps({"id": 1, "method": "agent.getTree", "params": {}}))
        assert json.loads(await ws.recv())["error"] == "no_such_run"
        await ws.send(json.dumps({"id": 2, "method": "subscription.subscribe", "params": {"channels": ["lifecycle"]}}))
        sub = json.loads(await ws.recv())
        assert sub["type"] == "success" and sub["result"]["replayed_events"] == 0
        await ws.send(json.dumps({"id": 3, "method": "run.start", "params": {"assistant_id": "parent", "input": {"topic": "w"}}}))
        started = await ws_next(ws, lambda m: m.get("id") == 3)
        assert started["type"] == "success" and uuid.UUID(started["result"]["run_id"])
        lifecycle = []
        while not root_ended(lifecycle):
            lifecycle.append(await ws_next(ws, lambda m: m.get("type") == "event"))
        assert {e["method"] for e in lifecycle} == {"lifecycle"}
        await ws.send(json.dumps({"id": 4, "method": "agent.getTree", "params": {}}))
        tree = (await ws_next(ws, lambda m: m.get("id") == 4))["result"]["tree"]
        assert (tree["namespace"], tree["status"], tree["graph_name"]) == ([], "interrupted", "parent")
        [child] = tree["children"]
        assert (child["status"], child["graph_name"]) == ("completed", "inner")
        # A second subscription replays what the socket saw that it wants.
        await ws.send(json.dumps({"id": 5, "method": "subscription.subscribe", "params": {"channels": ["input"]}}))
        replayed = await ws_next(ws, lambda m: m.get("type") == "event")
        assert replayed["method"] == "input.requested"
        sub2 = await ws_next(ws, lambda m: m.get("id") == 5)
        assert sub2["result"]["replayed_events"] == 1
        await ws.send(json.dumps({"id": 6, "method": "subscription.reconnect", "params": {"channels": ["lifecycle"], "since": replayed["seq"]}}))
        after = await ws_next(ws, lambda m: m.get("type") == "event")
        assert after["method"] == "lifecycle" and after["seq"] > replayed["seq"]
        assert (await ws_next(ws, lambda m: m.get("id") == 6))["result"]["replayed_events"] == 1
        await ws.send(json.dumps({"id": 7, "method": "subscription.reconnect", "params": {"channels": ["lifecycle"]}}))
        assert (await ws_next(ws, lambda m: m.get("id") == 7))["error"] == "invalid_argument"
        await ws.send(json.dumps({"id": 8, "method": "subscription.unsubscribe", "params": {"subscription_id": sub["result"]["subscription_id"]}}))
        assert (await ws_next(ws, lambda m: m.get("id") == 8))["type"] == "success"
        await ws.send(json.dumps({"id": 9, "method": "subscription.unsubscribe", "params": {"subscription_id": "gone"}}))
        assert (await ws_next(ws, lambda m: m.get("id") == 9))["error"] == "no_such_subscription"
        await ws.send(json.dumps({"id": 10, "method": "thread.delete", "params": {}}))
        assert (await ws_next(ws, lambda m: m.get("id") == 10))["error"] == "unknown_command"
        # The answer, by the socket: the interrupt's id from the input channel.
        interrupt_id = replayed["params"]["data"]["interrupt_id"]
        await ws.send(json.dumps({"id": 11, "method": "input.respond", "params": {"interrupt_id": interrupt_id, "namespace": [], "response": "ok"}}))
        assert (await ws_next(ws, lambda m: m.get("id") == 11))["type"] == "success"
        await ws_next(ws, lambda m: m.get("type") == "event" and root_ended([m]) and m["params"]["data"]["event"] == "completed")
    state = await client.threads.get_state(tid)
    assert state["values"]["log"] == ["a:w", "b", "ask:ok"]


async def test_a_websocket_message_larger_than_the_body_limit_closes_the_socket(raw):
    async with connect(ws_url(str(uuid.uuid4())), max_size=None) as ws:
        big = json.dumps({"id": 1, "method": "run.start", "params": {"assistant_id": "chain", "input": {"topic": "x" * (9 * 1024 * 1024)}}})
        with pytest.raises(ConnectionClosed):
            await ws.send(big)  # the server may close the socket while it is still sending
            await asyncio.wait_for(ws.recv(), 15)
    assert (await raw.get("/ok")).status_code == 200


async def test_the_event_stream_refuses_what_it_cannot_serve(raw):
    tid = str(uuid.uuid4())
    r = await raw.post(f"/threads/{tid}/stream/events", json={"channels": ["values"]})
    assert r.status_code == 404 and r.json() == {"detail": f"Thread {tid} not found"}
    r = await raw.post(f"/threads/{tid}/stream/events", json={"channels": ["debug"]})
    assert r.status_code == 400 and "debug" in r.json()["detail"]
    r = await raw.post(f"/threads/{tid}/commands", content=b"{")
    assert r.status_code == 400 and r.json() == {"detail": "Invalid JSON body"}
