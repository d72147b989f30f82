//! The protocol's commands that act on the thread, for both transports: `run.start` (a run on
//! the thread, made if it does not exist, or a resume when the thread waits on interrupts and
//! input is given) and `input.respond` (one interrupt's answer, or several at once, with the
//! `update` and `goto` of LangGraph's `Command`). Each answer is a `success` or `error`
//! envelope naming the command's `id`; the error codes are LangGraph's (`invalid_argument`,
//! `no_such_interrupt`, `no_such_run`, `unknown_error`, …).

use super::super::AppState;
use crate::model::{MultitaskStrategy, Thread, ThreadStatus};
use crate::runs::RunCreate;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How long a command waits for a busy thread to settle before it decides whether its input
/// answers an interrupt (LangGraph's `_INTERRUPT_SETTLE_TIMEOUT_SECONDS`).
const SETTLE: Duration = Duration::from_secs(5);
/// How often it looks meanwhile.
const SETTLE_POLL: Duration = Duration::from_millis(50);

/// The stream modes of a run the protocol starts: every mode it has a channel for.
const RUN_MODES: &[&str] = &[
    "values",
    "updates",
    "messages-tuple",
    "custom",
    "tasks",
    "checkpoints",
    "tools",
];

/// A command's `id` and `method`, or the `invalid_argument` error envelope of a payload that is
/// not an object with an integer `id` and a string `method`.
pub(super) fn parse(payload: &Value) -> Result<(u64, &str), Value> {
    match (
        payload.get("id").and_then(Value::as_u64),
        payload.get("method").and_then(Value::as_str),
    ) {
        (Some(id), Some(method)) if payload.is_object() => Ok((id, method)),
        _ => Err(json!({
            "type": "error",
            "id": payload.get("id").filter(|id| id.is_u64()),
            "error": "invalid_argument",
            "message": "Protocol commands must include an integer id and string method.",
        })),
    }
}

