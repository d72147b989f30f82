//! MCP tools against weir-agent's demo server (`weir-mcp-demo`, built by cargo for these
//! tests): listing and calling over stdio and streamable HTTP, tool errors, a server that dies
//! mid-call, timeouts, bad servers, reaping the child process, and a ReAct agent using the
//! tools.

#[path = "../examples/mcp.rs"]
#[allow(dead_code)]
mod example;

use serde_json::{json, Map, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use weir_agent::mcp::{connect_http, connect_stdio, result_content, McpErrorKind, McpServer, McpTool};
use weir_agent::message::{AiMessage, Content, Message, MessagesStateUpdate, ToolCall, ToolStatus};
use weir_agent::model::FakeChatModel;
use weir_agent::react_agent;
use weir_runtime::RunConfig;

const DEMO: &str = env!("CARGO_BIN_EXE_weir-mcp-demo");

/// The demo server over stdio, named `demo`, with a bounded call time so that a broken test
/// fails instead of hanging.
fn demo() -> McpServer {
    McpServer::stdio(DEMO)
        .name("demo")
        .call_timeout(Duration::from_secs(30))
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn by_name(tools: &[McpTool], name: &str) -> McpTool {
    tools
        .iter()
        .find(|t| weir_agent::tool::Tool::spec(*t).name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool `{name}`"))
}

/// The demo server over streamable HTTP, as a child process killed on drop.
struct HttpDemo {
    url: String,
    _child: tokio::process::Child,
}

async fn http_demo() -> HttpDemo {
    let mut child = tokio::process::Command::new(DEMO)
        .arg("--http")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo server starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await.unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "the server printed {line:?}");
    HttpDemo {
        url: line.trim().to_owned(),
        _child: child,
    }
}

/// Lists the demo's tools and calls `add` and `echo`.
async fn list_and_call(tools: &[McpTool]) {
    let mut names: Vec<&str> = tools
        .iter()
        .map(|t| weir_agent::tool::Tool::spec(t).name.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "crash", "echo", "sleep"]);
    let add = by_name(tools, "add");
    let spec = weir_agent::tool::Tool::spec(&add);
    assert_eq!(spec.description, "Adds two integers.");
    assert_eq!(spec.parameters["type"], "object");
    assert_eq!(spec.parameters["properties"]["a"]["type"], "integer");
    assert_eq!(spec.parameters["properties"]["b"]["description"], "The second number.");
    let mut required: Vec<Value> = spec.parameters["required"].as_array().cloned().unwrap();
    required.sort_by_key(Value::to_string);
    assert_eq!(required, [json!("a"), json!("b")]);

    let sum = add.invoke(args(json!({"a": 40, "b": 2}))).await.unwrap();
    assert_eq!(sum, Content::Text("42".into()));
    let echo = by_name(tools, "echo");
    let back = echo.invoke(args(json!({"text": "hello, MCP"}))).await.unwrap();
    assert_eq!(back, Content::Text("hello, MCP".into()));
}

#[tokio::test]
async fn tools_are_listed_and_called_over_stdio() {
    let client = connect_stdio(DEMO, Vec::<String>::new(), [("RUST_LOG", "off")])
        .await
        .unwrap();
    assert_eq!(
        client.name(),
        "weir-mcp-demo",
        "a stdio server is named after its command"
    );
    list_and_call(&client.list_tools().await.unwrap()).await;
}

#[tokio::test]
async fn tools_are_listed_and_called_over_streamable_http() {
    let server = http_demo().await;
    let headers = [("x-weir-test".to_owned(), "1".to_owned())];
    let client = connect_http(server.url.clone(), headers).await.unwrap();
    assert_eq!(client.name(), server.url);
    list_and_call(&client.list_tools().await.unwrap()).await;
}

#[tokio::test]
async fn a_tool_error_and_bad_arguments_are_errors_naming_the_server_and_the_tool() {
    let client = demo().connect().await.unwrap();
    let add = by_name(&client.list_tools().await.unwrap(), "add");

    let e = add.invoke(args(json!({"a": i64::MAX, "b": 1}))).await.unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Tool(t) if t.contains("overflows a 64-bit integer")),
        "{e}"
    );
    assert_eq!((e.server(), e.tool()), ("demo", Some("add")));
    assert!(
        e.to_string()
            .starts_with("MCP server `demo`, tool `add`: the tool failed: "),
        "{e}"
    );

    // rmcp's server answers arguments that do not fit as a tool error (`isError`).
    let e = add.invoke(args(json!({"a": "two"}))).await.unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Tool(t) if t.contains("invalid type: string \"two\"")),
        "{e}"
    );
    // The connection is still usable.
    let sum = add.invoke(args(json!({"a": 1, "b": 1}))).await.unwrap();
    assert_eq!(sum.text(), "2");
}

