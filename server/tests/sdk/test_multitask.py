"""A second run on a busy thread under each multitask strategy (README §1.5, captured on the
3-second `slow` graph), and cancel with either action."""

import asyncio

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError


async def wait_running(client, tid, rid):
    """Waits (by polling the run, at most 10 s) until the run has started."""
    for _ in range(200):
        if (await client.runs.get(tid, rid))["status"] == "running":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {rid} did not start")


async def busy(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    first = await client.runs.create(tid, "slow", input={"topic": "1"})
    await wait_running(client, tid, first["run_id"])
    return tid, first["run_id"]


async def test_reject(client):
    tid, first = await busy(client)
    with pytest.raises(ConflictError) as e:
        await client.runs.create(tid, "chain", input={"topic": "2"}, multitask_strategy="reject")
    assert "Thread is already running a task" in str(e.value)
    await client.runs.join(tid, first)
    assert (await client.runs.get(tid, first))["status"] == "success"


async def test_interrupt(client):
    tid, first = await busy(client)
    second = await client.runs.create(tid, "chain", input={"topic": "2"}, multitask_strategy="interrupt")
    await client.runs.join(tid, second["run_id"])
    assert (await client.runs.get(tid, first))["status"] == "interrupted"
    assert (await client.runs.get(tid, second["run_id"]))["status"] == "success"
    st = await client.threads.get_state(tid)
    assert st["values"]["log"] == ["a:2", "b"]
    # the interrupted run's checkpoints stay (those written before its node), then the second's four
    runs = [h["metadata"]["run_id"] for h in await client.threads.get_history(tid)]
    assert runs[:4] == [second["run_id"]] * 4
    assert runs[4:] and set(runs[4:]) == {first}


async def test_rollback(client):
    tid, first = await busy(client)
    second = await client.runs.create(tid, "chain", input={"topic": "2"}, multitask_strategy="rollback")
    await client.runs.join(tid, second["run_id"])
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, first)
    assert (await client.runs.get(tid, second["run_id"]))["status"] == "success"
    assert [r["run_id"] for r in await client.runs.list(tid)] == [second["run_id"]]
    assert (await client.threads.get_state(tid))["values"] == {"topic": "2", "log": ["a:2", "b"]}
    assert len(await client.threads.get_history(tid)) == 4


async def test_enqueue(client):
    tid, first = await busy(client)
    second = await client.runs.create(tid, "chain", input={"topic": "2"}, multitask_strategy="enqueue")
    assert second["status"] == "pending"
    out = await client.runs.join(tid, second["run_id"])
    assert (await client.runs.get(tid, first))["status"] == "success"
    assert out == {"topic": "2", "log": ["slow:1", "a:2", "b"]}


async def test_enqueue_is_the_default(client):
    tid, first = await busy(client)
    second = await client.runs.create(tid, "chain", input={"topic": "2"})
    out = await client.runs.join(tid, second["run_id"])
    assert out["log"] == ["slow:1", "a:2", "b"]


async def test_cancel_with_interrupt(client):
    tid, first = await busy(client)
    await client.runs.cancel(tid, first, wait=True, action="interrupt")
    assert (await client.runs.get(tid, first))["status"] == "interrupted"
    assert (await client.threads.get(tid))["status"] in ("idle", "interrupted")
    # the thread runs again
    out = await client.runs.wait(tid, "chain", input={"topic": "after"})
    assert out["log"][-2:] == ["a:after", "b"]


async def test_cancel_with_rollback_removes_the_run(client):
    tid, first = await busy(client)
    await client.runs.cancel(tid, first, wait=True, action="rollback")
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, first)
    assert (await client.threads.get(tid))["status"] == "idle"
    assert await client.threads.get_history(tid) == []


async def test_cancel_without_waiting_is_accepted(client):
    tid, first = await busy(client)
    await client.runs.cancel(tid, first)
    await client.runs.join(tid, first)
    assert (await client.runs.get(tid, first))["status"] == "interrupted"


async def test_cancel_many_by_status_stops_every_run_with_it(client):
    tid, first = await busy(client)
    second = await client.runs.create(tid, "chain", input={"topic": "2"})
    assert second["status"] == "pending"
    await client.runs.cancel_many(status="pending")
    await client.runs.join(tid, second["run_id"])
    assert (await client.runs.get(tid, second["run_id"]))["status"] == "interrupted"
    assert (await client.runs.get(tid, first))["status"] == "running"
    await client.runs.cancel_many(status="running")
    await client.runs.join(tid, first)
    assert (await client.runs.get(tid, first))["status"] == "interrupted"
    with pytest.raises(UnprocessableEntityError):
        await client.runs.cancel_many(status="pending", thread_id=tid, run_ids=[first])
