"""Crons (README §1.2 tier C, `/runs/crons`): made on a thread or stateless, read, searched,
counted, changed and deleted with the official client, with the shapes of LangGraph's server
(checked against `langgraph dev` 0.16.7); and fired by the scheduler: a six-field schedule has
seconds last (croniter's form), so `* * * * * *` fires every second."""

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from conftest import assistant_id

EVERY_SECOND = "* * * * * *"


async def wait_for(check, timeout=10.0):
    """Polls `check` (async, returning a truthy value when done) until it is, or fails."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = await check()
        if got:
            return got
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"not done within {timeout}s: last {got!r}")
        await asyncio.sleep(0.2)


async def test_a_threads_cron_has_langgraphs_shape_and_runs_on_its_thread(client, thread):
    tid = thread["thread_id"]
    cron = await client.crons.create_for_thread(
        tid, "chain", schedule=EVERY_SECOND, input={"topic": "tick"}, metadata={"who": "cron"}
    )
    assert set(cron) == {
        "cron_id", "assistant_id", "thread_id", "user_id", "end_time", "schedule", "timezone", "payload",
        "next_run_date", "metadata", "on_run_completed", "enabled", "created_at", "updated_at",
    }
    assert uuid.UUID(cron["cron_id"]).version == 7
    assert cron["assistant_id"] == assistant_id("chain")
    assert cron["thread_id"] == tid and cron["user_id"] == ""
    assert cron["on_run_completed"] is None and cron["enabled"] is True and cron["end_time"] is None
    assert cron["metadata"] == {"who": "cron"}
    assert cron["payload"]["input"] == {"topic": "tick"}
    assert cron["payload"]["assistant_id"] == assistant_id("chain")
    assert cron["payload"]["config"]["configurable"]["cron_id"] == cron["cron_id"]
    assert cron["next_run_date"].endswith("+00:00")
    assert cron["created_at"].endswith("+00:00")
    assert await client.crons.count(thread_id=tid) == 1

    runs = await wait_for(lambda: _runs_done(client, tid, 2))
    run = runs[0]
    assert run["metadata"]["who"] == "cron" and run["metadata"]["graph_id"] == "chain"
    assert run["kwargs"]["config"]["configurable"]["cron_id"] == cron["cron_id"]
    state = await client.threads.get_state(tid)
    assert state["values"]["log"][:2] == ["a:tick", "b"]

    await client.crons.delete(cron["cron_id"])
    settled = len(await client.runs.list(tid, limit=100))
    await asyncio.sleep(2.5)
    assert len(await client.runs.list(tid, limit=100)) == settled, "a deleted cron fired"


async def _runs_done(client, tid, n):
    runs = await client.runs.list(tid, limit=100)
    done = [r for r in runs if r["status"] == "success"]
    return done if len(done) >= n else None


# weir only: `langgraph dev` answers a search by `values` with a 500 once a thread has none.
@pytest.mark.weir_only
async def test_a_stateless_cron_makes_a_thread_per_run_and_keeps_them_when_asked(client):
    tag = str(uuid.uuid4())
    kept = await client.crons.create(
        "chain", schedule=EVERY_SECOND, input={"topic": tag}, on_run_completed="keep"
    )
    assert kept["thread_id"] is None and kept["on_run_completed"] == "keep"

    async def threads():
        found = await client.threads.search(values={"topic": tag}, limit=100)
        return found if len(found) >= 2 else None

    found = await wait_for(threads)
    await client.crons.delete(kept["cron_id"])
    assert len({t["thread_id"] for t in found}) == len(found)
    assert all(t["values"]["log"] == [f"a:{tag}", "b"] for t in found)
    dropped = await client.crons.create("chain", schedule="0 9 * * *", input={"topic": tag})
    assert dropped["on_run_completed"] == "delete"
    await client.crons.delete(dropped["cron_id"])


async def test_crons_are_read_searched_sorted_selected_and_counted(client, raw, thread):
    tag = str(uuid.uuid4())
    a = await client.crons.create_for_thread(
        thread["thread_id"], "chain", schedule="0 9 * * *", metadata={"tag": tag, "n": 1}, timezone="America/New_York"
    )
    b = await client.crons.create("hitl", schedule="30 8 * * *", metadata={"tag": tag, "n": 2}, enabled=False)
    try:
        got = await raw.get(f"/runs/crons/{a['cron_id']}")
        assert got.status_code == 200 and got.json() == a
        # 09:00 in New York is 14:00 or 13:00 UTC.
        assert a["next_run_date"][11:19] in ("14:00:00", "13:00:00")
        found = await client.crons.search(metadata={"tag": tag})
        assert [c["cron_id"] for c in found] == [b["cron_id"], a["cron_id"]]
        by_next = await client.crons.search(metadata={"tag": tag}, sort_by="next_run_date", sort_order="asc")
        assert [c["next_run_date"] for c in by_next] == sorted(c["next_run_date"] for c in by_next)
        only = await client.crons.search(assistant_id=assistant_id("hitl"), metadata={"tag": tag})
        assert [c["cron_id"] for c in only] == [b["cron_id"]]
        off = await client.crons.search(enabled=False, metadata={"tag": tag})
        assert [c["cron_id"] for c in off] == [b["cron_id"]]
        picked = await client.crons.search(metadata={"tag": tag}, select=["cron_id", "schedule"], limit=1)
        assert picked == [{"cron_id": b["cron_id"], "schedule": "30 8 * * *"}]
        assert await client.crons.count(metadata={"tag": tag}) == 2
        assert await client.crons.count(assistant_id=assistant_id("chain"), metadata={"tag": tag}) == 1
    finally:
        await client.crons.delete(a["cron_id"])
        await client.crons.delete(b["cron_id"])
    assert await client.crons.count(metadata={"tag": tag}) == 0


async def test_a_cron_is_changed_by_patch(client, raw, thread):
    cron = await client.crons.create_for_thread(
        thread["thread_id"], "chain", schedule="0 9 * * *", input={"topic": "x"}, metadata={"m": 1}
    )
    cid = cron["cron_id"]
    end = datetime.now(timezone.utc) + timedelta(days=30)
    changed = await client.crons.update(
        cid, schedule="15 10 * * *", metadata={"n": 2}, input={"topic": "y"}, end_time=end, timezone="Europe/Paris"
    )
    assert changed["schedule"] == "15 10 * * *" and changed["timezone"] == "Europe/Paris"
    assert changed["metadata"] == {"m": 1, "n": 2}
    assert changed["payload"]["input"] == {"topic": "y"} and changed["payload"]["metadata"] == {"n": 2}
    assert changed["payload"]["config"]["configurable"]["cron_id"] == cid
    assert changed["end_time"].startswith(end.strftime("%Y-%m-%dT%H:%M:%S"))
    assert changed["next_run_date"][11:19] in ("09:15:00", "08:15:00")
    assert changed["updated_at"] >= cron["updated_at"] and changed["created_at"] == cron["created_at"]
    cleared = await client.crons.update(cid, end_time=None, enabled=False)
    assert cleared["end_time"] is None and cleared["enabled"] is False

    empty = await raw.patch(f"/runs/crons/{cid}", json={})
    assert empty.status_code == 400 and empty.json() == {"detail": "Request body cannot be empty"}
    assert (await raw.get(f"/runs/crons/{cid}")).json() == cleared
    await client.crons.delete(cid)
    with pytest.raises(NotFoundError):
        await client.crons.update(cid, enabled=True)


# weir only: LangGraph answers some of these with a 500 (no `schedule`) or words them otherwise.
@pytest.mark.weir_only
async def test_bad_crons_are_refused_naming_the_field(client, raw, thread):
    for body, field in [
        ({"assistant_id": "chain"}, "schedule"),
        ({"assistant_id": "chain", "schedule": "bad"}, "schedule"),
        ({"assistant_id": "chain", "schedule": "0 0 30 2 *"}, "no time in the next five years"),
        ({"assistant_id": "chain", "schedule": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"assistant_id": "chain", "schedule": "* * * * *", "end_time": "tomorrow"}, "end_time"),
        ({"assistant_id": "chain", "schedule": "* * * * *", "on_run_completed": "bogus"}, "on_run_completed"),
        ({"assistant_id": "chain", "schedule": "* * * * *", "input": {"topic": 5}}, "topic"),
        ({"assistant_id": "chain", "schedule": "* * * * *", "stream_mode": "nope"}, "stream_mode"),
        ({"assistant_id": "nope", "schedule": "* * * * *"}, "Invalid assistant"),
    ]:
        r = await raw.post("/runs/crons", json=body)
        assert r.status_code == 422, (body, r.text)
        assert field in r.json()["detail"], (body, r.text)
    r = await raw.post(f"/threads/{thread['thread_id']}/runs/crons", json={"assistant_id": "chain", "schedule": "* * * * *", "on_run_completed": "keep"})
    assert r.status_code == 422 and "on_run_completed" in r.json()["detail"]
    with pytest.raises(NotFoundError):
        await client.crons.create_for_thread(str(uuid.uuid4()), "chain", schedule="* * * * *")
    with pytest.raises(NotFoundError):
        await client.crons.create(str(uuid.uuid4()), schedule="* * * * *")
    with pytest.raises(NotFoundError):
        await client.crons.delete(str(uuid.uuid4()))
    for path in ["/runs/crons/not-a-uuid"]:
        r = await raw.get(path)
        assert r.status_code == 422 and "cron_id" in r.json()["detail"]
    # A change is checked as a new cron is, and a refused one changes nothing.
    cron = await client.crons.create_for_thread(thread["thread_id"], "chain", schedule="0 9 * * *")
    cid = cron["cron_id"]
    nulls = await raw.patch(f"/runs/crons/{cid}", json={"schedule": None})
    assert nulls.status_code == 400 and nulls.json() == {"detail": "No fields to update"}
    for body, field in [
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"end_time": "soon"}, "end_time"),
        ({"on_run_completed": "keep"}, "on_run_completed"),
        ({"input": {"topic": 3}}, "topic"),
        ({"colour": "red"}, "colour"),
    ]:
        r = await raw.patch(f"/runs/crons/{cid}", json=body)
        assert r.status_code == 422, (body, r.text)
        assert field in r.json()["detail"], (body, r.text)
    assert (await raw.get(f"/runs/crons/{cid}")).json() == cron
    await client.crons.delete(cid)
    with pytest.raises(UnprocessableEntityError):
        await client.crons.search(sort_by="schedule")
    with pytest.raises(UnprocessableEntityError):
        await client.crons.search(thread_id="not-a-uuid")
    with pytest.raises(UnprocessableEntityError):
        await client.crons.search(select=["colour"])
    assert (await raw.get("/info")).json()["flags"]["crons"] is True


async def test_deleting_a_thread_deletes_its_crons(client):
    t = await client.threads.create()
    cron = await client.crons.create_for_thread(t["thread_id"], "chain", schedule="0 9 * * *")
    await client.threads.delete(t["thread_id"])
    assert await client.crons.count(thread_id=t["thread_id"]) == 0
    with pytest.raises(NotFoundError):
        await client.crons.delete(cron["cron_id"])
