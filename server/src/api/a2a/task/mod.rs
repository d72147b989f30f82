//! A2A's objects (protocol 0.3) made from weir's: what a client's [`Message`](Incoming) asks of a
//! run (its input, or the answer that resumes it), and the `Task` a run is seen as, with its
//! state, its history (the thread's `messages`) and its artifacts (the answer, or the questions
//! of an interrupt).
//!
//! A task is a thread's run, and the runs that answered its questions: its id is
//! `<context id>:<first run id>`, and each of its runs carries it in its metadata
//! ([`TASK_KEY`]), with the id of the person's message that started it ([`START_KEY`]): the
//! task's turn of the conversation is what follows that message.

use super::content;
use super::{HistoryView, RpcFailure, Scope, CONTENT_TYPE_NOT_SUPPORTED, INVALID_PARAMS};
use crate::model::{Run, RunStatus};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The run metadata key naming the task a run belongs to.
pub(super) const TASK_KEY: &str = "a2a_task_id";

/// The run metadata key naming the message that started the run's task.
pub(super) const START_KEY: &str = "a2a_message_id";

/// A task's state, as A2A 0.3 spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Canceled,
    Failed,
}

impl TaskState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::Completed => "completed",
            Self::Canceled => "canceled",
            Self::Failed => "failed",
        }
    }

    /// Whether the task takes no more messages.
    pub(super) fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Canceled | Self::Failed)
    }

    /// The state of a task whose latest run is `status`; `asks` whether that run ended paused
    /// for a person (its outcome holds `__interrupt__`): a task that needs input. A cancelled run
    /// is a cancelled task.
    pub(super) fn of(status: RunStatus, asks: bool) -> Self {
        match status {
            RunStatus::Pending => Self::Submitted,
            RunStatus::Running => Self::Working,
            RunStatus::Success if asks => Self::InputRequired,
            RunStatus::Success => Self::Completed,
            RunStatus::Interrupted => Self::Canceled,
            RunStatus::Error | RunStatus::Timeout => Self::Failed,
        }
    }
}

/// Whether a run's outcome (`join`'s value) is a pause for a person.
pub(super) fn asks(outcome: Option<&Value>) -> bool {
    outcome.is_some_and(|o| o.get("__interrupt__").is_some())
}

/// A client's message, read: its id, and what it gives the graph.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Incoming {
    /// `messageId`.
    pub(super) id: String,
    /// `contextId`, when the client names one.
    pub(super) context_id: Option<String>,
    /// `taskId`, when the message continues a task.
    pub(super) task_id: Option<String>,
    /// Its text and file parts, in order, as content blocks (`{"type": "text", …}`, `{"type":
    /// "image", "base64": …}`, [`content::file_block`]), each with its part's index.
    pub(super) content: Vec<(usize, Value)>,
    /// Its `data` parts' objects, merged in order.
    pub(super) data: Map<String, Value>,
    /// The message as it came (echoed in a stream's first task).
    pub(super) raw: Value,
}

