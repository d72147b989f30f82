//! A run's context in a flow (LangGraph's `Runtime.context`, a server run's `context`): a
//! condition reads it as `context` beside the state's fields, a `set` template and an `output`
//! message as `{{ context.x }}`; a path into the context that it does not have fails the node,
//! naming the node, the path and where the node reads it. A resumed run is given its context
//! again (`resume_with_context`): a context is a run's, not a thread's.

use serde_json::{json, Value};
use weir_flow::{Event, Flow, Registry};

/// start -> triage ? (pro: context.plan == 'pro' && amount > 10) -> greet_pro | else -> greet -> done.
fn flow() -> Flow {
    let f = json!({
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "triage", "type": "condition", "data": {"branches": [
                {"id": "pro", "when": "context.plan == 'pro' && amount > 10"}
            ]}},
            {"id": "greet_pro", "type": "set", "data": {"assign": {
                "text": "priority for {{ context.user.name }} ({{ amount }})"
            }}},
            {"id": "greet", "type": "output", "data": {"message": "hello {{ context.user.name }}", "to": "text"}},
            {"id": "done", "type": "end"}
        ],
        "edges": [
            {"id": "e1", "source": "start", "target": "triage"},
            {"id": "e2", "source": "triage", "sourceHandle": "pro", "target": "greet_pro"},
            {"id": "e3", "source": "triage", "sourceHandle": "else", "target": "greet"},
            {"id": "e4", "source": "greet_pro", "target": "done"},
            {"id": "e5", "source": "greet", "target": "done"}
        ],
        "state": {"amount": {"type": "number"}, "text": {"type": "string"}}
    });
    Flow::from_json(&f.to_string(), &Registry::new()).unwrap()
}

fn ctx(plan: &str, name: &str) -> Value {
    json!({"plan": plan, "user": {"name": name}})
}

async fn text(flow: &Flow, amount: i64, context: Value) -> Value {
    let out = flow
        .invoke_with_context(json!({"amount": amount}), context)
        .await
        .unwrap();
    out.get("text").cloned().unwrap_or(Value::Null)
}

#[tokio::test]
async fn conditions_and_templates_read_the_run_context() {
    let flow = flow();
    assert_eq!(text(&flow, 50, ctx("pro", "ada")).await, json!("priority for ada (50)"));
    assert_eq!(text(&flow, 50, ctx("free", "bo")).await, json!("hello bo"));
    // The state still counts: a small amount takes `else` on the pro plan too.
    assert_eq!(text(&flow, 5, ctx("pro", "cy")).await, json!("hello cy"));
}

#[tokio::test]
async fn an_output_message_reads_the_context_in_its_event() {
    let flow = flow();
    let mut messages = Vec::new();
    flow.run_with_context(json!({"amount": 1}), None, ctx("free", "di"), |e| {
        if let Event::Message { text, .. } = e {
            messages.push(text);
        }
    })
    .await
    .unwrap();
    assert_eq!(messages, ["hello di"]);
}

