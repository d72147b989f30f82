"""Threads: create, read, search, edit, copy, delete, and their state and history (README §1.2
rows 8-14 and tier B/C), with the shapes of `sdk_trace.txt`."""

import uuid

import pytest
from langgraph_sdk.errors import BadRequestError, ConflictError, NotFoundError, UnprocessableEntityError

from conftest import assistant_id


async def test_create_get_with_metadata(client):
    t = await client.threads.create(metadata={"user": "u1"})
    assert t["metadata"] == {"user": "u1"}
    assert t["status"] == "idle"
    assert t["values"] is None
    assert t["created_at"].endswith("+00:00")
    got = await client.threads.get(t["thread_id"])
    assert got["thread_id"] == t["thread_id"] and got["metadata"] == {"user": "u1"}


async def test_create_with_id_and_if_exists(client):
    tid = str(uuid.uuid4())
    t = await client.threads.create(thread_id=tid, metadata={"k": 1})
    assert t["thread_id"] == tid
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=tid)
    same = await client.threads.create(thread_id=tid, if_exists="do_nothing")
    assert same["thread_id"] == tid and same["metadata"] == {"k": 1}


async def test_get_unknown_thread_is_404(client):
    with pytest.raises(NotFoundError):
        await client.threads.get(str(uuid.uuid4()))


async def test_search_by_metadata_status_and_ids(client):
    tag = str(uuid.uuid4())
    a = await client.threads.create(metadata={"tag": tag, "n": 1})
    b = await client.threads.create(metadata={"tag": tag, "n": 2})
    found = await client.threads.search(metadata={"tag": tag}, limit=10)
    assert {t["thread_id"] for t in found} == {a["thread_id"], b["thread_id"]}
    one = await client.threads.search(metadata={"tag": tag, "n": 2})
    assert [t["thread_id"] for t in one] == [b["thread_id"]]
    page = await client.threads.search(metadata={"tag": tag}, limit=1)
    assert len(page) == 1
    await client.runs.wait(a["thread_id"], "chain", input={"topic": "s"})
    idle = await client.threads.search(metadata={"tag": tag}, status="idle")
    assert len(idle) == 2
    assert await client.threads.count(metadata={"tag": tag}) == 2


async def test_search_extracts_values_by_path(client):
    tag = str(uuid.uuid4())
    t = await client.threads.create(metadata={"tag": tag, "user": "ann"})
    await client.runs.wait(t["thread_id"], "chain", input={"topic": "e"})
    found = await client.threads.search(
        metadata={"tag": tag},
        select=["thread_id"],
        extract={"last": "values.log[-1]", "who": "metadata.user", "none": "values.nope"},
    )
    assert found == [{"thread_id": t["thread_id"], "extracted": {"last": "b", "who": "ann", "none": None}}]
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(extract={"s": "status"})


@pytest.mark.weir_only  # langgraph dev's in-memory runtime answers 500 when any thread has no values
async def test_search_by_values(client):
    tag = str(uuid.uuid4())
    a = await client.threads.create(metadata={"tag": tag})
    await client.threads.create(metadata={"tag": tag})
    await client.runs.wait(a["thread_id"], "chain", input={"topic": tag})
    by_values = await client.threads.search(values={"topic": tag}, metadata={"tag": tag})
    assert [t["thread_id"] for t in by_values] == [a["thread_id"]]


async def test_update_metadata_and_delete(client):
    t = await client.threads.create(metadata={"a": 1})
    u = await client.threads.update(t["thread_id"], metadata={"b": 2})
    assert u["metadata"] == {"a": 1, "b": 2}
    # `Prefer: return=minimal`: a 204, which the client returns as None.
    assert await client.threads.update(t["thread_id"], metadata={"c": 3}, return_minimal=True) is None
    assert (await client.threads.get(t["thread_id"]))["metadata"] == {"a": 1, "b": 2, "c": 3}
    await client.threads.delete(t["thread_id"])
    with pytest.raises(NotFoundError):
        await client.threads.get(t["thread_id"])


async def test_prune_deletes_the_threads_named_and_passes_over_unknown_ones(client):
    ran = await client.threads.create()
    await client.runs.wait(ran["thread_id"], "chain", input={"topic": "p"})
    never_ran = await client.threads.create()
    kept = await client.threads.create()
    unknown = str(uuid.uuid4())
    out = await client.threads.prune([ran["thread_id"], never_ran["thread_id"], unknown])
    assert out == {"pruned_count": 2}
    for t in (ran, never_ran):
        with pytest.raises(NotFoundError):
            await client.threads.get(t["thread_id"])
    assert (await client.threads.get(kept["thread_id"]))["thread_id"] == kept["thread_id"]
    assert await client.threads.prune([]) == {"pruned_count": 0}
    with pytest.raises(UnprocessableEntityError):
        await client.threads.prune(["not-a-uuid"])