impl Incoming {
    /// Reads `params.message` of `message/send` or `message/stream`.
    pub(super) fn read(params: &Value) -> Result<Self, RpcFailure> {
        let invalid = |why: &str| (INVALID_PARAMS, format!("params field `message{why}"));
        let Some(message) = params.get("message").and_then(Value::as_object) else {
            return Err(invalid("`: missing, or not an object"));
        };
        let text_of = |key: &str| match message.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(invalid(&format!(".{key}`: expected a non-empty string"))),
        };
        let id = text_of("messageId")?.ok_or_else(|| invalid(".messageId`: missing"))?;
        match message.get("role").and_then(Value::as_str) {
            Some("user") => {}
            Some(other) => {
                return Err(invalid(&format!(
                    ".role`: `{other}` is not a role a client sends (expected \"user\")"
                )))
            }
            None => return Err(invalid(".role`: missing")),
        }
        let Some(parts) = message.get("parts").and_then(Value::as_array) else {
            return Err(invalid(".parts`: missing, or not an array"));
        };
        if parts.is_empty() {
            return Err(invalid(".parts`: empty (a message needs a text, file or data part)"));
        }
        let (mut blocks, mut data) = (Vec::new(), Map::new());
        for (i, part) in parts.iter().enumerate() {
            let kind = part.get("kind").and_then(Value::as_str);
            match (kind, part.get("text"), part.get("data"), part.get("file")) {
                (Some("text") | None, Some(Value::String(text)), None, None) => {
                    blocks.push((i, json!({"type": "text", "text": text})));
                }
                (Some("data") | None, None, Some(Value::Object(object)), None) => {
                    data.extend(object.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                (Some("data") | None, None, Some(_), None) => {
                    return Err(invalid(&format!(
                        ".parts[{i}].data`: expected an object (its fields are the graph's input)"
                    )))
                }
                (Some("file") | None, None, None, Some(file)) => {
                    blocks.push((i, content::file_block(file, &format!("message.parts[{i}]"))?));
                }
                _ => {
                    return Err(invalid(&format!(
                        ".parts[{i}]`: expected one of a text part (`text`), a data part (`data`) or a file part"
                    )))
                }
            }
        }
        Ok(Self {
            id,
            context_id: text_of("contextId")?,
            task_id: text_of("taskId")?,
            content: blocks,
            data,
            raw: Value::Object(message.clone()),
        })
    }

    /// The run's input: the text and files as one human message (with this message's id) under
    /// `messages` (a lone text as a string, else content blocks in the parts' order), and the
    /// data parts' fields beside it.
    pub(super) fn input(&self) -> Value {
        let mut input = self.data.clone();
        let content = match self.content.as_slice() {
            [] => None,
            [(_, only)] if only["type"] == "text" => Some(only["text"].clone()),
            all => Some(all.iter().map(|(_, block)| block.clone()).collect()),
        };
        if let Some(content) = content {
            input.insert(
                "messages".to_owned(),
                json!([{"type": "human", "content": content, "id": self.id}]),
            );
        }
        Value::Object(input)
    }

    /// The answer that resumes a task waiting for input: the data parts' object when there is
    /// one, else the text; a file answers no question (`-32005`, naming its part).
    pub(super) fn answer(&self) -> Result<Value, RpcFailure> {
        if let Some((i, _)) = self.content.iter().find(|(_, block)| block["type"] != "text") {
            let why = format!(
                "params field `message.parts[{i}]`: a file cannot answer the task's question (send text or data)"
            );
            return Err((CONTENT_TYPE_NOT_SUPPORTED, why));
        }
        if !self.data.is_empty() {
            return Ok(Value::Object(self.data.clone()));
        }
        let texts: Vec<&str> = self.content.iter().filter_map(|(_, b)| b["text"].as_str()).collect();
        Ok(json!(texts.join("\n")))
    }
}

/// A task id: `<context id>:<run id>`.
pub(super) fn task_id(context_id: &str, run_id: &str) -> String {
    format!("{context_id}:{run_id}")
}

/// The context and first run of task `id`, or why it names none.
pub(super) fn parse_task_id(id: &str) -> Option<(&str, &str)> {
    id.split_once(':')
        .filter(|(context, run)| uuid::Uuid::parse_str(context).is_ok() && uuid::Uuid::parse_str(run).is_ok())
}

/// The id of the message that started `run`'s task, from its metadata.
pub(super) fn start_of(run: &Run) -> Option<&str> {
    run.metadata.get(START_KEY).and_then(Value::as_str)
}

/// The id of the task `run` is of: the one its metadata names, else the task it started.
pub(super) fn task_of(run: &Run) -> String {
    match run.metadata.get(TASK_KEY).and_then(Value::as_str) {
        Some(task) => task.to_owned(),
        None => task_id(&run.thread_id, &run.run_id),
    }
}

/// The tasks of assistant `assistant_id` among a context's `runs`, by the id of the message
/// that started each (a task's runs all name it).
pub(super) fn starts(runs: &[Run], assistant_id: &str) -> HashMap<String, String> {
    runs.iter()
        .filter(|run| run.assistant_id == assistant_id)
        .filter_map(|run| Some((start_of(run)?.to_owned(), task_of(run))))
        .collect()
}

/// The A2A role of a message of the thread: a person's is the user's, the model's the agent's;
/// others (system, tool) are not part of the conversation A2A shows.
fn role_of(message: &Value) -> Option<&'static str> {
    match message.get("type").and_then(Value::as_str)? {
        "human" | "user" => Some("user"),
        "ai" | "AIMessageChunk" => Some("agent"),
        _ => None,
    }
}