#[tokio::test]
async fn a_condition_reading_a_key_the_context_lacks_fails_naming_the_node_the_path_and_where() {
    let err = flow()
        .invoke_with_context(json!({"amount": 50}), json!({"tier": "pro"}))
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("triage"));
    let message = err.to_string();
    assert!(
        message.contains(
            "node `triage` reads `context.plan` (at `data.branches[0].when`), but the run's context has no key `plan`; its keys are `tier`"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_template_reading_a_nested_key_the_context_lacks_fails_naming_the_path() {
    let err = flow()
        .invoke_with_context(json!({"amount": 50}), json!({"plan": "pro", "user": {"id": 7}}))
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("greet_pro"));
    let message = err.to_string();
    assert!(
        message.contains(
            "node `greet_pro` reads `context.user.name` (at `data.assign.text`), but `context.user` has no key `name`; its keys are `id`"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_run_without_a_context_fails_where_a_node_reads_one() {
    let err = flow().invoke(json!({"amount": 50})).await.unwrap_err();
    assert_eq!(err.node(), Some("triage"));
    assert!(
        err.to_string()
            .contains("but the run's context has no key `plan` (the run has no context)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_context_that_is_not_an_object_is_refused() {
    let err = flow()
        .invoke_with_context(json!({"amount": 50}), json!("pro"))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the run's context must be a JSON object, not a string");
}

#[tokio::test]
async fn a_flow_that_reads_no_context_runs_as_before_and_a_has_test_reads_nothing() {
    let f = json!({
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "vip", "type": "condition", "data": {"branches": [
                {"id": "yes", "when": "has(context.vip) && context.vip"}
            ]}},
            {"id": "mark", "type": "set", "data": {"assign": {"text": "vip"}}},
            {"id": "done", "type": "end"}
        ],
        "edges": [
            {"id": "e1", "source": "start", "target": "vip"},
            {"id": "e2", "source": "vip", "sourceHandle": "yes", "target": "mark"},
            {"id": "e3", "source": "vip", "sourceHandle": "else", "target": "done"},
            {"id": "e4", "source": "mark", "target": "done"}
        ],
        "state": {"text": {"type": "string", "default": "plain"}}
    });
    let flow = Flow::from_json(&f.to_string(), &Registry::new()).unwrap();
    let out = flow.invoke_with_context(json!({}), json!({"vip": true})).await.unwrap();
    assert_eq!(out.get("text"), Some(&json!("vip")));
    // `has(context.vip)` asks; `&&` does not evaluate `context.vip` without it.
    let out = flow.invoke(json!({})).await.unwrap();
    assert_eq!(out.get("text"), Some(&json!("plain")));
}

#[test]
fn the_context_schema_nests_what_the_nodes_read_and_is_none_when_none_reads_it() {
    assert_eq!(
        flow().context_schema(),
        Some(&json!({
            "title": "flow_context",
            "type": "object",
            "properties": {
                "plan": {"description": "Read by node `triage` at `data.branches[0].when`"},
                "user": {"type": "object", "properties": {"name": {
                    "description": "Read by node `greet_pro` at `data.assign.text`; node `greet` at `data.message`"
                }}}
            }
        }))
    );
    // A key only asked about (`in`) is not read: an object with no known keys.
    assert_eq!(
        gate("'vip' in context").context_schema(),
        Some(&json!({"title": "flow_context", "type": "object", "properties": {}}))
    );
    assert_eq!(gate("true").context_schema(), None);
}

/// start -> gate ? (yes: EXPR) -> mark -> done | else -> done, `text` "plain" or "yes".
fn gate(expr: &str) -> Flow {
    let f = json!({
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "gate", "type": "condition", "data": {"branches": [{"id": "yes", "when": expr}]}},
            {"id": "mark", "type": "set", "data": {"assign": {"text": "yes"}}},
            {"id": "done", "type": "end"}
        ],
        "edges": [
            {"id": "e1", "source": "start", "target": "gate"},
            {"id": "e2", "source": "gate", "sourceHandle": "yes", "target": "mark"},
            {"id": "e3", "source": "gate", "sourceHandle": "else", "target": "done"},
            {"id": "e4", "source": "mark", "target": "done"}
        ],
        "state": {"text": {"type": "string", "default": "plain"}}
    });
    Flow::from_json(&f.to_string(), &Registry::new()).unwrap()
}

#[tokio::test]
async fn a_key_read_by_index_is_checked_as_one_read_by_name_and_an_in_test_reads_nothing() {
    // `context['user']['tier']` reads `context.user.tier`: a context without it fails the node
    // naming that path, as `context.user.tier` would.
    let flow = gate("context['user']['tier'] == 'pro'");
    let out = flow
        .invoke_with_context(json!({}), json!({"user": {"tier": "pro"}}))
        .await
        .unwrap();
    assert_eq!(out.get("text"), Some(&json!("yes")));
    let err = flow
        .invoke_with_context(json!({}), json!({"user": {"id": 7}}))
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("gate"));
    assert!(
        err.to_string().contains(
            "node `gate` reads `context.user.tier` (at `data.branches[0].when`), but `context.user` has no key `tier`; its keys are `id`"
        ),
        "{err}"
    );
    // `'vip' in context` asks whether the key is there: no context needs it.
    let flow = gate("'vip' in context && context['vip']");
    let out = flow.invoke_with_context(json!({}), json!({"vip": true})).await.unwrap();
    assert_eq!(out.get("text"), Some(&json!("yes")));
    let out = flow.invoke_with_context(json!({}), json!({"other": 1})).await.unwrap();
    assert_eq!(out.get("text"), Some(&json!("plain")));
}

/// start -> ask (a question with choices) -> thank (reads the context) -> done, checkpointed.
fn asking_flow() -> Flow {
    let f = json!({
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "ask", "type": "output", "data": {"message": "Refund?", "choices": [{"id": "yes"}, {"id": "no"}]}},
            {"id": "thank", "type": "set", "data": {"assign": {"text": "thanks {{ context.user.name }}"}}},
            {"id": "done", "type": "end"}
        ],
        "edges": [
            {"id": "e1", "source": "start", "target": "ask"},
            {"id": "e2", "source": "ask", "sourceHandle": "yes", "target": "thank"},
            {"id": "e3", "source": "ask", "sourceHandle": "no", "target": "done"},
            {"id": "e4", "source": "thank", "target": "done"}
        ],
        "state": {"text": {"type": "string"}}
    });
    let options = weir_flow::LoadOptions::default().checkpointer(weir_runtime::checkpoint::MemorySaver::new());
    Flow::from_value(&f, &Registry::new(), options).unwrap()
}

#[tokio::test]
async fn a_resumed_run_reads_the_context_it_is_given_again() {
    let flow = asking_flow();
    let out = flow
        .run_with_context(json!({}), Some("t"), ctx("pro", "ada"), |_| {})
        .await
        .unwrap();
    assert!(matches!(out, weir_flow::Outcome::Paused { .. }));
    // The context belongs to a run, not to the thread: the resuming run brings its own.
    let out = flow
        .resume_with_context("t", Some("yes"), ctx("pro", "bo"), |_| {})
        .await
        .unwrap();
    assert_eq!(out.state().get("text"), Some(&json!("thanks bo")));
}

#[tokio::test]
async fn a_resume_without_a_context_fails_where_a_node_reads_one_and_the_question_stays_answerable() {
    let flow = asking_flow();
    flow.run_with_context(json!({}), Some("t"), ctx("pro", "ada"), |_| {})
        .await
        .unwrap();
    let err = flow.resume("t", Some("yes"), |_| {}).await.unwrap_err();
    assert_eq!(err.node(), Some("thank"), "{err}");
    assert!(err.to_string().contains("context.user.name"), "{err}");
    // Nothing is lost: the failed node runs again when resumed with a context.
    let out = flow
        .resume_with_context("t", None, ctx("pro", "cy"), |_| {})
        .await
        .unwrap();
    assert_eq!(out.state().get("text"), Some(&json!("thanks cy")));
}
