"""`/a2a/{assistant_id}` (README §1.2 tier C): each assistant as an A2A agent, driven by the
official A2A client (`a2a-sdk`) in both versions of the protocol the card offers (1.0, which the
client takes by default, and 0.3): the card resolved from the agent's URL, a message answered and
its context kept, a file sent with text and shown in the task's history, a streamed answer, a task
that asks for input resumed by the next message naming it, a task cancelled, an unknown task
refused, and (1.0) the assistant's tasks listed."""

import base64
import uuid

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from conftest import URL


VERSIONS = ["1.0", "0.3"]


@pytest.fixture(params=VERSIONS)
def version(request):
    return request.param


async def agent(graph, version, streaming=False):
    """A client of `graph`'s agent that speaks `version`: the card's other interfaces left out."""
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"{URL}/a2a/{graph}").get_agent_card()
    assert {i.protocol_version for i in card.supported_interfaces} >= {"1.0", "0.3.0"}
    kept = [i for i in card.supported_interfaces if i.protocol_version.startswith(version)]
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(kept)
    return ClientFactory(ClientConfig(streaming=streaming)).create(card)


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


async def test_an_assistant_answers_a_message_and_its_context_keeps_the_conversation(version):
    client = await agent("chatbot", version)
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


async def test_a_file_goes_with_the_text_and_is_in_the_task_s_history(version):
    client = await agent("chatbot", version)
    png = b"\x89PNG\r\n\x1a\n"
    parts = [pb.Part(text="what is this?"), pb.Part(raw=png, media_type="image/png", filename="cat.png")]
    [sent] = await send(client, pb.Message(role=pb.ROLE_USER, message_id=str(uuid.uuid4()), parts=parts))
    task = sent["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    [asked, answered] = task["history"]
    assert asked["role"] == "ROLE_USER"
    [said, file] = asked["parts"]
    assert said == {"text": "what is this?"}
    assert (file["mediaType"], file["filename"]) == ("image/png", "cat.png")
    assert base64.b64decode(file["raw"]) == png
    assert texts(answered["parts"]) == ["hello there friend"]
    await client.close()


async def test_a_streamed_answer_comes_in_pieces_then_as_an_artifact(version):
    client = await agent("chatbot", version, streaming=True)
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


async def test_a_task_that_asks_for_input_is_resumed_by_the_next_message(version):
    client = await agent("hitl", version)
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


async def test_a_working_task_is_cancelled_and_an_unknown_one_refused(version):
    client = await agent("slow", version)
    [started] = await send(client, data({"topic": "s"}), return_immediately=True)
    task = started["task"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    cancelled = MessageToDict(await client.cancel_task(pb.CancelTaskRequest(id=task["id"])))
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    with pytest.raises(TaskNotFoundError, match="Task not found"):
        await client.get_task(pb.GetTaskRequest(id="no-such-task"))
    await client.close()


async def test_a_1_0_client_lists_the_assistants_tasks():
    client = await agent("chatbot", "1.0")
    [sent] = await send(client, text("to list"))
    context = sent["task"]["contextId"]
    listed = MessageToDict(await client.list_tasks(pb.ListTasksRequest(context_id=context)))
    assert [t["id"] for t in listed["tasks"]] == [sent["task"]["id"]]
    assert listed["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"
    await client.close()
