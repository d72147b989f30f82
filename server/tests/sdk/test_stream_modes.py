"""Each stream mode's event names and data against the raw captures of the real server
(`captures/raw_*.sse`, README §1.4), ignoring ids, timestamps and LangGraph's metadata bags."""

import pytest

import sse_norm


async def stream(client, graph, input, modes, used=False, **kw):
    """The events of a run of `graph` on a fresh thread (`used`: after one run of it there)."""
    t = await client.threads.create()
    if used:
        await client.runs.wait(t["thread_id"], graph, input=input)
    parts = [(p.event, p.data) async for p in client.runs.stream(
        t["thread_id"], graph, input=input, stream_mode=modes, **kw)]
    assert parts[0][0] == "metadata" and parts[0][1]["attempt"] == 1
    return [(e, d) for e, d in parts if e != "end"]


def assert_same(diffs):
    assert not diffs, "\n".join(diffs)


async def test_custom_and_updates_match_the_capture(client):
    got = await stream(client, "chain", {"topic": "c"}, ["custom", "updates"])
    assert_same(sse_norm.diff_exact(sse_norm.capture("custom"), got))


async def test_error_matches_the_capture(client):
    got = await stream(client, "failing", {"topic": "x"}, ["values"])
    # the capture asked for updates; with values, the input's values come before the error
    assert got[1:] == [("values", {"topic": "x", "log": []}), ("error", {"error": "ValueError", "message": "boom in node"})]


async def test_error_stream_of_updates_matches_the_capture(client):
    got = await stream(client, "failing", {"topic": "x"}, ["updates"])
    assert_same(sse_norm.diff_exact(sse_norm.capture("error"), got))


async def test_checkpoints_match_the_capture_in_shape(client):
    got = await stream(client, "chain", {"topic": "t"}, ["checkpoints"])
    assert_same(sse_norm.diff_skeleton(sse_norm.capture("checkpoints"), got))
    assert [d["metadata"]["source"] for _, d in got[1:]] == ["input", "loop", "loop", "loop"]
    assert [d["next"] for _, d in got[1:]] == [["__start__"], ["a"], ["b"], []]
    assert got[-1][1]["values"] == {"topic": "t", "log": ["a:t", "b"]}


async def test_debug_matches_the_capture_in_shape(client):
    # the capture ran on a thread that had run once (its first checkpoint is step 3)
    got = await stream(client, "chain", {"topic": "t"}, ["debug"], used=True)
    expected = sse_norm.capture("debug")
    assert [d["step"] for _, d in got[1:]] == [d["step"] for _, d in expected[1:]]
    assert [d["type"] for _, d in got[1:]] == [d["type"] for _, d in expected[1:]]
    assert_same(sse_norm.diff_skeleton(expected, got))
    results = [d["payload"] for _, d in got if d.get("type") == "task_result"]
    assert [(r["name"], r["result"], r["error"], r["interrupts"]) for r in results] == [
        ("a", {"log": ["a:t"]}, None, []), ("b", {"log": ["b"]}, None, [])]


async def test_tasks_mode(client):
    got = await stream(client, "chain", {"topic": "t"}, ["tasks"])
    data = [d for _, d in got[1:]]
    assert [e for e, _ in got[1:]] == ["tasks"] * 4
    assert [(d["name"], "input" in d, "result" in d) for d in data] == [
        ("a", True, False), ("a", False, True), ("b", True, False), ("b", False, True)]
    assert data[0]["triggers"] == ["branch:to:a"] and data[0]["input"] == {"topic": "t", "log": []}
    assert data[1] == {"id": data[0]["id"], "name": "a", "error": None,
                       "result": {"log": ["a:t"]}, "interrupts": []}


async def test_events_match_the_capture_in_shape(client):
    got = await stream(client, "chain", {"topic": "t"}, ["events"])
    expected = sse_norm.capture("events")
    assert [(d["event"], d["name"]) for _, d in got[1:]] == [(d["event"], d["name"]) for _, d in expected[1:]]
    assert_same(sse_norm.diff_skeleton(expected, got))


async def test_subgraphs_with_interrupt_match_the_capture(client):
    got = await stream(client, "parent", {"topic": "t", "log": []}, ["values", "updates"], stream_subgraphs=True)
    assert_same(sse_norm.diff_exact(sse_norm.capture("subgraphs_interrupt"), got))


async def test_values_mode_is_the_default(client):
    got = await stream(client, "chain", {"topic": "d", "log": []}, None)
    assert got[1:] == [("values", {"topic": "d", "log": []}), ("values", {"topic": "d", "log": ["a:d"]}),
                       ("values", {"topic": "d", "log": ["a:d", "b"]})]


# The platform's and LangChain's tracing keys, which weir does not send.
PLATFORM_KEYS = {"run_attempt", "langgraph_version", "langgraph_api_version", "langgraph_plan",
                 "langgraph_host", "langgraph_api_url", "ls_integration", "ls_provider",
                 "ls_model_type", "lc_versions"}


async def test_messages_tuple_matches_the_capture(client):
    got = await stream(client, "chatbot", {"messages": [{"type": "human", "content": "hi"}]},
                       ["values", "messages-tuple"])

    def norm(events):
        # Message ids aside: the fake model's are its own, LangChain's `lc_run--<uuid>`.
        out = []
        for e, d in events:
            if e == "messages":
                chunk, meta = d
                d = [{**chunk, "id": "<id>"}, {k: v for k, v in meta.items() if k not in PLATFORM_KEYS}]
            elif e == "values":
                d = {**d, "messages": [{**m, "id": "<id>"} for m in d["messages"]]}
            out.append((e, d))
        return out

    assert_same(sse_norm.diff_exact(norm(sse_norm.capture("messages_tuple")), norm(got)))
    # useStream merges the chunks by id into the state's message: one id for both.
    ids = {d[0]["id"] for e, d in got if e == "messages"}
    assert ids == {got[-1][1]["messages"][1]["id"]}