/// A command's `params`, an empty object when it has none.
pub(super) fn params(payload: &Value) -> Map<String, Value> {
    payload
        .get("params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// A `success` envelope; `seq` is the last event the connection was sent.
pub(super) fn success(id: u64, result: Value, seq: u64) -> Value {
    json!({"type": "success", "id": id, "result": result, "meta": {"applied_through_seq": seq}})
}

/// An `error` envelope.
pub(super) fn error(id: u64, code: &str, message: impl Into<String>) -> Value {
    json!({"type": "error", "id": id, "error": code, "message": message.into()})
}

/// `run.start`: a run of `assistant_id` on the thread with `input` (a resume of its interrupts
/// when it waits on some and `input` is given), `config`, `metadata` and `multitaskStrategy`.
pub(super) async fn run_start(
    state: &AppState,
    thread_id: &str,
    id: u64,
    params: &Map<String, Value>,
    seq: u64,
) -> Value {
    let Some(assistant_id) = params
        .get("assistant_id")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
    else {
        return error(id, "invalid_argument", "run.start requires an assistant_id.");
    };
    let checkpoint_id = match checkpoint_id(params) {
        Ok(c) => c,
        Err(message) => return error(id, "invalid_argument", message),
    };
    if let Err(message) = check_tracer(params.get("langsmith_tracer")) {
        return error(id, "invalid_argument", message);
    }
    let input = params.get("input").cloned().unwrap_or(Value::Null);
    let resume = !input.is_null()
        && settled(state, thread_id)
            .await
            .is_some_and(|thread| !interrupt_ids(&thread).is_empty());
    // A strategy the server does not know is the default, as LangGraph's server takes it.
    let strategy = params
        .get("multitaskStrategy")
        .and_then(|s| serde_json::from_value::<MultitaskStrategy>(s.clone()).ok())
        .unwrap_or_default();
    let mut body = run_body(assistant_id, thread_id, params);
    if resume {
        body["command"] = json!({ "resume": input });
    } else {
        body["input"] = input;
    }
    body["checkpoint_id"] = json!(checkpoint_id);
    body["multitask_strategy"] = json!(strategy);
    match create(state, thread_id, body).await {
        Ok(run_id) => success(id, json!({ "run_id": run_id }), seq),
        Err(message) => error(id, "unknown_error", message),
    }
}

/// `input.respond`: the answers to interrupts the thread waits on (`interrupt_id` and
/// `response`, or a `responses` list of them), resumed in one run of the thread's assistant,
/// with the `update` and `goto` given (and `strict_resume`, as the run's).
pub(super) async fn input_respond(
    state: &AppState,
    thread_id: &str,
    id: u64,
    params: &Map<String, Value>,
    seq: u64,
) -> Value {
    let answers = match answers(params) {
        Ok(a) => a,
        Err(message) => return error(id, "invalid_argument", message),
    };
    let Some(thread) = settled(state, thread_id).await else {
        return error(id, "no_such_run", "No interrupted run is bound to this thread.");
    };
    let waiting = interrupt_ids(&thread);
    if let Some((unknown, _)) = answers.iter().find(|(i, _)| !waiting.contains(i)) {
        return error(
            id,
            "no_such_interrupt",
            format!("Unknown or already-consumed interrupt: {unknown}"),
        );
    }
    let Some(assistant_id) = thread.metadata.get("assistant_id").and_then(Value::as_str) else {
        return error(id, "no_such_run", "No interrupted run is bound to this thread.");
    };
    let mut body = run_body(assistant_id, thread_id, params);
    let resume: Map<String, Value> = answers.into_iter().collect();
    let mut command = json!({ "resume": resume });
    for key in ["update", "goto"] {
        if let Some(v) = params.get(key).filter(|v| !v.is_null()) {
            command[key] = v.clone();
        }
    }
    body["command"] = command;
    // The JS client's `respondInput(…, {strictResume: true})`: an answer that finds its
    // interrupt gone by the time the run starts fails the run rather than being left unused.
    if let Some(strict @ Value::Bool(_)) = params.get("strict_resume") {
        body["strict_resume"] = strict.clone();
    }
    match create(state, thread_id, body).await {
        Ok(_) => success(id, json!({}), seq),
        Err(message) => error(id, "unknown_error", message),
    }
}

/// The body of a run the protocol makes: every mode it streams, subgraphs too, resumable, the
/// thread made when it does not exist, and the request's `config` (marked as the protocol's,
/// as LangGraph's server marks it) and `metadata`.
fn run_body(assistant_id: &str, thread_id: &str, params: &Map<String, Value>) -> Value {
    let mut config = params
        .get("config")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut configurable = config
        .get("configurable")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    configurable.insert("__event_streaming_v2".into(), json!(true));
    configurable.insert("thread_id".into(), json!(thread_id));
    config.insert("configurable".into(), Value::Object(configurable));
    json!({
        "assistant_id": assistant_id,
        "config": config,
        "metadata": params.get("metadata").filter(|m| m.is_object()),
        "stream_mode": RUN_MODES,
        "stream_subgraphs": true,
        "stream_resumable": true,
        "if_not_exists": "create",
    })
}

/// Makes the run; its id, or why not.
async fn create(state: &AppState, thread_id: &str, body: Value) -> Result<String, String> {
    let body: RunCreate = serde_json::from_value(body).map_err(|e| e.to_string())?;
    let run = state
        .runs
        .create(Some(thread_id), body)
        .await
        .map_err(|e| e.to_string())?;
    Ok(run.run_id)
}

/// The ids of the interrupts the thread waits on (its row's `{task_id: [{id, value}]}`).
fn interrupt_ids(thread: &Thread) -> Vec<String> {
    thread
        .interrupts
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|i| i.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The thread (without its values) once it settles: while it is busy and waits on no
/// interrupt, read again every [`SETTLE_POLL`] for up to [`SETTLE`] (a run about to pause has
/// not written its interrupts yet). `None` when the thread cannot be read (it may not exist).
async fn settled(state: &AppState, thread_id: &str) -> Option<Thread> {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let thread = state
            .catalog
            .get_thread_without_values(thread_id)
            .await
            .ok()
            .flatten()?;
        if !interrupt_ids(&thread).is_empty()
            || thread.status != ThreadStatus::Busy
            || tokio::time::Instant::now() >= deadline
        {
            return Some(thread);
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}

/// `config.configurable.checkpoint_id`, the checkpoint to run from: `None` when absent.
///
/// # Errors
/// Not a non-empty string, or not a UUID.
fn checkpoint_id(params: &Map<String, Value>) -> Result<Option<String>, String> {
    let Some(raw) = params
        .get("config")
        .and_then(|c| c.get("configurable"))
        .and_then(|c| c.get("checkpoint_id"))
        .filter(|c| !c.is_null())
    else {
        return Ok(None);
    };
    let Some(text) = raw.as_str().filter(|t| !t.trim().is_empty()) else {
        return Err("config.configurable.checkpoint_id must be a non-empty string.".to_owned());
    };
    uuid::Uuid::parse_str(text)
        .map(|_| Some(text.to_owned()))
        .map_err(|_| format!("Invalid config.configurable.checkpoint_id: {text:?}."))
}

/// `langsmith_tracer`: absent, or an object of strings `project_name` and `example_id` (weir
/// has no LangSmith; the fields are checked and not used).
fn check_tracer(tracer: Option<&Value>) -> Result<(), String> {
    let Some(tracer) = tracer.filter(|t| !t.is_null()) else {
        return Ok(());
    };
    let Some(fields) = tracer.as_object() else {
        return Err("langsmith_tracer must be an object.".to_owned());
    };
    let mut unknown: Vec<&str> = fields
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "project_name" | "example_id"))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return Err(format!("langsmith_tracer has unsupported fields: {unknown:?}."));
    }
    match fields.iter().find(|(_, v)| !v.is_string()) {
        Some((key, _)) => Err(format!("langsmith_tracer.{key} must be a string.")),
        None => Ok(()),
    }
}

/// `input.respond`'s answers as `(interrupt id, response)`, from `responses` or from
/// `interrupt_id` and `response`.
///
/// # Errors
/// What is missing or of the wrong type.
fn answers(params: &Map<String, Value>) -> Result<Vec<(String, Value)>, String> {
    let namespace_ok = |entry: &Map<String, Value>| {
        entry.get("namespace").is_none_or(|ns| {
            ns.as_array()
                .is_some_and(|segments| segments.iter().all(Value::is_string))
        })
    };
    let bad_namespace = "input.respond requires namespace to be a list of strings.".to_owned();
    if let Some(list) = params.get("responses").and_then(Value::as_array) {
        if list.is_empty() {
            return Err("input.respond requires at least one response.".to_owned());
        }
        return list
            .iter()
            .map(|entry| {
                let entry = entry
                    .as_object()
                    .ok_or_else(|| "input.respond responses entries must be objects.".to_owned())?;
                let interrupt_id = entry
                    .get("interrupt_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "input.respond responses entries require an interrupt_id.".to_owned())?;
                if !namespace_ok(entry) {
                    return Err(bad_namespace.clone());
                }
                Ok((
                    interrupt_id.to_owned(),
                    entry.get("response").cloned().unwrap_or(Value::Null),
                ))
            })
            .collect();
    }
    let interrupt_id = params
        .get("interrupt_id")
        .and_then(Value::as_str)
        .ok_or_else(|| "input.respond requires an interrupt_id.".to_owned())?;
    if !namespace_ok(params) {
        return Err(bad_namespace);
    }
    let response = params.get("response").cloned().unwrap_or(Value::Null);
    Ok(vec![(interrupt_id.to_owned(), response)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_command_needs_an_integer_id_and_a_method() {
        assert_eq!(parse(&json!({"id": 3, "method": "run.start"})), Ok((3, "run.start")));
        let err = parse(&json!({"id": "3", "method": "run.start"})).unwrap_err();
        assert_eq!(err["error"], "invalid_argument");
        assert_eq!(err["id"], Value::Null);
        assert_eq!(parse(&json!({"id": 4})).unwrap_err()["id"], 4);
        assert!(parse(&json!([1])).is_err());
    }

    #[test]
    fn answers_come_one_or_many_and_bad_ones_say_what_is_wrong() {
        assert_eq!(
            answers(&obj(json!({"interrupt_id": "i", "response": "yes", "namespace": []}))),
            Ok(vec![("i".to_owned(), json!("yes"))])
        );
        assert_eq!(
            answers(&obj(
                json!({"responses": [{"interrupt_id": "a", "response": 1}, {"interrupt_id": "b"}]})
            )),
            Ok(vec![("a".to_owned(), json!(1)), ("b".to_owned(), Value::Null)])
        );
        assert!(answers(&obj(json!({})))
            .unwrap_err()
            .contains("requires an interrupt_id"));
        assert!(answers(&obj(json!({"responses": []})))
            .unwrap_err()
            .contains("at least one"));
        assert!(answers(&obj(json!({"responses": [3]})))
            .unwrap_err()
            .contains("must be objects"));
        assert!(answers(&obj(json!({"interrupt_id": "i", "namespace": "x"})))
            .unwrap_err()
            .contains("namespace"));
    }

    #[test]
    fn a_checkpoint_to_run_from_and_a_tracer_are_checked() {
        let with = |cp: Value| obj(json!({"config": {"configurable": {"checkpoint_id": cp}}}));
        assert_eq!(checkpoint_id(&obj(json!({}))), Ok(None));
        let id = "1ef4a9b8-0000-6000-8000-000000000000";
        assert_eq!(checkpoint_id(&with(json!(id))), Ok(Some(id.to_owned())));
        assert!(checkpoint_id(&with(json!(" ")))
            .unwrap_err()
            .contains("non-empty string"));
        assert!(checkpoint_id(&with(json!("nope"))).unwrap_err().contains("Invalid"));
        assert!(check_tracer(Some(&json!({"project_name": "p"}))).is_ok());
        assert!(check_tracer(Some(&json!("p")))
            .unwrap_err()
            .contains("must be an object"));
        assert!(check_tracer(Some(&json!({"x": 1})))
            .unwrap_err()
            .contains("unsupported fields"));
        assert!(check_tracer(Some(&json!({"example_id": 1})))
            .unwrap_err()
            .contains("example_id must be a string"));
    }
}
