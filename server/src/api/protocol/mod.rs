//! LangGraph's thread-centric streaming protocol (its "v2 event streaming", which the Python
//! SDK's `client.threads.stream()` speaks): commands and events scoped to a thread, not a run.
//!
//! - `POST /threads/{thread_id}/commands`: one command (`{id, method, params}`) in, its
//!   `success` or `error` envelope out ([`commands`]). Each request stands alone: `run.start`
//!   and `input.respond` act; the subscription commands and `agent.getTree` need a connection
//!   that follows the thread, which a request is not.
//! - `POST /threads/{thread_id}/stream/events`: an SSE stream of the thread's protocol events
//!   (`event: <method>`, `data: <envelope>`, `id: <seq>`), filtered by the body's `channels`,
//!   `namespaces` and `depth` ([`filter`]), from the oldest run the bus keeps, skipping those up
//!   to `since`; open until the client leaves.
//! - `GET /threads/{thread_id}/stream/events` as a WebSocket: commands and events both ways,
//!   the events those of the socket's subscriptions (`subscription.subscribe` replays what the
//!   socket has seen that matches; `subscription.reconnect` what came after a `since`).
//!
//! The events are made by a [`session::Session`] of each connection from the thread's own
//! stream on the bus ([`crate::runs::Manager::thread_stream`]), so any API process serves any
//! thread's events.

use super::layers::BodyLimit;
use super::runs::sse::{self, SseOptions};
use super::{ApiError, AppState};
use crate::bus::StreamItem;
use crate::model::Run;
use crate::runs::ThreadModes;
use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use filter::Filter;
use futures::stream::{BoxStream, StreamExt};
use serde_json::{json, Value};
use session::Session;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

mod commands;
mod filter;
mod messages;
mod session;
mod state;

/// How many of its events a WebSocket keeps for its subscriptions' replays (LangGraph's
/// `DEFAULT_MAX_BUFFER_SIZE`).
const KEPT: usize = 10_000;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/threads/{thread_id}/commands", post(command))
        .route("/threads/{thread_id}/stream/events", post(events).get(socket))
}

/// A connection's session, shared by its event stream and its commands.
type Shared = Arc<Mutex<Session>>;

fn lock(session: &Shared) -> MutexGuard<'_, Session> {
    session.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A thread's protocol events, endless: its runs' events on the bus, from the oldest the bus
/// keeps, turned by `session`.
async fn thread_events(
    state: &AppState,
    thread_id: &str,
    session: Shared,
) -> Result<BoxStream<'static, Value>, ApiError> {
    let items = state
        .runs
        .thread_stream(thread_id, Some("-1"), ThreadModes::default())
        .await?;
    struct Turning {
        state: AppState,
        thread_id: String,
        items: BoxStream<'static, StreamItem>,
        session: Shared,
        out: VecDeque<Value>,
    }
    let turning = Turning {
        state: state.clone(),
        thread_id: thread_id.to_owned(),
        items,
        session,
        out: VecDeque::new(),
    };
    Ok(futures::stream::unfold(turning, |mut t| async move {
        loop {
            if let Some(event) = t.out.pop_front() {
                return Some((event, t));
            }
            let StreamItem::Event { id, event, data } = t.items.next().await? else {
                return None;
            };
            let made = turn(&t.state, &t.thread_id, &t.session, (&id, &event, &data)).await;
            t.out.extend(made);
        }
    })
    .boxed())
}

/// The protocol events of one event of the thread's stream: a run's start and end (its
/// `metadata` events) read the run for its graph's name and its status.
async fn turn(
    state: &AppState,
    thread_id: &str,
    session: &Shared,
    (id, event, data): (&str, &str, &str),
) -> Vec<Value> {
    match event {
        "metadata" => {
            let Ok(meta) = serde_json::from_str::<Value>(data) else {
                return Vec::new();
            };
            let Some(run_id) = meta.get("run_id").and_then(Value::as_str) else {
                return Vec::new();
            };
            let run = read_run(state, thread_id, run_id).await;
            let mut session = lock(session);
            if meta.get("status").and_then(Value::as_str) == Some("run_done") {
                match run {
                    Some(run) if session.run_id() == Some(run_id) => session.end_run(run.status),
                    _ => Vec::new(),
                }
            } else if meta.get("attempt").is_some() {
                let graph = run.as_ref().map_or_else(|| "root".to_owned(), graph_name);
                session.begin_run(run_id, &graph)
            } else {
                Vec::new()
            }
        }
        "error" => lock(session).fail(data),
        _ => lock(session).ingest(id, event, data),
    }
}

async fn read_run(state: &AppState, thread_id: &str, run_id: &str) -> Option<Run> {
    match state.queue.get_run(thread_id, run_id).await {
        Ok(run) => run,
        Err(e) => {
            tracing::warn!(run_id, error = %e, "the protocol stream could not read a run");
            None
        }
    }
}