#[tokio::test]
async fn a_stdio_server_that_dies_mid_call_is_a_tool_error_then_every_call_fails() {
    let client = demo().connect().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    let e = by_name(&tools, "crash")
        .invoke(args(json!({"code": 3})))
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), McpErrorKind::Closed), "{e}");
    assert_eq!(
        e.to_string(),
        "MCP server `demo`, tool `crash`: the connection is closed (did the server exit?)"
    );
    let e = by_name(&tools, "echo")
        .invoke(args(json!({"text": "anyone?"})))
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), McpErrorKind::Closed), "{e}");
}

#[tokio::test]
async fn an_http_server_that_dies_mid_call_is_a_tool_error() {
    let server = http_demo().await;
    let client = McpServer::http(&server.url)
        .name("remote")
        .call_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    let e = by_name(&tools, "crash")
        .invoke(args(json!({"code": 3})))
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Closed),
        "the failure is seen, not waited out: {e}"
    );
    assert_eq!((e.server(), e.tool()), ("remote", Some("crash")));
    let e = by_name(&tools, "echo")
        .invoke(args(json!({"text": "anyone?"})))
        .await
        .unwrap_err();
    assert_eq!((e.server(), e.tool()), ("remote", Some("echo")), "{e}");
}

#[tokio::test]
async fn a_call_without_an_answer_in_time_fails_and_the_connection_survives() {
    let client = demo().call_timeout(Duration::from_millis(200)).connect().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    let e = by_name(&tools, "sleep")
        .invoke(args(json!({"ms": 60_000})))
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Timeout(d) if *d == Duration::from_millis(200)),
        "{e}"
    );
    assert_eq!(e.to_string(), "MCP server `demo`, tool `sleep`: no answer within 200ms");
    let back = by_name(&tools, "echo")
        .invoke(args(json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(back.text(), "still here");
}

#[tokio::test]
async fn servers_that_cannot_start_or_do_not_speak_mcp_fail_to_connect_with_their_name() {
    let e = McpServer::stdio("/nonexistent/weir-mcp-nothing")
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Spawn(io) if io.kind() == std::io::ErrorKind::NotFound),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("MCP server `weir-mcp-nothing`: cannot start the server process: "),
        "{e}"
    );

    let e = demo()
        .name("noisy")
        .args(["--garbage"])
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Connect(_) | McpErrorKind::Timeout(_)),
        "{e}"
    );
    assert!(e.to_string().starts_with("MCP server `noisy`: "), "{e}");

    let e = McpServer::http("http://127.0.0.1:9/mcp")
        .header("bad header", "x")
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), McpErrorKind::Config(m) if m.starts_with("header `bad header`")),
        "{e}"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_child_process_is_reaped_once_the_client_and_its_tools_are_dropped() {
    let client = demo().connect().await.unwrap();
    let pid = client.pid().expect("a stdio server has a pid");
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let tools = client.tools().await.unwrap();
    drop(client);
    assert!(proc.exists(), "the tools keep the server running");
    drop(tools);
    // A bounded wait for the asynchronous shutdown: the test fails rather than hangs.
    for _ in 0..200 {
        if !proc.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let state = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
    panic!("the server process {pid} is still there: {state}");
}

#[tokio::test]
async fn after_close_calls_fail_as_closed() {
    let client = demo().connect().await.unwrap();
    let echo = by_name(&client.list_tools().await.unwrap(), "echo");
    assert_eq!(echo.invoke(args(json!({"text": "open"}))).await.unwrap().text(), "open");
    client.close();
    let e = echo.invoke(args(json!({"text": "closed?"}))).await.unwrap_err();
    assert!(matches!(e.kind(), McpErrorKind::Closed), "{e}");
}

#[tokio::test]
async fn a_react_agent_calls_mcp_tools_and_answers_with_their_results() {
    let client = demo().connect().await.unwrap();
    let calls = vec![
        ToolCall::new("call_add", "add", args(json!({"a": 2, "b": 3}))),
        ToolCall::new("call_echo", "echo", args(json!({"text": "hi from MCP"}))),
        ToolCall::new("call_overflow", "add", args(json!({"a": i64::MAX, "b": 1}))),
    ];
    let model = FakeChatModel::new([
        AiMessage::new("").with_tool_calls(calls),
        AiMessage::new("2 + 3 = 5, and the server said: hi from MCP"),
    ])
    .recording();
    let app = react_agent(model, client.tools().await.unwrap()).compile().unwrap();
    let input = MessagesStateUpdate::default().messages(Message::human("add 2 and 3, then echo").into());
    let out = app.invoke(input, &RunConfig::default()).await.unwrap();

    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "tool", "tool", "ai"]);
    let answers: Vec<(&str, String, ToolStatus)> = out.messages[2..5]
        .iter()
        .map(|m| {
            let t = m.as_tool().unwrap();
            (t.tool_call_id.as_str(), t.content.text(), t.status)
        })
        .collect();
    assert_eq!(answers[0], ("call_add", "5".to_owned(), ToolStatus::Success));
    assert_eq!(answers[1], ("call_echo", "hi from MCP".to_owned(), ToolStatus::Success));
    assert_eq!((answers[2].0, answers[2].2), ("call_overflow", ToolStatus::Error));
    assert!(answers[2]
        .1
        .starts_with("Error: MCP server `demo`, tool `add`: the tool failed: "));
    assert_eq!(out.messages[5].text(), "2 + 3 = 5, and the server said: hi from MCP");
}

