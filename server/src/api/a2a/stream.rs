//! `message/stream` and `tasks/resubscribe`: a task's run as A2A's stream, one JSON-RPC response
//! an SSE event (`event: message`, as LangGraph's server frames them). The stream opens with the
//! task; then come a `working` status when the run starts, a `working` status carrying each piece
//! of the model's text as it streams (the run's `messages-tuple` events), and at the end the
//! answer (or an interrupt's questions) as an artifact and the final status (`final: true`).
//! The SSE framing, the heartbeats and the pace (a slow client is not buffered for) are the run
//! streams' own.

use super::task::{self, TaskIds, TaskState};
use super::{internal, A2a, Incoming, RpcFailure};
use crate::api::runs::sse;
use crate::api::AppState;
use crate::bus::StreamItem;
use crate::model::{now, Run};
use crate::runs::OUTCOME_EVENT;
use axum::response::Response;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;

/// The SSE response carrying `events`, each as the `result` of a JSON-RPC response to `id`.
pub(super) fn response(state: &AppState, id: &Value, events: BoxStream<'static, Value>) -> Response {
    let id = id.clone();
    let items = events
        .map(move |result| StreamItem::Event {
            id: String::new(),
            event: "message".to_owned(),
            data: Arc::from(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()),
        })
        .boxed();
    let options = sse::SseOptions {
        resumable: false,
        heartbeat: state.runs.config().sse_heartbeat,
        modes: None,
        cancel_on_disconnect: None,
    };
    sse::response(items, options, None, None)
}

impl A2a {
    /// `message/stream`: makes the run as `message/send` does, and streams its task.
    pub(super) async fn stream(&self, params: &Value) -> Result<BoxStream<'static, Value>, RpcFailure> {
        let incoming = Incoming::read(params)?;
        let (run, task_id) = self.start(params, &incoming, json!(["messages-tuple"])).await?;
        let items = self.state.runs.follow(&run, Some("-1")).await.map_err(internal)?;
        let mut echoed = incoming.raw.clone();
        echoed["kind"] = json!("message");
        echoed["taskId"] = json!(task_id);
        echoed["contextId"] = json!(run.thread_id);
        let first = json!({
            "kind": "task", "id": task_id, "contextId": run.thread_id,
            "status": {"state": TaskState::Submitted.as_str(), "timestamp": run.created_at},
            "history": [echoed],
        });
        Ok(self.follow(run, task_id, items, first))
    }

    /// `tasks/resubscribe`: the task as it stands, then, while its run goes on, what comes of it
    /// from now.
    pub(super) async fn resubscribe(&self, params: &Value) -> Result<BoxStream<'static, Value>, RpcFailure> {
        let id = super::task_param(params)?;
        let view = self.view(params, "")?;
        let found = self.find(id).await?;
        let task = self.task(&found, view).await?;
        if found.latest.status.is_final() {
            return Ok(stream::iter([task]).boxed());
        }
        let items = self.state.runs.follow(&found.latest, None).await.map_err(internal)?;
        Ok(self.follow(found.latest, found.task_id, items, task))
    }

    /// `first`, then the A2A events of `run`'s stream `items`.
    fn follow(
        &self,
        run: Run,
        task_id: String,
        items: BoxStream<'static, StreamItem>,
        first: Value,
    ) -> BoxStream<'static, Value> {
        let following = Following {
            a2a: self.clone(),
            run,
            task_id,
            items,
            queue: VecDeque::from([first]),
            outcome: None,
            working: false,
            over: false,
        };
        stream::unfold(following, |mut f| async move {
            let next = f.next().await?;
            Some((next, f))
        })
        .boxed()
    }
}

/// A task's stream being made from its run's.
struct Following {
    a2a: A2a,
    run: Run,
    task_id: String,
    items: BoxStream<'static, StreamItem>,
    /// Events made, not yet sent.
    queue: VecDeque<Value>,
    /// What the run answered (its [`OUTCOME_EVENT`]).
    outcome: Option<Value>,
    /// Whether the `working` status went out.
    working: bool,
    /// Whether the run's stream ended.
    over: bool,
}

impl Following {
    fn ids(&self) -> TaskIds<'_> {
        self.a2a.ids(&self.task_id, &self.run)
    }

    /// A `status-update` of the task.
    fn status_update(&self, status: Value, last: bool) -> Value {
        json!({
            "kind": "status-update", "taskId": self.task_id, "contextId": self.run.thread_id,
            "status": status, "final": last,
        })
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.over {
                return None;
            }
            match self.items.next().await {
                Some(StreamItem::Event { event, data, .. }) => {
                    if !self.working {
                        self.working = true;
                        let status = json!({"state": TaskState::Working.as_str(), "timestamp": now()});
                        self.queue.push_back(self.status_update(status, false));
                    }
                    if event == OUTCOME_EVENT {
                        self.outcome = serde_json::from_str(&data).ok();
                    } else if event == "messages" || event.starts_with("messages|") {
                        if let Some(text) = self.text_of_chunk(&data) {
                            self.queue.push_back(text);
                        }
                    }
                }
                Some(StreamItem::Done) | None => {
                    self.over = true;
                    self.end().await;
                }
            }
        }
    }

    /// A `working` status carrying a piece of the model's text, from a `messages-tuple` event
    /// (`[chunk, metadata]`); `None` for a chunk with no text, or not the model's.
    fn text_of_chunk(&self, data: &str) -> Option<Value> {
        let pair: Value = serde_json::from_str(data).ok()?;
        let chunk = pair.get(0)?;
        let kind = chunk.get("type").and_then(Value::as_str)?;
        if !matches!(kind, "ai" | "AIMessageChunk") {
            return None;
        }
        let text = match chunk.get("content")? {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => return None,
        };
        if text.is_empty() {
            return None;
        }
        let id = chunk.get("id").and_then(Value::as_str).unwrap_or(&self.run.run_id);
        let parts = vec![json!({"kind": "text", "text": text})];
        let message = task::message("agent", parts, id, &self.task_id, &self.run.thread_id);
        let status = json!({"state": TaskState::Working.as_str(), "message": message, "timestamp": now()});
        Some(self.status_update(status, false))
    }

    /// The run ended: its artifacts and its final status, from the run as recorded.
    async fn end(&mut self) {
        let state = &self.a2a.state;
        let run = match state.runs.get(&self.run.thread_id, &self.run.run_id).await {
            Ok(run) => run,
            Err(e) => {
                tracing::warn!(run_id = %self.run.run_id, error = %e, "an A2A stream could not read its run's end");
                return;
            }
        };
        if self.outcome.is_none() && run.status.is_final() {
            self.outcome = state.runs.outcome(&run).await.ok();
        }
        self.run = run;
        let outcome = self.outcome.as_ref();
        let task_state = TaskState::of(self.run.status, task::asks(outcome));
        let ids = self.ids();
        let mut ending: Vec<Value> = task::artifacts(task_state, outcome, task::start_of(&self.run), &ids)
            .into_iter()
            .map(|artifact| {
                json!({
                    "kind": "artifact-update", "taskId": self.task_id, "contextId": self.run.thread_id,
                    "artifact": artifact, "append": false, "lastChunk": true,
                })
            })
            .collect();
        let status = task::status(task_state, outcome, &ids, &now());
        ending.push(self.status_update(status, true));
        self.queue.extend(ending);
    }
}