/// The name the run's root graph goes by: its `configurable.graph_id`, else its assistant.
fn graph_name(run: &Run) -> String {
    run.kwargs
        .config
        .get("configurable")
        .and_then(|c| c.get("graph_id"))
        .and_then(Value::as_str)
        .map_or_else(|| run.assistant_id.clone(), str::to_owned)
}

/// A request body as JSON, or LangGraph's 400.
fn body_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|_| ApiError::bad_request("Invalid JSON body"))
}

/// `POST /threads/{thread_id}/stream/events`.
async fn events(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body = body_json(&body)?;
    let filter = Filter::parse(&body).map_err(ApiError::bad_request)?;
    let since = body.get("since").and_then(Value::as_u64);
    let thread = super::threads::find_without_values(&state, &thread_id).await?;
    let events = thread_events(&state, &thread.thread_id, Shared::default()).await?;
    let items = events
        .filter(move |event| {
            let seq = event.get("seq").and_then(Value::as_u64).unwrap_or(0);
            std::future::ready(since.is_none_or(|since| seq > since) && filter.wants(event))
        })
        .map(|event| StreamItem::Event {
            id: event.get("seq").and_then(Value::as_u64).unwrap_or(0).to_string(),
            event: event
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("event")
                .to_owned(),
            data: Arc::from(event.to_string()),
        })
        .boxed();
    let opts = SseOptions {
        resumable: true,
        heartbeat: state.runs.config().sse_heartbeat,
        modes: None,
        cancel_on_disconnect: None,
    };
    Ok(sse::response(items, opts, None, None))
}

/// `POST /threads/{thread_id}/commands`.
async fn command(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let payload = body_json(&body)?;
    let thread_id = super::params::thread_id(&thread_id)?;
    let (id, method) = match commands::parse(&payload) {
        Ok(parsed) => parsed,
        Err(envelope) => return Ok((axum::http::StatusCode::BAD_REQUEST, axum::Json(envelope)).into_response()),
    };
    let params = commands::params(&payload);
    let answer = match method {
        "run.start" => commands::run_start(&state, &thread_id, id, &params, 0).await,
        "input.respond" => commands::input_respond(&state, &thread_id, id, &params, 0).await,
        // A request follows no stream: a subscription is the stream's body, and lives with it.
        "subscription.subscribe" => match Filter::parse(&Value::Object(params)) {
            Ok(_) => commands::success(id, json!({"subscription_id": new_id(), "replayed_events": 0}), 0),
            Err(message) => commands::error(id, "invalid_argument", message),
        },
        "subscription.unsubscribe" => match params.get("subscription_id").and_then(Value::as_str) {
            Some(sub) => commands::error(id, "no_such_subscription", format!("Unknown subscription: {sub}")),
            None => commands::error(
                id,
                "invalid_argument",
                "subscription.unsubscribe requires a subscription_id.",
            ),
        },
        "agent.getTree" | "subscription.reconnect" => no_run(id),
        other => unknown(id, other),
    };
    Ok(axum::Json(answer).into_response())
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn no_run(id: u64) -> Value {
    commands::error(id, "no_such_run", "No active run is bound to this thread.")
}

fn unknown(id: u64, method: &str) -> Value {
    commands::error(id, "unknown_command", format!("Unknown protocol command: {method}"))
}

/// `GET /threads/{thread_id}/stream/events` as a WebSocket; a message larger than the server's
/// body limit closes it, as such a body is refused.
async fn socket(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    limit: Option<Extension<BodyLimit>>,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let thread_id = super::params::thread_id(&thread_id)?;
    let upgrade = match limit {
        Some(Extension(BodyLimit(max))) => upgrade.max_message_size(max).max_frame_size(max),
        None => upgrade,
    };
    Ok(upgrade.on_upgrade(move |socket| serve_socket(socket, state, thread_id)))
}

/// A WebSocket's subscriptions, and the events it has seen for their replays.
#[derive(Default)]
struct Subscriptions {
    by_id: Vec<(String, Filter)>,
    kept: VecDeque<Value>,
}

impl Subscriptions {
    fn wants(&self, event: &Value) -> bool {
        self.by_id.iter().any(|(_, f)| f.wants(event))
    }

    fn keep(&mut self, event: Value) {
        if self.kept.len() == KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back(event);
    }

    /// The kept events after `since` that `filter` wants.
    fn replay(&self, filter: &Filter, since: u64) -> Vec<Value> {
        self.kept
            .iter()
            .filter(|e| e.get("seq").and_then(Value::as_u64).unwrap_or(0) > since && filter.wants(e))
            .cloned()
            .collect()
    }
}

async fn serve_socket(mut socket: WebSocket, state: AppState, thread_id: String) {
    let session = Shared::default();
    let mut events = match thread_events(&state, &thread_id, session.clone()).await {
        Ok(events) => events,
        Err(e) => {
            tracing::warn!(thread_id, error = ?e, "a protocol WebSocket could not follow its thread");
            let _ = close(&mut socket, "thread stream unavailable").await;
            return;
        }
    };
    let mut subs = Subscriptions::default();
    loop {
        tokio::select! {
            message = socket.recv() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                    Some(Ok(_)) => continue, // pings are answered by axum; binary is not a command
                };
                let out = socket_command(&state, &thread_id, &session, &mut subs, text.as_str()).await;
                for message in out {
                    if socket.send(Message::Text(message.to_string().into())).await.is_err() {
                        return;
                    }
                }
            }
            event = events.next() => {
                let Some(event) = event else {
                    let _ = close(&mut socket, "thread stream ended").await;
                    return;
                };
                let wanted = subs.wants(&event);
                if wanted && socket.send(Message::Text(event.to_string().into())).await.is_err() {
                    return;
                }
                subs.keep(event);
            }
        }
    }
}

