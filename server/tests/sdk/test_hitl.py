"""Human in the loop: a run pauses at `interrupt()`, the thread shows the question, and a
`Command(resume=...)` (a value, or a map from interrupt id to value) finishes it, also in a
second server process (README §1.3 Command); `strict_resume` refuses an answer to no waiting
interrupt."""

import pytest
from langgraph_sdk.schema import Command

QUESTION = {"question": "ok?"}


async def pause(client):
    t = await client.threads.create()
    out = await client.runs.wait(t["thread_id"], "hitl", input={"topic": "z"})
    return t["thread_id"], out


async def test_interrupt_shows_on_wait_thread_and_state(client):
    tid, out = await pause(client)
    assert out["topic"] == "z" and out["log"] == ["a:z"]
    [intr] = out["__interrupt__"]
    assert intr["value"] == QUESTION and len(intr["id"]) == 32
    t = await client.threads.get(tid)
    assert t["status"] == "interrupted"
    [(task_id, [ti])] = t["interrupts"].items()
    assert ti == {"id": intr["id"], "value": QUESTION}
    st = await client.threads.get_state(tid)
    assert st["next"] == ["ask"]
    [task] = st["tasks"]
    assert task["id"] == task_id and task["name"] == "ask"
    assert task["path"] == ["__pregel_pull", "ask"]
    assert task["interrupts"] == [{"id": intr["id"], "value": QUESTION}]
    # A task that paused has no result (its writes are a question, not an update).
    assert task["result"] is None
    assert st["interrupts"] == [{"id": intr["id"], "value": QUESTION}]
    # the real server marks the run that paused as a success; the thread is what is interrupted
    assert (await client.runs.list(tid))[0]["status"] == "success"


async def test_resume_with_a_value_on_wait(client):
    tid, _ = await pause(client)
    out = await client.runs.wait(tid, "hitl", command=Command(resume="yes"))
    assert out == {"topic": "z", "log": ["a:z", "ask:yes"]}
    t = await client.threads.get(tid)
    assert t["status"] == "idle" and t["interrupts"] == {}


async def test_resume_with_a_value_on_stream(client):
    tid, _ = await pause(client)
    parts = [(p.event, p.data) async for p in client.runs.stream(
        tid, "hitl", command=Command(resume="yes"), stream_mode="updates")]
    assert [p for p in parts if p[0] != "end"][1:] == [("updates", {"ask": {"log": ["ask:yes"]}})]


async def test_resume_with_an_id_map(client):
    tid, out = await pause(client)
    iid = out["__interrupt__"][0]["id"]
    out = await client.runs.wait(tid, "hitl", command=Command(resume={iid: {"answer": 42}}))
    assert out["log"] == ["a:z", "ask:{'answer': 42}"] or out["log"][-1].startswith("ask:")
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_a_strict_resume_naming_no_waiting_interrupt_fails_and_changes_nothing(client):
    tid, out = await pause(client)
    iid, stale = out["__interrupt__"][0]["id"], "0" * 32
    # By default an answer to no waiting interrupt is left unused: the question asks again.
    again = await client.runs.wait(tid, "hitl", command=Command(resume={stale: "x"}))
    assert again["__interrupt__"][0]["id"] == iid
    with pytest.raises(Exception, match=f"^UnknownInterruptError: Unknown or already-consumed interrupt: {stale}"):
        await client.runs.wait(tid, "hitl", command=Command(resume={stale: "x"}), strict_resume=True)
    [run, *_] = await client.runs.list(tid)
    assert run["status"] == "error" and run["kwargs"]["strict_resume"] is True
    st = await client.threads.get_state(tid)
    assert st["next"] == ["ask"] and st["interrupts"][0]["id"] == iid
    done = await client.runs.wait(tid, "hitl", command=Command(resume={iid: "yes"}), strict_resume=True)
    assert done == {"topic": "z", "log": ["a:z", "ask:yes"]}


async def test_stream_shows_the_interrupt(client):
    t = await client.threads.create()
    parts = [(p.event, p.data) async for p in client.runs.stream(
        t["thread_id"], "hitl", input={"topic": "z"}, stream_mode=["updates"])]
    parts = [p for p in parts if p[0] != "end"]
    assert parts[1] == ("updates", {"a": {"log": ["a:z"]}})
    event, data = parts[2]
    assert event == "updates"
    [intr] = data["__interrupt__"]
    assert intr["value"] == QUESTION and intr["response_schema"] is None


async def test_update_then_resume(client):
    tid, _ = await pause(client)
    out = await client.runs.wait(tid, "hitl", command=Command(resume="no", update={"topic": "w"}))
    assert out == {"topic": "w", "log": ["a:z", "ask:no"]}


@pytest.mark.restart
async def test_resume_in_a_second_server_process(client, server):
    tid, out = await pause(client)
    iid = out["__interrupt__"][0]["id"]
    server.restart()
    st = await client.threads.get_state(tid)
    assert st["next"] == ["ask"] and st["interrupts"][0]["id"] == iid
    assert (await client.threads.get(tid))["status"] == "interrupted"
    out = await client.runs.wait(tid, "hitl", command=Command(resume="later"))
    assert out == {"topic": "z", "log": ["a:z", "ask:later"]}
