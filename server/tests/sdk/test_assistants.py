"""Assistants: the system assistants of the served graphs, their drawings and schemas, and the
CRUD and versions Studio's assistant editor uses (README §1.2 rows 3-7, tier B)."""

import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from conftest import assistant_id

GRAPHS = {"chain", "hitl", "failing", "slow", "parent"}


async def test_search_lists_a_system_assistant_per_graph(client):
    found = await client.assistants.search(limit=100)
    system = [a for a in found if a["metadata"].get("created_by") == "system"]
    assert GRAPHS <= {a["graph_id"] for a in system}
    for a in system:
        assert a["assistant_id"] == assistant_id(a["graph_id"])
        assert a["name"] == a["graph_id"]
        assert a["version"] == 1
        assert set(a) >= {"assistant_id", "graph_id", "config", "context", "metadata", "name",
                          "created_at", "updated_at", "version", "description"}


async def test_search_filters_by_graph_id_and_metadata(client):
    by_graph = await client.assistants.search(graph_id="chain", metadata={"created_by": "system"})
    assert [a["assistant_id"] for a in by_graph] == [assistant_id("chain")]
    by_meta = await client.assistants.search(metadata={"created_by": "system"}, limit=100)
    assert GRAPHS <= {a["graph_id"] for a in by_meta}
    page = await client.assistants.search(limit=1, offset=0)
    assert len(page) == 1


async def test_get_by_uuid(client):
    a = await client.assistants.get(assistant_id("chain"))
    assert a["graph_id"] == "chain"
    assert a["metadata"] == {"created_by": "system"}
    assert a["created_at"].endswith("+00:00")


async def test_get_unknown_uuid_is_404(client):
    with pytest.raises(NotFoundError):
        await client.assistants.get("00000000-0000-4000-8000-000000000000")


async def test_get_non_uuid_is_422(client):
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.get("not-a-uuid-nor-a-graph")


async def test_graph_drawing_of_chain(client):
    g = await client.assistants.get_graph("chain")
    assert g == {
        "nodes": [
            {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
            {"id": "a", "type": "runnable", "data": {"name": "a"}},
            {"id": "b", "type": "runnable", "data": {"name": "b"}},
            {"id": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": "a"},
            {"source": "a", "target": "b"},
            {"source": "b", "target": "__end__"},
        ],
    }
    by_uuid = await client.assistants.get_graph(assistant_id("chain"), xray=True)
    assert {n["id"] for n in by_uuid["nodes"]} == {"__start__", "a", "b", "__end__"}


async def test_graph_drawing_of_parent_with_xray_shows_the_subgraph(client):
    flat = await client.assistants.get_graph("parent")
    assert {n["id"] for n in flat["nodes"]} == {"__start__", "inner", "ask", "__end__"}
    xray = await client.assistants.get_graph("parent", xray=True)
    ids = {n["id"] for n in xray["nodes"]}
    assert {"inner:a", "inner:b", "ask"} <= ids


async def test_schemas_describe_the_state(client):
    s = await client.assistants.get_schemas(assistant_id("chain"))
    assert s["graph_id"] == "chain"
    assert set(s) >= {"graph_id", "input_schema", "output_schema", "state_schema", "config_schema"}
    for key in ("input_schema", "output_schema", "state_schema"):
        assert s[key]["type"] == "object"
        assert set(s[key]["properties"]) == {"topic", "log"}
        assert s[key]["properties"]["topic"]["type"] == "string"
        assert s[key]["properties"]["log"]["type"] == "array"


async def test_subgraphs(client):
    assert await client.assistants.get_subgraphs(assistant_id("chain")) == {}
    subs = await client.assistants.get_subgraphs(assistant_id("parent"))
    assert list(subs) == ["inner"]
    assert set(subs["inner"]["state_schema"]["properties"]) == {"topic", "log"}


async def test_create_update_versions_latest_delete(client):
    a = await client.assistants.create("chain", config={"tags": ["x"]}, metadata={"team": "t1"}, name="mine")
    aid = a["assistant_id"]
    assert a["graph_id"] == "chain" and a["name"] == "mine" and a["version"] == 1
    assert a["metadata"] == {"team": "t1"}
    b = await client.assistants.update(aid, metadata={"team": "t2"}, name="mine2")
    assert b["version"] == 2 and b["name"] == "mine2"
    versions = await client.assistants.get_versions(aid)
    assert sorted(v["version"] for v in versions) == [1, 2]
    c = await client.assistants.set_latest(aid, 1)
    assert c["version"] == 1 and c["name"] == "mine"
    assert (await client.assistants.get(aid))["version"] == 1
    found = await client.assistants.search(metadata={"team": "t1"})
    assert [x["assistant_id"] for x in found] == [aid]
    assert await client.assistants.count(graph_id="chain") >= 2
    await client.assistants.delete(aid)
    with pytest.raises(NotFoundError):
        await client.assistants.get(aid)


async def test_create_for_unknown_graph_is_refused(client):
    with pytest.raises((NotFoundError, UnprocessableEntityError)):
        await client.assistants.create("no_such_graph")


async def test_run_on_a_created_assistant(client, thread):
    a = await client.assistants.create("chain", name="runner")
    out = await client.runs.wait(thread["thread_id"], a["assistant_id"], input={"topic": "c"})
    await client.assistants.delete(a["assistant_id"])
    assert out == {"topic": "c", "log": ["a:c", "b"]}


async def test_delete_with_delete_threads_takes_the_threads_its_runs_were_made_on(client):
    a = await client.assistants.create("chain", name="doomed")
    aid = a["assistant_id"]
    ran = []
    for topic in ("a", "b"):
        t = await client.threads.create()
        await client.runs.wait(t["thread_id"], aid, input={"topic": topic})
        ran.append(t["thread_id"])
    kept = await client.threads.create()
    await client.runs.wait(kept["thread_id"], "chain", input={"topic": "k"})
    await client.assistants.delete(aid, delete_threads=True)
    for tid in ran:
        with pytest.raises(NotFoundError):
            await client.threads.get(tid)
    assert (await client.threads.get(kept["thread_id"]))["values"]["topic"] == "k"
    # Without it, an assistant's threads stay.
    b = await client.assistants.create("chain", name="retired")
    t = await client.threads.create()
    await client.runs.wait(t["thread_id"], b["assistant_id"], input={"topic": "r"})
    await client.assistants.delete(b["assistant_id"])
    assert (await client.threads.get(t["thread_id"]))["metadata"]["assistant_id"] == b["assistant_id"]