async fn close(socket: &mut WebSocket, reason: &'static str) -> Result<(), axum::Error> {
    let frame = CloseFrame {
        code: 1011,
        reason: reason.into(),
    };
    socket.send(Message::Close(Some(frame))).await
}

/// What a WebSocket answers to one text message: the events a subscription replays, then the
/// command's envelope.
async fn socket_command(
    state: &AppState,
    thread_id: &str,
    session: &Shared,
    subs: &mut Subscriptions,
    text: &str,
) -> Vec<Value> {
    let Ok(payload) = serde_json::from_str::<Value>(text) else {
        return vec![json!({"type": "error", "id": null, "error": "invalid_argument",
            "message": "Protocol commands must be valid JSON."})];
    };
    let (id, method) = match commands::parse(&payload) {
        Ok(parsed) => parsed,
        Err(envelope) => return vec![envelope],
    };
    let params = commands::params(&payload);
    let seq = lock(session).seq();
    let answer = match method {
        "run.start" => commands::run_start(state, thread_id, id, &params, seq).await,
        "input.respond" => commands::input_respond(state, thread_id, id, &params, seq).await,
        "subscription.subscribe" => {
            let filter = match Filter::parse(&Value::Object(params)) {
                Ok(f) => f,
                Err(message) => return vec![commands::error(id, "invalid_argument", message)],
            };
            let mut out = subs.replay(&filter, 0);
            let sub = new_id();
            let result = json!({"subscription_id": sub, "replayed_events": out.len()});
            subs.by_id.push((sub, filter));
            out.push(commands::success(id, result, seq));
            return out;
        }
        "subscription.unsubscribe" => match params.get("subscription_id").and_then(Value::as_str) {
            None => commands::error(
                id,
                "invalid_argument",
                "subscription.unsubscribe requires a subscription_id.",
            ),
            Some(sub) => match subs.by_id.iter().position(|(s, _)| s == sub) {
                Some(at) => {
                    subs.by_id.remove(at);
                    commands::success(id, json!({}), seq)
                }
                None => commands::error(id, "no_such_subscription", format!("Unknown subscription: {sub}")),
            },
        },
        "subscription.reconnect" => return reconnect(session, subs, id, &Value::Object(params), seq),
        "agent.getTree" => match lock(session).tree() {
            Some(tree) => commands::success(id, json!({ "tree": tree }), seq),
            None => no_run(id),
        },
        other => unknown(id, other),
    };
    vec![answer]
}

/// `subscription.reconnect`: a subscription (its `subscription_id` kept when given) that
/// replays what came after `since`; `resume_gap` when the socket no longer keeps all of it.
fn reconnect(session: &Shared, subs: &mut Subscriptions, id: u64, params: &Value, seq: u64) -> Vec<Value> {
    if lock(session).run_id().is_none() {
        return vec![no_run(id)];
    }
    let filter = match Filter::parse(params) {
        Ok(f) => f,
        Err(message) => return vec![commands::error(id, "invalid_argument", message)],
    };
    let Some(since) = params.get("since").and_then(Value::as_u64) else {
        return vec![commands::error(
            id,
            "invalid_argument",
            "subscription.reconnect requires a non-negative integer since.",
        )];
    };
    let oldest = subs.kept.front().and_then(|e| e.get("seq")).and_then(Value::as_u64);
    if let Some(oldest) = oldest.filter(|oldest| since + 1 < *oldest) {
        let mut gap = commands::error(
            id,
            "resume_gap",
            format!("resume gap: since={since} is older than min_available_seq={oldest}"),
        );
        gap["since"] = json!(since);
        gap["min_available_seq"] = json!(oldest);
        return vec![gap];
    }
    let mut out = subs.replay(&filter, since);
    let sub = params
        .get("subscription_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(new_id, str::to_owned);
    let result = json!({"subscription_id": sub, "replayed_events": out.len()});
    subs.by_id.retain(|(s, _)| *s != sub);
    subs.by_id.push((sub, filter));
    out.push(commands::success(id, result, seq));
    out
}