@pytest.mark.weir_only  # langgraph dev's in-memory runtime refuses keep_latest with a 422
async def test_prune_keep_latest_keeps_the_state_and_drops_the_history(client, thread):
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chain", input={"topic": "x"})
    await client.runs.wait(tid, "chain", input={"topic": "y"})
    before = await client.threads.get_state(tid)
    assert len(await client.threads.get_history(tid)) > 1
    assert await client.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 1}
    history = await client.threads.get_history(tid)
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == [before["checkpoint"]["checkpoint_id"]]
    assert (await client.threads.get_state(tid))["values"] == before["values"]
    out = await client.runs.wait(tid, "chain", input={"topic": "z"})
    assert out["log"] == ["a:x", "b", "a:y", "b", "a:z", "b"]


async def test_thread_after_a_run_carries_values_and_graph(client, thread):
    tid = thread["thread_id"]
    out = await client.runs.wait(tid, "chain", input={"topic": "x", "log": []})
    assert out == {"topic": "x", "log": ["a:x", "b"]}
    t = await client.threads.get(tid)
    assert t["status"] == "idle"
    assert t["values"] == {"topic": "x", "log": ["a:x", "b"]}
    assert t["metadata"]["graph_id"] == "chain"
    assert t["metadata"]["assistant_id"] == assistant_id("chain")
    assert t["interrupts"] == {}


async def test_state_of_a_thread_that_never_ran(client, thread):
    st = await client.threads.get_state(thread["thread_id"])
    assert st["values"] == {} and st["next"] == [] and st["tasks"] == []
    assert st["checkpoint"] is None or st["checkpoint"].get("checkpoint_id") is None


async def test_state_and_history_after_a_run(client, thread):
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chain", input={"topic": "x"})
    st = await client.threads.get_state(tid)
    assert st["values"] == {"topic": "x", "log": ["a:x", "b"]}
    assert st["next"] == [] and st["tasks"] == []
    assert st["metadata"]["source"] == "loop" and st["metadata"]["step"] == 2
    assert st["metadata"]["graph_id"] == "chain"
    # The claim's attempt, and the user: none without authentication (`langgraph dev` too).
    assert st["metadata"]["run_attempt"] == 1
    assert st["metadata"]["user_id"] == "" and st["metadata"]["langgraph_auth_user_id"] == ""
    assert st["checkpoint"]["thread_id"] == tid and st["checkpoint"]["checkpoint_ns"] == ""
    assert st["checkpoint_id"] == st["checkpoint"]["checkpoint_id"]
    assert st["parent_checkpoint"]["checkpoint_id"] == st["parent_checkpoint_id"]
    hist = await client.threads.get_history(tid)
    # input (-1), the input applied (0), a (1), b (2): newest first, each linked to the next
    assert [h["metadata"]["step"] for h in hist] == [2, 1, 0, -1]
    assert [h["metadata"]["source"] for h in hist] == ["loop", "loop", "loop", "input"]
    for newer, older in zip(hist, hist[1:]):
        assert newer["parent_checkpoint"]["checkpoint_id"] == older["checkpoint"]["checkpoint_id"]
    assert hist[-1]["parent_checkpoint"] is None
    assert [h["next"] for h in hist] == [[], ["b"], ["a"], ["__start__"]]
    # Each checkpoint's task with the update it returned (the start task's: the input), as
    # LangGraph's history shows them.
    assert [[(t["name"], t["result"]) for t in h["tasks"]] for h in hist] == [
        [], [("b", {"log": ["b"]})], [("a", {"log": ["a:x"]})], [("__start__", {"topic": "x"})]]
    two = await client.threads.get_history(tid, limit=2)
    assert [h["checkpoint_id"] for h in two] == [h["checkpoint_id"] for h in hist[:2]]
    # `before` goes as a config: the real server answers 500 to the SDK's bare checkpoint dict
    before = await client.threads.get_history(tid, before={"configurable": hist[1]["checkpoint"]})
    assert before and before[0]["checkpoint_id"] == hist[2]["checkpoint_id"]
    at = await client.threads.get_state(tid, checkpoint_id=hist[1]["checkpoint_id"])
    assert at["values"] == {"topic": "x", "log": ["a:x"]} and at["next"] == ["b"]
    at2 = await client.threads.get_state(tid, checkpoint=hist[1]["checkpoint"])
    assert at2["checkpoint_id"] == hist[1]["checkpoint_id"]