/// An A2A message of `role` with `parts`, in task `task_id` of `context_id`.
pub(super) fn message(role: &str, parts: Vec<Value>, id: &str, task_id: &str, context_id: &str) -> Value {
    json!({
        "kind": "message", "role": role, "parts": parts, "messageId": id,
        "taskId": task_id, "contextId": context_id,
    })
}

/// The thread's conversation (`values.messages`) as A2A messages, for task `ids.task_id` as
/// `view` asks: each message with the task it belongs to (the task whose starting message, by
/// `starts`, it is or follows; before any, the task asked about), all of them or the task's own,
/// the last `view.length`.
pub(super) fn history(
    values: &Value,
    ids: &TaskIds<'_>,
    view: HistoryView,
    starts: &HashMap<String, String>,
) -> Vec<Value> {
    let messages = values
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut owner = (view.scope == Scope::Context).then_some(ids.task_id);
    let mut out = Vec::new();
    for m in messages {
        let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
        if let Some(task) = starts.get(id) {
            owner = Some(task);
        }
        let Some(task) = owner else { continue };
        if view.scope == Scope::Task && task != ids.task_id {
            continue;
        }
        let Some(role) = role_of(m) else { continue };
        let parts = content::parts(m.get("content").unwrap_or(&Value::Null));
        if content::says_something(&parts) {
            out.push(message(role, parts, id, task, ids.context_id));
        }
    }
    if let Some(limit) = view.length {
        out.drain(..out.len().saturating_sub(limit));
    }
    out
}

/// What the task answered: the text and files of the last agent message that says something
/// after the message that started it (its turn); a graph without `messages`, its output values
/// as data.
pub(super) fn answer_parts(values: &Value, start: Option<&str>) -> Vec<Value> {
    let Some(messages) = values.get("messages").and_then(Value::as_array) else {
        let mut values = values.clone();
        if let Some(object) = values.as_object_mut() {
            object.remove("__interrupt__");
        }
        return vec![json!({"kind": "data", "data": values})];
    };
    let from = start
        .and_then(|id| {
            messages
                .iter()
                .position(|m| m.get("id").and_then(Value::as_str) == Some(id))
        })
        .map_or(0, |at| at + 1);
    let turn = &messages[from.min(messages.len())..];
    // The turn ends where the next person's message begins.
    let end = turn
        .iter()
        .position(|m| role_of(m) == Some("user"))
        .unwrap_or(turn.len());
    turn[..end]
        .iter()
        .rev()
        .filter(|m| role_of(m) == Some("agent"))
        .map(|m| content::parts(m.get("content").unwrap_or(&Value::Null)))
        .find(|parts| content::says_something(parts))
        .unwrap_or_else(|| vec![json!({"kind": "text", "text": ""})])
}

/// The artifact holding the answer.
pub(super) fn answer_artifact(parts: Vec<Value>, artifact_id: &str, assistant_id: &str) -> Value {
    json!({
        "artifactId": artifact_id, "name": "Assistant Response",
        "description": format!("Response from assistant {assistant_id}"), "parts": parts,
    })
}

