"""Runs on a thread and stateless: background create, join, get, list, wait, stream,
join_stream, and a failing node (README §1.2 rows 15-23); and `runs.create_batch` (tier C)."""

import uuid

import pytest
from langgraph_sdk.errors import NotFoundError

from conftest import assistant_id


async def collect(stream):
    return [(p.event, p.data) async for p in stream]


async def test_background_run_then_join_get_list(client, thread):
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "chain", input={"topic": "bg"})
    assert run["status"] in ("pending", "running")
    assert run["thread_id"] == tid and run["assistant_id"] == assistant_id("chain")
    assert run["multitask_strategy"] in ("enqueue", "reject", None)
    assert run["kwargs"]["input"] == {"topic": "bg"}
    out = await client.runs.join(tid, run["run_id"])
    assert out == {"topic": "bg", "log": ["a:bg", "b"]}
    got = await client.runs.get(tid, run["run_id"])
    assert got["status"] == "success" and got["run_id"] == run["run_id"]
    listed = await client.runs.list(tid, limit=10)
    assert [r["run_id"] for r in listed] == [run["run_id"]]
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_list_newest_first_with_paging(client, thread):
    tid = thread["thread_id"]
    ids = []
    for topic in ("1", "2", "3"):
        await client.runs.wait(tid, "chain", input={"topic": topic})
    listed = await client.runs.list(tid)
    ids = [r["run_id"] for r in listed]
    assert len(ids) == 3
    assert [r["kwargs"]["input"]["topic"] for r in listed] == ["3", "2", "1"]
    assert [r["run_id"] for r in await client.runs.list(tid, limit=1, offset=1)] == ids[1:2]


async def test_get_unknown_run_is_404(client, thread):
    with pytest.raises(NotFoundError):
        await client.runs.get(thread["thread_id"], "00000000-0000-4000-8000-000000000000")


async def test_wait_returns_the_final_values(client, thread):
    out = await client.runs.wait(thread["thread_id"], assistant_id("chain"), input={"topic": "x", "log": []})
    assert out == {"topic": "x", "log": ["a:x", "b"]}


async def test_wait_on_a_failing_node_gives_the_error_object(client, thread):
    out = await client.runs.wait(thread["thread_id"], "failing", input={"topic": "x"}, raise_error=False)
    assert out == {"__error__": {"error": "ValueError", "message": "boom in node"}}
    t = await client.threads.get(thread["thread_id"])
    assert t["status"] == "error"
    runs = await client.runs.list(thread["thread_id"])
    assert runs[0]["status"] == "error"


async def test_stream_values_updates_custom(client, thread):
    parts = await collect(client.runs.stream(
        thread["thread_id"], "chain", input={"topic": "s"}, stream_mode=["values", "updates", "custom"]))
    assert parts[0][0] == "metadata"
    assert set(parts[0][1]) >= {"run_id", "attempt"} and parts[0][1]["attempt"] == 1
    assert parts[1:] == [
        ("values", {"topic": "s", "log": []}) if parts[1][1].get("log") == [] else ("values", {"topic": "s"}),
        ("custom", {"progress": "a running"}),
        ("updates", {"a": {"log": ["a:s"]}}),
        ("values", {"topic": "s", "log": ["a:s"]}),
        ("updates", {"b": {"log": ["b"]}}),
        ("values", {"topic": "s", "log": ["a:s", "b"]}),
    ]


async def test_stream_of_a_failing_node_ends_with_error(client, thread):
    parts = await collect(client.runs.stream(thread["thread_id"], "failing", input={"topic": "x"}))
    assert parts[-1] == ("error", {"error": "ValueError", "message": "boom in node"})


async def test_join_stream_of_a_background_run(client, thread):
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "slow", input={"topic": "j"}, stream_mode=["values", "updates"])
    parts = await collect(client.runs.join_stream(tid, run["run_id"]))
    names = [e for e, _ in parts]
    assert ("updates", {"slow": {"log": ["slow:j"]}}) in parts
    assert names[-1] in ("values", "end")
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"


