//! `/a2a/{assistant_id}`: each assistant as an agent of Google's Agent2Agent protocol (JSON-RPC
//! over HTTP), as LangGraph's server offers it, so that another agent framework (an `a2a-sdk`
//! client, Google's ADK) calls a weir agent. An A2A context is a thread (`contextId` is its id; a
//! message without one starts a new thread), and a task is a run of it ([`task`]):
//! `message/send` runs the assistant on the message (its text and files as a human message
//! under `messages`, [`content`]; its data parts as input fields) and answers the task,
//! `message/stream` streams it ([`stream`]: the task, the model's text as it comes, the answer
//! as an artifact, the final status), `tasks/get` reads it, `tasks/cancel` cancels its run and
//! `tasks/resubscribe` follows it again. A task whose run paused for a person (`interrupt`) is `input-required`; the next
//! message naming it (`taskId`) resumes the run with its text or data as the answer. A task's
//! `history` is its context's conversation, each message naming its own task, or with
//! `historyScope: "task"` (LangGraph's extension, also as a header) the task's messages only.
//!
//! The endpoint works in A2A 0.3's form; a request of A2A 1.0 (`SendMessage`, …, and
//! `ListTasks`, [`list`]) is read into it and answered in 1.0's ([`v1`]). Each assistant
//! describes itself with an agent card ([`card`]) offering both, at
//! `/a2a/{assistant_id}/.well-known/agent-card.json` and at
//! `/.well-known/agent-card.json?assistant_id=…`. Push notifications are not offered (their
//! methods answer that).

use super::jsonrpc::{internal, RpcFailure, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use super::AppState;
use crate::model::{system_assistant_id, Assistant, Run};
use crate::runs::{RunCreate, RunError};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::stream::{BoxStream, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use task::{Incoming, TaskIds, TaskState, START_KEY, TASK_KEY};

mod card;
mod content;
mod list;
mod stream;
mod task;
mod v1;

/// How many of a context's runs a task's latest run is looked for among.
const RUNS_LOOKED_AT: usize = 1_000;

/// The header that chooses the history's scope when a request's params do not.
const HISTORY_SCOPE_HEADER: &str = "LangGraph-A2A-History-Scope";

// A2A's own error codes.
const TASK_NOT_FOUND: i64 = -32_001;
const TASK_NOT_CANCELABLE: i64 = -32_002;
const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32_003;
const UNSUPPORTED_OPERATION: i64 = -32_004;
const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32_005;
const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32_007;

pub(super) fn router() -> axum::Router<AppState> {
    let endpoint = || post(rpc).get(refused).delete(refused);
    axum::Router::new()
        .route("/a2a/{assistant_id}", endpoint())
        .route("/a2a/{assistant_id}/", endpoint())
        .route("/a2a/{assistant_id}/.well-known/agent-card.json", get(card::card_of))
        .route("/a2a/{assistant_id}/.well-known/agent.json", get(card::card_of))
        .route("/.well-known/agent-card.json", get(card::card_asked))
}

/// `GET` and `DELETE` of the endpoint: JSON-RPC is posted.
async fn refused() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}

/// A JSON-RPC answer: `result` or `error`, always with 200, as JSON-RPC over HTTP answers.
fn answer(id: &Value, outcome: Result<Value, RpcFailure>) -> Response {
    let body = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    };
    axum::Json(body).into_response()
}

