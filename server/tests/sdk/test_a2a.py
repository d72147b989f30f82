"""`/a2a/{assistant_id}` (README §1.2 tier C): each assistant as an A2A agent, driven by the
official A2A client (`a2a-sdk`, which speaks A2A 0.3 to an agent whose card announces it): the
card resolved from the agent's URL, a message answered and its context kept, a streamed answer,
a task that asks for input resumed by the next message naming it, a task cancelled, and an
unknown task refused."""

import uuid

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from conftest import URL


async def agent(graph, streaming=False):
    return await create_client(f"{URL}/a2a/{graph}", client_config=ClientConfig(streaming=streaming))


def text(words, **ids):
    return pb.Message(role=pb.ROLE_USER, message_id=str(uuid.uuid4()), parts=[pb.Part(text=words)], **ids)


def data(fields, **ids):
    return pb.Message(role=pb.ROLE_USER, message_id=str(uuid.uuid4()), parts=[pb.Part(data={"struct_value": fields})], **ids)


async def send(client, message, **configuration):
    """The responses to a message, as dicts."""
    request = pb.SendMessageRequest(message=message, configuration=pb.SendMessageConfiguration(**configuration))
    return [MessageToDict(r) async for r in client.send_message(request)]


def texts(parts):
    return [p["text"] for p in parts if "text" in p]


async def test_an_assistant_answers_a_message_and_its_context_keeps_the_conversation():
    client = await agent("chatbot")
    [first] = await send(client, text("hi"))
    task = first["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert texts(task["artifacts"][0]["parts"]) == ["hello there friend"]
    context = task["contextId"]

    [second] = await send(client, text("again", context_id=context))
    assert second["task"]["contextId"] == context
    got = MessageToDict(await client.get_task(pb.GetTaskRequest(id=second["task"]["id"])))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    said = [(m["role"], texts(m["parts"])) for m in got["history"]]
    assert said == [
        ("ROLE_USER", ["hi"]), ("ROLE_AGENT", ["hello there friend"]),
        ("ROLE_USER", ["again"]), ("ROLE_AGENT", ["hello there friend"]),
    ]
    await client.close()


async def test_a_streamed_answer_comes_in_pieces_then_as_an_artifact():
    client = await agent("chatbot", streaming=True)
    events = await send(client, text("hi"))
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    pieces = [
        "".join(texts(e["statusUpdate"]["status"]["message"]["parts"]))
        for e in events
        if "statusUpdate" in e and "message" in e["statusUpdate"]["status"]
    ]
    assert "".join(pieces) == "hello there friend" and len(pieces) > 1
    assert texts(events[-2]["artifactUpdate"]["artifact"]["parts"]) == ["hello there friend"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    await client.close()


async def test_a_task_that_asks_for_input_is_resumed_by_the_next_message():
    client = await agent("hitl")
    [asked] = await send(client, data({"topic": "x"}))
    task = asked["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"][0]["data"] == {"question": "ok?"}
    assert task["artifacts"][0]["name"] == "Interrupt"

    [done] = await send(client, text("yes", task_id=task["id"], context_id=task["contextId"]))
    assert done["task"]["id"] == task["id"]
    assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["task"]["artifacts"][0]["parts"][0]["data"]["log"] == ["a:x", "ask:yes"]
    await client.close()


async def test_a_working_task_is_cancelled_and_an_unknown_one_refused():
    client = await agent("slow")
    [started] = await send(client, data({"topic": "s"}), return_immediately=True)
    task = started["task"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    cancelled = MessageToDict(await client.cancel_task(pb.CancelTaskRequest(id=task["id"])))
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    with pytest.raises(TaskNotFoundError, match="Task not found"):
        await client.get_task(pb.GetTaskRequest(id="no-such-task"))
    await client.close()