async def test_join_of_a_finished_run(client, thread):
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "chain", input={"topic": "f"})
    await client.runs.join(tid, run["run_id"])
    assert await client.runs.join(tid, run["run_id"]) == {"topic": "f", "log": ["a:f", "b"]}


async def test_run_on_unknown_thread_with_if_not_exists_create(client):
    import uuid
    tid = str(uuid.uuid4())
    out = await client.runs.wait(tid, "chain", input={"topic": "n"}, if_not_exists="create")
    assert out == {"topic": "n", "log": ["a:n", "b"]}
    assert (await client.threads.get(tid))["values"] == out


async def test_delete_run(client, thread):
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chain", input={"topic": "d"})
    run = (await client.runs.list(tid))[0]
    await client.runs.delete(tid, run["run_id"])
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, run["run_id"])


# Stateless runs (thread_id=None): a temporary thread, deleted after by default.

async def test_stateless_wait(client):
    assert await client.runs.wait(None, "chain", input={"topic": "q"}) == {"topic": "q", "log": ["a:q", "b"]}


async def test_stateless_stream(client):
    parts = await collect(client.runs.stream(None, "chain", input={"topic": "q"}, stream_mode="updates"))
    assert parts[1:] == [("updates", {"a": {"log": ["a:q"]}}), ("updates", {"b": {"log": ["b"]}})]


async def test_stateless_background_create_and_keep(client):
    run = await client.runs.create(None, "chain", input={"topic": "k"}, on_completion="keep")
    out = await client.runs.join(run["thread_id"], run["run_id"])
    assert out == {"topic": "k", "log": ["a:k", "b"]}
    st = await client.threads.get_state(run["thread_id"])
    assert st["values"] == out


# weir only: `langgraph dev` makes every item stateless, passing over a `thread_id` the SDK's
# `RunCreate` documents ("if not provided, the run is stateless"); weir runs it on that thread.
@pytest.mark.weir_only
async def test_create_batch_makes_stateless_and_thread_runs_in_order(client, raw, thread):
    tag = str(uuid.uuid4())
    runs = await client.runs.create_batch([
        {"assistant_id": "chain", "input": {"topic": tag}, "metadata": {"tag": tag}},
        {"assistant_id": "chain", "input": {"topic": tag}, "thread_id": thread["thread_id"]},
    ])
    assert [r["status"] for r in runs] == ["pending", "pending"]
    assert runs[1]["thread_id"] == thread["thread_id"] and runs[0]["thread_id"] != thread["thread_id"]
    assert runs[0]["metadata"]["tag"] == tag
    done = await client.runs.join(thread["thread_id"], runs[1]["run_id"])
    assert done["log"] == [f"a:{tag}", "b"]


@pytest.mark.weir_only
async def test_a_batch_with_a_bad_item_makes_no_run(client, raw, thread):
    before = len(await client.runs.list(thread["thread_id"]))
    r = await raw.post("/runs/batch", json=[
        {"assistant_id": "chain", "input": {"topic": "ok"}, "thread_id": thread["thread_id"]},
        {"assistant_id": "chain", "input": {"topic": 7}},
    ])
    assert r.status_code == 422 and r.json()["detail"].startswith("body item [1]: "), r.text
    assert len(await client.runs.list(thread["thread_id"])) == before
    r = await raw.post("/runs/batch", json=[{"assistant_id": "chain", "thread_id": "nope"}])
    assert r.status_code == 422 and "[0].thread_id" in r.json()["detail"], r.text
    r = await raw.post("/runs/batch", json={"assistant_id": "chain"})
    assert r.status_code == 422, r.text


async def test_messages_as_langgraphs_examples_send_them(client):
    # LangGraph's own quickstart: OpenAI-style `role` dicts, and chat UIs' ids on each message.
    out = await client.runs.wait(
        None, "chatbot",
        input={"messages": [{"role": "user", "content": "What is LangGraph?", "id": str(uuid.uuid4())}]},
    )
    assert [(m["type"], m["content"]) for m in out["messages"]] == [
        ("human", "What is LangGraph?"), ("ai", "hello there friend")]