/// `POST /a2a/{assistant_id}`: one JSON-RPC request.
async fn rpc(
    State(state): State<AppState>,
    Path(assistant_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let none = Value::Null;
    let request: Value = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return answer(&none, Err((PARSE_ERROR, format!("body: not JSON: {e}")))),
    };
    let Some(request) = request.as_object() else {
        let why = "body: expected one JSON-RPC request (an object; batches are not taken)";
        return answer(&none, Err((INVALID_REQUEST, why.to_owned())));
    };
    let id = match request.get("id") {
        None => &none,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id,
        Some(_) => {
            let why = "body field `id`: expected a string, a number or null";
            return answer(&none, Err((INVALID_REQUEST, why.to_owned())));
        }
    };
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return answer(
            id,
            Err((INVALID_REQUEST, "body field `jsonrpc`: expected \"2.0\"".to_owned())),
        );
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        let why = "body field `method`: missing, or not a string";
        return answer(id, Err((INVALID_REQUEST, why.to_owned())));
    };
    let params = match request.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return answer(
                id,
                Err((INVALID_PARAMS, "body field `params`: expected an object".to_owned())),
            )
        }
    };
    let assistant = match find_assistant(&state, &assistant_id).await {
        Ok(a) => a,
        Err(e) => return answer(id, Err(e)),
    };
    let scope_header = headers
        .get(HISTORY_SCOPE_HEADER)
        .map(|v| v.to_str().unwrap_or("(not text)").to_owned());
    let a2a = A2a {
        state,
        assistant,
        scope_header,
    };
    // A 1.0 method is answered in 1.0's form, from 0.3's.
    let (method, params, v1) = match v1::method(method) {
        Some(old) => (old, v1::params(params), true),
        None => (method, params, false),
    };
    let task = |result: Result<Value, RpcFailure>| result.map(|t| if v1 { v1::task(&t) } else { t });
    let events = |events: BoxStream<'static, Value>| {
        if v1 {
            events.map(|e| v1::event(&e)).boxed()
        } else {
            events
        }
    };
    match method {
        "message/send" => answer(
            id,
            task(a2a.send(&params).await).map(|t| if v1 { json!({"task": t}) } else { t }),
        ),
        "message/stream" => match a2a.stream(&params).await {
            Ok(e) => stream::response(&a2a.state, id, events(e)),
            Err(e) => answer(id, Err(e)),
        },
        "tasks/resubscribe" => match a2a.resubscribe(&params).await {
            Ok(e) => stream::response(&a2a.state, id, events(e)),
            Err(e) => answer(id, Err(e)),
        },
        "tasks/get" => answer(id, task(a2a.get(&params).await)),
        "tasks/cancel" => answer(id, task(a2a.cancel(&params).await)),
        "ListTasks" => answer(id, a2a.list(&params).await),
        m if m.starts_with("tasks/pushNotificationConfig/") => answer(
            id,
            Err((
                PUSH_NOTIFICATION_NOT_SUPPORTED,
                "Push notifications are not supported".to_owned(),
            )),
        ),
        "agent/getAuthenticatedExtendedCard" => answer(
            id,
            Err((
                EXTENDED_CARD_NOT_CONFIGURED,
                "This agent has no authenticated extended card".to_owned(),
            )),
        ),
        other => answer(id, Err((METHOD_NOT_FOUND, format!("Method not found: {other}")))),
    }
}

/// The assistant an A2A path names: a UUID, or a graph name standing for its system assistant.
async fn find_assistant(state: &AppState, id: &str) -> Result<Assistant, RpcFailure> {
    let uuid = match uuid::Uuid::parse_str(id) {
        Ok(u) => u,
        Err(_) if state.graphs.contains_key(id) => system_assistant_id(id),
        Err(_) => {
            let why = format!("assistant `{id}` not found: the path names an assistant's UUID or a graph's name");
            return Err((INVALID_PARAMS, why));
        }
    };
    state
        .catalog
        .get_assistant(&uuid.to_string())
        .await
        .map_err(internal)?
        .ok_or_else(|| (INVALID_PARAMS, format!("assistant `{id}` not found")))
}

/// One request's assistant and what serves it.
#[derive(Clone)]
struct A2a {
    state: AppState,
    assistant: Assistant,
    /// The request's [`HISTORY_SCOPE_HEADER`], as sent.
    scope_header: Option<String>,
}

/// A task as found: its latest run, its id, and, when its context's runs were read to find it,
/// the context's tasks by the message that started each (for its history).
struct Found {
    latest: Run,
    task_id: String,
    starts: Option<Arc<HashMap<String, String>>>,
}

/// Which of a context's messages a task's `history` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Scope {
    /// The context's whole conversation, each message with the task it belongs to.
    #[default]
    Context,
    /// The task's own messages.
    Task,
}

/// What a task's `history` shows: its scope, and at most how many of its messages (`Some(0)`:
/// no history).
#[derive(Debug, Clone, Copy, Default)]
struct HistoryView {
    length: Option<usize>,
    scope: Scope,
}

/// A history scope's name read.
fn scope(name: &str) -> Option<Scope> {
    match name {
        "context" => Some(Scope::Context),
        "task" => Some(Scope::Task),
        _ => None,
    }
}

