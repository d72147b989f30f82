"""`/mcp` (README §1.2 tier C): the assistants as the tools of an MCP server, driven by the
official MCP client (`mcp`): the handshake, `tools/list` with each graph's input schema,
`tools/call` as a stateless run, a failing run as an error result, an unknown tool refused."""

import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import URL


async def test_the_assistants_are_tools_an_mcp_client_lists_and_calls(client):
    async with Client(URL + "/mcp") as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        assert {"chain", "hitl", "failing", "slow", "parent", "chatbot"} <= set(tools)
        chain = tools["chain"]
        assert chain.title == "chain" and chain.description
        assert chain.input_schema["type"] == "object"
        assert "topic" in chain.input_schema["properties"]

        called = await mcp.call_tool("chain", {"topic": "mcp"})
        assert not called.is_error
        text = called.content[0].text
        assert "a:mcp" in text and ("'b'" in text or '"b"' in text)

        failed = await mcp.call_tool("failing", {"topic": "x"})
        assert failed.is_error and "ValueError" in failed.content[0].text

        with pytest.raises(MCPError, match="Unknown tool"):
            await mcp.call_tool("no_such_tool", {})

    # Each call was a stateless run: no thread is left behind.
    threads = await client.threads.search(metadata={"graph_id": "chain"}, limit=100)
    assert not [t for t in threads if t["values"] and t["values"].get("topic") == "mcp"]


@pytest.mark.weir_only
async def test_a_call_answers_json_and_names_a_bad_argument():
    # LangGraph answers Python's repr of the output, and a 500 for arguments that do not fit.
    async with Client(URL + "/mcp") as mcp:
        called = await mcp.call_tool("chain", {"topic": "json"})
        assert json.loads(called.content[0].text) == {"topic": "json", "log": ["a:json", "b"]}
        assert called.structured_content == {"topic": "json", "log": ["a:json", "b"]}
        with pytest.raises(MCPError, match=r"params field `arguments.topic`: invalid type"):
            await mcp.call_tool("chain", {"topic": 7})
        with pytest.raises(MCPError, match=r"params field `arguments.topic`: holds the NUL"):
            await mcp.call_tool("chain", {"topic": "a\x00b"})


@pytest.mark.weir_only
async def test_what_is_not_an_mcp_message_is_refused(raw):
    headers = {"Accept": "application/json, text/event-stream"}
    bad = await raw.post("/mcp", content=b"{not json", headers=headers)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
    old = await raw.post("/mcp", json={"jsonrpc": "1.0", "id": 1, "method": "ping"}, headers=headers)
    assert old.status_code == 400 and "`jsonrpc`" in old.json()["error"]["message"]
    note = await raw.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert note.status_code == 202
    unknown = await raw.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "resources/list"}, headers=headers)
    assert unknown.json() == {"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "Method not found: resources/list"}}
    bad_method = await raw.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": 7}, headers=headers)
    assert bad_method.status_code == 400 and "`method`" in bad_method.json()["error"]["message"]
    answer = await raw.post("/mcp", json={"jsonrpc": "2.0", "id": 5, "result": {}}, headers=headers)
    assert answer.status_code == 202
    neither = await raw.post("/mcp", json={"jsonrpc": "2.0", "id": 6}, headers=headers)
    assert neither.status_code == 400
    assert (await raw.get("/mcp")).status_code == 405
    html = await raw.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Accept": "text/html"})
    assert html.status_code == 406
