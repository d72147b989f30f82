//! `/mcp` driven by weir's own MCP client (`weir_agent::mcp`, over rmcp's streamable HTTP
//! transport): a weir agent's tools can be another weir deployment's assistants. Lists them with
//! their graphs' input schemas, calls one (a stateless run), and gets a failing run and bad
//! arguments as errors that say what failed. The official Python client's view is
//! `tests/sdk/test_mcp.py`.

mod runs_support;

use runs_support::app;
use serde_json::{json, Map, Value};
use weir_agent::mcp::McpServer;
use weir_agent::message::Content;
use weir_agent::tool::Tool;

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

#[tokio::test]
async fn a_weir_agent_calls_a_weir_deployments_assistants_as_mcp_tools() {
    let (_dir, app) = app().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = app.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await });

    let client = McpServer::http(&url).connect().await.expect("the MCP handshake");
    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    for graph in ["chain", "hitl", "failing", "panics", "gated"] {
        assert!(names.contains(&graph), "{graph} is not among the tools {names:?}");
    }
    let chain = tools.iter().find(|t| t.spec().name == "chain").unwrap();
    assert_eq!(chain.spec().description, "Tool based on the chain assistant");
    assert_eq!(chain.spec().parameters["type"], "object");
    assert!(
        chain.spec().parameters["properties"].get("topic").is_some(),
        "{}",
        chain.spec().parameters
    );

    let Content::Text(out) = chain.invoke(args(json!({"topic": "m"}))).await.expect("a call") else {
        panic!("one text block expected");
    };
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"topic": "m", "log": ["a:m", "b"]})
    );
    // A stateless run: its temporary thread is gone.
    let threads = app.call("POST", "/threads/search", Some(json!({"limit": 100}))).await;
    assert_eq!(threads.body, json!([]));

    let failing = tools.iter().find(|t| t.spec().name == "failing").unwrap();
    let err = failing
        .invoke(args(json!({"topic": "x"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("ValueError: boom in node"), "{err}");
    let err = chain.invoke(args(json!({"topic": 7}))).await.unwrap_err().to_string();
    assert!(err.contains("params field `arguments.topic`"), "{err}");
}