/// The run body's refusal in the words of the call.
fn refused_run(e: RunError) -> RpcFailure {
    match e {
        RunError::Invalid(m) | RunError::BadRequest(m) => (INVALID_PARAMS, m),
        RunError::NotFound(m) => (TASK_NOT_FOUND, m),
        other => internal(other),
    }
}

impl A2a {
    /// The history asked for: `historyLength` and `historyScope` of `options` (a message's
    /// `configuration`, at `at`, or a method's params), the scope else by the request's
    /// [`HISTORY_SCOPE_HEADER`], else the whole context.
    fn view(&self, options: &Value, at: &str) -> Result<HistoryView, RpcFailure> {
        let length = match options.get("historyLength") {
            None | Some(Value::Null) => None,
            Some(n) => Some(n.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| {
                let why = format!("params field `{at}historyLength`: expected a whole number >= 0");
                (INVALID_PARAMS, why)
            })?),
        };
        let scope = match (options.get("historyScope"), &self.scope_header) {
            (Some(Value::String(name)), _) => scope(name).ok_or_else(|| {
                let why = format!("params field `{at}historyScope`: expected \"context\" or \"task\", got `{name}`");
                (INVALID_PARAMS, why)
            })?,
            (Some(other), _) if !other.is_null() => {
                let why = format!("params field `{at}historyScope`: expected \"context\" or \"task\", got {other}");
                return Err((INVALID_PARAMS, why));
            }
            (_, Some(name)) => scope(name).ok_or_else(|| {
                let why = format!("header `{HISTORY_SCOPE_HEADER}`: expected context or task, got `{name}`");
                (INVALID_PARAMS, why)
            })?,
            _ => Scope::Context,
        };
        Ok(HistoryView { length, scope })
    }

    /// The runs of context `thread_id`, newest first: the last [`RUNS_LOOKED_AT`].
    async fn context_runs(&self, thread_id: &str) -> Result<Vec<Run>, RpcFailure> {
        self.state
            .runs
            .list(thread_id, RUNS_LOOKED_AT, 0, None)
            .await
            .map_err(internal)
    }

    /// The tasks of this assistant in context `thread_id`, by the id of the message that
    /// started each.
    async fn task_starts(&self, thread_id: &str) -> Result<HashMap<String, String>, RpcFailure> {
        let runs = self.context_runs(thread_id).await?;
        Ok(task::starts(&runs, &self.assistant.assistant_id))
    }

    fn ids<'a>(&'a self, task_id: &'a str, run: &'a Run) -> TaskIds<'a> {
        TaskIds {
            task_id,
            context_id: &run.thread_id,
            run_id: &run.run_id,
            assistant_id: &self.assistant.assistant_id,
        }
    }

    /// Checks that the assistant's graph takes `messages` when the message has text or files for
    /// its input (an answer to an interrupt may be text whatever the graph's fields).
    fn check_takes_messages(&self, incoming: &Incoming) -> Result<(), RpcFailure> {
        if incoming.content.is_empty() {
            return Ok(());
        }
        let graph_id = &self.assistant.graph_id;
        let Some(graph) = self.state.graphs.get(graph_id) else {
            return Err(internal(format!("graph `{graph_id}` is not served here")));
        };
        let schema = graph.schemas().input;
        let properties = schema.get("properties").and_then(Value::as_object);
        if properties.is_some_and(|p| p.contains_key("messages")) {
            return Ok(());
        }
        let fields: Vec<&str> = properties.map_or(Vec::new(), |p| p.keys().map(String::as_str).collect());
        Err((
            INVALID_PARAMS,
            format!(
                "assistant `{}` (graph `{graph_id}`) takes no `messages`, so a text or file part has nowhere \
                 to go: send a data part with its input fields ({}) instead",
                self.assistant.assistant_id,
                fields.join(", ")
            ),
        ))
    }

    /// Finds task `id` of this assistant, or `-32001`.
    async fn find(&self, id: &str) -> Result<Found, RpcFailure> {
        let not_found = || (TASK_NOT_FOUND, format!("Task not found: {id}"));
        let (context_id, first_run) = task::parse_task_id(id).ok_or_else(not_found)?;
        let runs = self.context_runs(context_id).await?;
        let starts = Arc::new(task::starts(&runs, &self.assistant.assistant_id));
        let latest = match runs
            .into_iter()
            .find(|r| r.metadata.get(TASK_KEY).and_then(Value::as_str) == Some(id))
        {
            Some(run) => run,
            None => match self.state.runs.get(context_id, first_run).await {
                Ok(run) => run,
                Err(RunError::NotFound(_)) => return Err(not_found()),
                Err(e) => return Err(internal(e)),
            },
        };
        if latest.assistant_id != self.assistant.assistant_id {
            return Err(not_found());
        }
        Ok(Found {
            latest,
            task_id: id.to_owned(),
            starts: Some(starts),
        })
    }

    /// The state of a task whose latest run is `run`, and what that run answered once it
    /// ended (`join`'s value). The thread's interrupt is its latest run's: a task whose run was
    /// followed by another on the thread asks for nothing now.
    async fn state_of(&self, run: &Run) -> Result<(TaskState, Option<Value>), RpcFailure> {
        if !run.status.is_final() {
            return Ok((TaskState::of(run.status, false), None));
        }
        let mut outcome = self.state.runs.outcome(run).await.map_err(internal)?;
        let newest = self
            .state
            .runs
            .list(&run.thread_id, 1, 0, None)
            .await
            .map_err(internal)?;
        if newest.first().is_some_and(|n| n.run_id != run.run_id) {
            if let Some(o) = outcome.as_object_mut() {
                o.remove("__interrupt__");
            }
        }
        Ok((TaskState::of(run.status, task::asks(Some(&outcome))), Some(outcome)))
    }

    /// The task of `found` as it stands: its state, its artifacts once its run ended, and the
    /// thread's conversation as `view` asks.
    async fn task(&self, found: &Found, view: HistoryView) -> Result<Value, RpcFailure> {
        let run = &found.latest;
        let (state, outcome) = self.state_of(run).await?;
        let mut task = task::task(run, state, outcome.as_ref(), &self.ids(&found.task_id, run));
        if view.length != Some(0) {
            let values = match &outcome {
                Some(outcome) if outcome.get("__error__").is_none() => outcome.clone(),
                _ => self.thread_values(&run.thread_id).await?,
            };
            let starts = match &found.starts {
                Some(starts) => starts.clone(),
                None => Arc::new(self.task_starts(&run.thread_id).await?),
            };
            let history = task::history(&values, &self.ids(&found.task_id, run), view, &starts);
            task["history"] = Value::Array(history);
        }
        Ok(task)
    }

    /// Task `task_id` as it stands now that `run`, its latest run, has moved on (read again).
    async fn task_now(&self, run: &Run, task_id: String, view: HistoryView) -> Result<Value, RpcFailure> {
        let latest = self
            .state
            .runs
            .get(&run.thread_id, &run.run_id)
            .await
            .map_err(internal)?;
        // Read afresh: the run may have started a task since.
        let found = Found {
            latest,
            task_id,
            starts: None,
        };
        self.task(&found, view).await
    }

    async fn thread_values(&self, thread_id: &str) -> Result<Value, RpcFailure> {
        let thread = self.state.catalog.get_thread(thread_id).await.map_err(internal)?;
        Ok(thread.map_or(Value::Null, |t| t.values))
    }

    /// Makes the run a message asks for: on its task's thread (resuming it when it waits for
    /// input), or on its context's, or on a new one. Answers the run and its task's id.
    async fn start(
        &self,
        params: &Value,
        incoming: &Incoming,
        stream_mode: Value,
    ) -> Result<(Run, String), RpcFailure> {
        let context = match params.get("context") {
            None | Some(Value::Null) => Value::Null,
            Some(c @ Value::Object(_)) => c.clone(),
            Some(_) => return Err((INVALID_PARAMS, "params field `context`: expected an object".to_owned())),
        };
        let mut body = json!({
            "assistant_id": self.assistant.assistant_id,
            "if_not_exists": "create",
            "stream_mode": stream_mode,
            "context": context,
        });
        let (context_id, task_id) = match &incoming.task_id {
            Some(task_id) => {
                let found = self.find(task_id).await?;
                let run = &found.latest;
                if let Some(asked) = &incoming.context_id {
                    if *asked != run.thread_id {
                        return Err((
                            INVALID_PARAMS,
                            format!(
                                "params field `message.contextId`: `{asked}` is not the context of task `{task_id}`"
                            ),
                        ));
                    }
                }
                let (state, _) = self.state_of(run).await?;
                if state.is_terminal() {
                    let why = format!(
                        "task `{task_id}` is {}: a finished task takes no more messages",
                        state.as_str()
                    );
                    return Err((UNSUPPORTED_OPERATION, why));
                }
                if state == TaskState::InputRequired {
                    body["command"] = json!({"resume": incoming.answer()?});
                } else {
                    self.check_takes_messages(incoming)?;
                    body["input"] = incoming.input();
                }
                let start = task::start_of(run).unwrap_or(&incoming.id).to_owned();
                body["metadata"] = json!({TASK_KEY: task_id, START_KEY: start});
                (run.thread_id.clone(), Some(task_id.clone()))
            }
            None => {
                let context_id = match &incoming.context_id {
                    Some(c) => uuid::Uuid::parse_str(c)
                        .map_err(|_| {
                            let why = format!(
                                "params field `message.contextId`: `{c}` is not a UUID (a context is a thread)"
                            );
                            (INVALID_PARAMS, why)
                        })?
                        .to_string(),
                    None => uuid::Uuid::new_v4().to_string(),
                };
                self.check_takes_messages(incoming)?;
                body["input"] = incoming.input();
                body["metadata"] = json!({START_KEY: incoming.id});
                (context_id, None)
            }
        };
        let body: RunCreate = serde_json::from_value(body).map_err(|e| (INVALID_PARAMS, format!("params: {e}")))?;
        let run = self
            .state
            .runs
            .create(Some(&context_id), body)
            .await
            .map_err(refused_run)?;
        let task_id = task_id.unwrap_or_else(|| task::task_id(&run.thread_id, &run.run_id));
        Ok((run, task_id))
    }

    /// `message/send`: runs the assistant on the message and answers its task once the run has
    /// ended (at once, `submitted`, with `configuration.blocking: false`).
    async fn send(&self, params: &Value) -> Result<Value, RpcFailure> {
        let configuration = params.get("configuration").cloned().unwrap_or(Value::Null);
        let view = self.view(&configuration, "configuration.")?;
        let blocking = match configuration.get("blocking") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                let why = "params field `configuration.blocking`: expected true or false";
                return Err((INVALID_PARAMS, why.to_owned()));
            }
        };
        let incoming = Incoming::read(params)?;
        let (run, task_id) = self.start(params, &incoming, json!(["values"])).await?;
        if blocking {
            self.state.runs.outcome(&run).await.map_err(internal)?;
        }
        self.task_now(&run, task_id, view).await
    }

    /// `tasks/get`.
    async fn get(&self, params: &Value) -> Result<Value, RpcFailure> {
        let id = task_param(params)?;
        let view = self.view(params, "")?;
        let found = self.find(id).await?;
        self.task(&found, view).await
    }

    /// `tasks/cancel`: cancels the task's run (`action=interrupt`) and answers the task,
    /// `canceled`; a task that has ended is `-32002`.
    async fn cancel(&self, params: &Value) -> Result<Value, RpcFailure> {
        let id = task_param(params)?;
        let view = self.view(params, "")?;
        let found = self.find(id).await?;
        let run = &found.latest;
        let not_cancelable = |state: &str| {
            (
                TASK_NOT_CANCELABLE,
                format!("Task cannot be canceled: task `{id}` is {state}"),
            )
        };
        if run.status.is_final() {
            let (state, _) = self.state_of(run).await?;
            return Err(not_cancelable(state.as_str()));
        }
        let cancelled = self
            .state
            .runs
            .cancel(&run.thread_id, &run.run_id, crate::bus::CancelAction::Interrupt, true)
            .await;
        match cancelled {
            Ok(()) => {}
            // It ended meanwhile.
            Err(RunError::NotFound(_)) => return Err(not_cancelable("over")),
            Err(e) => return Err(internal(e)),
        }
        self.task_now(run, found.task_id, view).await
    }
}

/// `params.id` of the `tasks/*` methods.
fn task_param(params: &Value) -> Result<&str, RpcFailure> {
    params
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            (
                INVALID_PARAMS,
                "params field `id`: missing, or not a task's id".to_owned(),
            )
        })
}