/// The artifact holding an interrupt's questions, one data part each (`{id, value}`).
pub(super) fn interrupt_artifact(interrupts: &Value, artifact_id: &str) -> Value {
    let parts: Vec<Value> = interrupts
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|i| json!({"kind": "data", "data": {"id": i.get("id"), "value": i.get("value")}}))
        .collect();
    json!({
        "artifactId": artifact_id, "name": "Interrupt",
        "description": "Agent requires input to continue", "parts": parts,
    })
}

/// The agent's message of a task that asks for input: its questions, each as text when it is
/// a string, else as data.
fn questions(interrupts: &Value, id: &str, task_id: &str, context_id: &str) -> Value {
    let parts: Vec<Value> = interrupts
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|i| match i.get("value") {
            Some(Value::String(s)) => json!({"kind": "text", "text": s}),
            other => json!({"kind": "data", "data": other.cloned().unwrap_or(Value::Null)}),
        })
        .collect();
    message("agent", parts, id, task_id, context_id)
}

/// A task's status: its state, when, and for a failed task or one asking for input, the
/// agent's message saying why.
pub(super) fn status(state: TaskState, outcome: Option<&Value>, ids: &TaskIds<'_>, at: &str) -> Value {
    let mut status = json!({"state": state.as_str(), "timestamp": at});
    let message_id = format!("{}-status", ids.run_id);
    match (state, outcome) {
        (TaskState::Failed, outcome) => {
            let error = outcome.and_then(|o| o.get("__error__"));
            let kind = error
                .and_then(|e| e.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("Error");
            let why = error
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let text = format!("Error executing assistant: {kind}: {why}");
            let parts = vec![json!({"kind": "text", "text": text.trim_end_matches(": ")})];
            status["message"] = message("agent", parts, &message_id, ids.task_id, ids.context_id);
        }
        (TaskState::InputRequired, Some(outcome)) => {
            status["message"] = questions(&outcome["__interrupt__"], &message_id, ids.task_id, ids.context_id);
        }
        _ => {}
    }
    status
}

/// What names a task and its latest run.
pub(super) struct TaskIds<'a> {
    pub(super) task_id: &'a str,
    pub(super) context_id: &'a str,
    pub(super) run_id: &'a str,
    pub(super) assistant_id: &'a str,
}

/// The artifacts of a task in `state` that answered `outcome`: the answer once completed, the
/// questions while it asks for input, none otherwise. Their ids follow from the run's, so that a
/// task read twice shows the same artifacts.
pub(super) fn artifacts(
    state: TaskState,
    outcome: Option<&Value>,
    start: Option<&str>,
    ids: &TaskIds<'_>,
) -> Vec<Value> {
    let Some(outcome) = outcome else {
        return Vec::new();
    };
    match state {
        TaskState::Completed => vec![answer_artifact(
            answer_parts(outcome, start),
            &format!("{}-response", ids.run_id),
            ids.assistant_id,
        )],
        TaskState::InputRequired => vec![interrupt_artifact(
            &outcome["__interrupt__"],
            &format!("{}-interrupt", ids.run_id),
        )],
        _ => Vec::new(),
    }
}

/// The task but its history: `run` its latest run, in `state`, `outcome` what it answered (once
/// ended).
pub(super) fn task(run: &Run, state: TaskState, outcome: Option<&Value>, ids: &TaskIds<'_>) -> Value {
    let mut task = json!({
        "kind": "task", "id": ids.task_id, "contextId": ids.context_id,
        "status": status(state, outcome, ids, &run.updated_at),
    });
    let artifacts = artifacts(state, outcome, start_of(run), ids);
    if !artifacts.is_empty() {
        task["artifacts"] = Value::Array(artifacts);
    }
    task["metadata"] = json!({"run_id": run.run_id, "assistant_id": ids.assistant_id});
    task
}

#[cfg(test)]
mod tests;