#[tokio::test]
async fn the_example_runs_its_agent_against_the_demo_server() {
    let messages = example::run(demo()).await.unwrap();
    let texts: Vec<String> = messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        [
            "add 19 and 23, then echo",
            "",
            "42",
            "hello over MCP",
            "19 + 23 = 42, and the server echoed: hello over MCP"
        ]
    );
}

#[test]
fn results_become_text_blocks_or_structured_json_and_errors_their_text() {
    use rmcp::model::{CallToolResult, ContentBlock};
    let one = CallToolResult::success(vec![ContentBlock::text("5")]);
    assert_eq!(result_content(one), Ok(Content::Text("5".into())));

    let two = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::image("aGk=", "image/png")]);
    let Ok(Content::Blocks(blocks)) = result_content(two) else {
        panic!("two blocks stay blocks");
    };
    assert_eq!(blocks[0], json!({"type": "text", "text": "a"}));
    assert_eq!(
        (blocks[1]["type"].as_str(), blocks[1]["data"].as_str()),
        (Some("image"), Some("aGk="))
    );

    let mut structured = CallToolResult::structured(json!({"sum": 5}));
    structured.content.clear();
    let Ok(Content::Text(text)) = result_content(structured) else {
        panic!("structured content alone is text");
    };
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), json!({"sum": 5}));

    let failed = CallToolResult::error(vec![ContentBlock::text("no such city")]);
    assert_eq!(result_content(failed), Err("no such city".to_owned()));
}