async def test_update_state_as_node(client, thread):
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chain", input={"topic": "x"})
    r = await client.threads.update_state(tid, {"log": ["manual"]}, as_node="b")
    cid = r["checkpoint"]["checkpoint_id"]
    assert r["checkpoint"] == {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": cid}
    assert r["checkpoint_id"] == cid
    st = await client.threads.get_state(tid)
    assert st["checkpoint_id"] == cid
    assert st["values"]["log"] == ["a:x", "b", "manual"]
    assert st["metadata"]["source"] == "update"
    # An edit's checkpoint names the thread's graph, and no run.
    assert st["metadata"]["graph_id"] == "chain" and "run_id" not in st["metadata"]
    out = await client.runs.wait(tid, "chain", input={"topic": "y"})
    assert out == {"topic": "y", "log": ["a:x", "b", "manual", "a:y", "b"]}


async def test_create_with_supersteps_replays_a_history(client):
    t = await client.threads.create(
        graph_id="chain",
        supersteps=[
            {"updates": [{"values": {"topic": "z"}, "as_node": "__input__"}]},
            {"updates": [{"values": {"topic": "z"}, "as_node": "__start__"}]},
            {"updates": [{"values": {"log": ["a:z"]}, "as_node": "a"}]},
        ],
    )
    hist = await client.threads.get_history(t["thread_id"])
    steps = [(h["metadata"]["source"], h["metadata"]["step"]) for h in hist]
    assert steps == [("update", 1), ("update", 0), ("input", -1)]
    # The first superstep's checkpoint names the thread's graph, as LangGraph's bulk update does.
    assert hist[-1]["metadata"]["graph_id"] == "chain"
    st = await client.threads.get_state(t["thread_id"])
    assert st["values"] == {"topic": "z", "log": ["a:z"]} and st["next"] == ["b"]
    out = await client.runs.wait(t["thread_id"], "chain", input=None)
    assert out == {"topic": "z", "log": ["a:z", "b"]}


async def test_a_supersteps_updates_make_one_checkpoint(client):
    start = [
        {"updates": [{"values": {"topic": "z"}, "as_node": "__input__"}]},
        {"updates": [{"values": {"topic": "z"}, "as_node": "__start__"}]},
    ]
    both = {"updates": [{"values": {"log": ["a1"]}, "as_node": "a"}, {"values": {"log": ["b1"]}, "as_node": "b"}]}
    t = await client.threads.create(graph_id="chain", supersteps=[*start, both])
    hist = await client.threads.get_history(t["thread_id"])
    assert [(h["metadata"]["source"], h["metadata"]["step"]) for h in hist] == [
        ("update", 1), ("update", 0), ("input", -1)]
    # a's and b's updates as one step: both written, and a's edge fires (b next), b's ends.
    assert hist[0]["values"]["log"] == ["a1", "b1"] and hist[0]["next"] == ["b"]
    # An input stands alone in its superstep (LangGraph answers 400, weir 422 naming the field).
    two_inputs = {"updates": [{"values": {"topic": "z"}, "as_node": "__input__"},
                              {"values": {"topic": "q"}, "as_node": "__input__"}]}
    with pytest.raises((BadRequestError, UnprocessableEntityError)):
        await client.threads.create(graph_id="chain", supersteps=[two_inputs])


async def test_copy_keeps_the_state(client, thread):
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chain", input={"topic": "x"})
    c = await client.threads.copy(tid)
    assert c["thread_id"] != tid
    st = await client.threads.get_state(c["thread_id"])
    assert st["values"] == {"topic": "x", "log": ["a:x", "b"]}
    history = await client.threads.get_history(c["thread_id"])
    assert len(history) == 4
    # The copy's checkpoints are its own: their metadata and config name the copy.
    assert {h["metadata"]["thread_id"] for h in history} == {c["thread_id"]}
    assert {h["checkpoint"]["thread_id"] for h in history} == {c["thread_id"]}
    out = await client.runs.wait(c["thread_id"], "chain", input={"topic": "z"})
    assert out["log"] == ["a:x", "b", "a:z", "b"]
    assert (await client.threads.get_state(tid))["values"]["log"] == ["a:x", "b"]


@pytest.mark.weir_only  # langgraph dev's in-memory runtime leaves `include` unread
async def test_get_with_include_ttl_shows_the_ttl(client):
    t = await client.threads.create(ttl={"ttl": 30, "strategy": "delete"})
    got = await client.threads.get(t["thread_id"], include=["ttl"])
    assert got["ttl"]["strategy"] == "delete" and got["ttl"]["ttl_minutes"] == 30
    assert got["ttl"]["expires_at"] > got["updated_at"]
    assert "ttl" not in await client.threads.get(t["thread_id"])
    with pytest.raises(UnprocessableEntityError):
        await client.threads.get(t["thread_id"], include=["colour"])
