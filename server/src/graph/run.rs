//! One run through the bridge: the request checked and turned into a [`RunConfig`] and a start
//! (a new input, a resume with one answer or a map of answers, a command with an update or a
//! goto through the runtime's [`RunCommand`], or going on from the head), the
//! runtime's stream adapted into [`RunEvent`]s, and the run's end. Dropping the adapted stream
//! drops the runtime's, which stops the run between two steps.
//!
//! A failed run's `error` is a short kind, after LangGraph's exception classes where one
//! exists: for a node that returned an error, the short name of its error's Rust type (a node
//! failing with `ValueError` gives `"ValueError"`, as a Python node raising one does; see
//! [`Error::node_error_kind`]), or `NodeError` when the error has no type of its own (a boxed
//! error, a string); the message is the node's own, as LangGraph's is the exception's. Then
//! `NodePanic` (the message names the node and the step), `GraphRecursionError`,
//! `InvalidUpdateError`, `TimeoutError`, `InvalidResume` (one answer without an id for several
//! paused tasks), and `RuntimeError` for the rest (a checkpointer failure, a lost run). An answer
//! nothing asked for is no error: as LangGraph's, the run goes on from the thread's head, and a
//! resume map's answers to interrupts that are not waiting are left unused. With
//! `strict_resume` (LangGraph's `UnknownInterruptError`) those fail the run before anything is
//! written: a map naming an interrupt that is not waiting, an empty map, one answer for several.

use super::codec::{type_name, Codec};
use super::events::Translate;
use super::{GraphError, InterruptView, RunEnd, RunEvent, RunRequest};
use futures::stream::{BoxStream, StreamExt};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use weir_runtime::{CompiledGraph, Error, Event, Paused, RunCommand, RunConfig, RunStream, State, StreamMode};

/// How a run starts.
pub(crate) enum Start<S: State> {
    /// A new input.
    Input(S::Update),
    /// One answer to the paused task.
    Resume(Value),
    /// Answers by interrupt id.
    ResumeMap(Map<String, Value>),
    /// On from the thread's head (input `null`).
    Head,
    /// A command with an update or a goto (and maybe an answer).
    Command(RunCommand<S>),
}

/// Checks the request's input and command: what the run starts with.
pub(crate) fn check<S: State, C: Codec<S> + ?Sized>(
    graph: &CompiledGraph<S>,
    codec: &C,
    r: &RunRequest,
) -> Result<Start<S>, GraphError> {
    let command = match &r.command {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => Some(c),
        Some(other) => {
            return Err(GraphError::Invalid(format!(
                "command: expected an object with `resume`, `update` or `goto`, not {}",
                type_name(other)
            )))
        }
    };
    if let Some(c) = command {
        if !matches!(r.input, None | Some(Value::Null)) {
            return Err(GraphError::Invalid(
                "input: give either `input` or `command`, not both".into(),
            ));
        }
        let edits = ["update", "goto", "graph"]
            .iter()
            .any(|k| c.get(*k).is_some_and(|v| !v.is_null()));
        if edits
            || c.keys()
                .any(|k| !matches!(k.as_str(), "resume" | "update" | "goto" | "graph"))
        {
            // The runtime's decoding names the path at fault (`command.update.<field>`).
            let cmd = graph
                .command_from_json(&Value::Object(c.clone()))
                .map_err(|e| GraphError::Invalid(unquote_path(&e.to_string())))?;
            return Ok(Start::Command(cmd));
        }
        return Ok(match c.get("resume") {
            // As LangGraph's: an object keyed by interrupt ids, the empty one too.
            Some(Value::Object(map)) if map.keys().all(|k| is_interrupt_id(k)) => Start::ResumeMap(map.clone()),
            Some(answer) => Start::Resume(answer.clone()),
            None => Start::Head,
        });
    }
    match &r.input {
        None | Some(Value::Null) => Ok(Start::Head),
        Some(input) => codec.decode(input, "input").map(Start::Input),
    }
}

/// The runtime's "`command.update.x`: …" as the bridge's other messages: "command.update.x: …".
fn unquote_path(message: &str) -> String {
    match message.strip_prefix('`').and_then(|m| m.split_once("`: ")) {
        Some((path, rest)) => format!("{path}: {rest}"),
        None => message.to_owned(),
    }
}

/// An interrupt's id: 32 hex digits.
fn is_interrupt_id(k: &str) -> bool {
    k.len() == 32 && k.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The run's configuration from the request.
pub(crate) fn config_of<S: State, C: Codec<S>>(
    graph: &CompiledGraph<S>,
    codec: &C,
    r: &RunRequest,
) -> Result<RunConfig, GraphError> {
    let mut config = RunConfig::thread(&r.thread_id)
        // The `events` mode shows the chains of subgraphs' tasks even without `stream_subgraphs`.
        .subgraphs(r.subgraphs || r.modes.contains(&super::Mode::Events))
        .durability(r.durability)
        // LangGraph's API shows each task's result in a thread's history.
        .task_results(true);
    config.context = codec.context(&r.context)?;
    config.checkpoint_id = r.checkpoint_id.clone();
    // The checkpoints carry the run's metadata (`graph_id`, `assistant_id`, …) and its id, as
    // LangGraph's server records them: strings as they are, other JSON values together under
    // one key the thread's state unpacks (the runtime's metadata is strings).
    let mut other = Map::new();
    for (k, v) in &r.metadata {
        match v {
            Value::String(s) => {
                config.metadata.insert(k.clone(), s.clone());
            }
            v => {
                other.insert(k.clone(), v.clone());
            }
        }
    }
    if !other.is_empty() {
        config
            .metadata
            .insert(super::state::JSON_METADATA.into(), Value::Object(other).to_string());
    }
    if !r.run_id.is_empty() {
        config.metadata.insert("run_id".into(), r.run_id.clone());
        // A run's checkpoints name its user, as LangGraph's server's do (from the run's
        // configuration, so its messages' metadata does not): none, without authentication,
        // as `langgraph dev` records it.
        for key in ["user_id", "langgraph_auth_user_id"] {
            config.metadata.entry(key.to_owned()).or_default();
        }
    }
    if let Some(limit) = r.config.get("recursion_limit") {
        config.recursion_limit = limit.as_u64().filter(|l| *l > 0).ok_or_else(|| {
            GraphError::Invalid(format!(
                "config.recursion_limit: expected a positive integer, not {limit}"
            ))
        })? as usize;
    }
    let nodes: Vec<String> = graph.node_names().into_iter().map(str::to_owned).collect();
    let pick = |list: &[String], what: &str| -> Result<Vec<String>, GraphError> {
        if list.iter().any(|n| n == "*") {
            return Ok(nodes.clone());
        }
        match list.iter().find(|n| !nodes.contains(n)) {
            Some(bad) => Err(GraphError::Invalid(format!(
                "{what}: unknown node `{bad}`; the graph's nodes are {}",
                nodes.join(", ")
            ))),
            None => Ok(list.to_vec()),
        }
    };
    config.interrupt_before = pick(&r.interrupt_before, "interrupt_before")?;
    config.interrupt_after = pick(&r.interrupt_after, "interrupt_after")?;
    Ok(config)
}

/// A run started on the runtime: its stream, or a resume map still to check against the
/// interrupts waiting (the stream starts once they are read); when it started with answers, its
/// stream modes, to go on from the head with instead should nothing have asked for the answers
/// (as LangGraph's resume does).
pub(crate) struct Started<S: State> {
    stream: Option<RunStream<S>>,
    answers: Option<Map<String, Value>>,
    from_head: Option<StreamMode>,
}

/// Starts the run on the runtime.
pub(crate) fn start<S: State, C: Codec<S>>(
    graph: &CompiledGraph<S>,
    codec: &C,
    r: &RunRequest,
    config: &RunConfig,
    modes: StreamMode,
) -> Result<Started<S>, GraphError> {
    let bad = |e: Error| GraphError::Invalid(format!("command.resume: {e}"));
    let start = check(graph, codec, r)?;
    let from_head = matches!(start, Start::Resume(_) | Start::ResumeMap(_)).then_some(modes);
    let (stream, answers) = match start {
        Start::Input(update) => (Some(graph.stream(update, config, modes)), None),
        Start::Resume(answer) => (
            Some(graph.stream_resume(Some(answer), config, modes).map_err(bad)?),
            None,
        ),
        Start::ResumeMap(answers) => (None, Some(answers)),
        Start::Head => (
            Some(graph.stream_resume(None::<Value>, config, modes).map_err(bad)?),
            None,
        ),
        Start::Command(command) => (Some(graph.stream(command, config, modes)), None),
    };
    Ok(Started {
        stream,
        answers,
        from_head,
    })
}

/// The runs of each thread that were cut off (their stream dropped before it ended: a
/// cancellation) and are still settling: a rollback or a thread's deletion waits for them, so
/// that none of their checkpoint writes lands after it.
pub(crate) type Stopping = Arc<Mutex<HashMap<String, Vec<tokio::task::JoinHandle<()>>>>>;

/// Takes the runs of `thread_id` still settling and waits until they have ended.
pub(crate) async fn settled(stopping: &Stopping, thread_id: &str) {
    let handles = stopping
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(thread_id)
        .unwrap_or_default();
    for handle in handles {
        let _ = handle.await;
    }
}

/// A run's adapted stream: its events translated, then its end.
struct Adapter<S: State, C> {
    /// `None` once handed to the task that stops it (on drop).
    stream: Option<RunStream<S>>,
    stopping: Stopping,
    graph: CompiledGraph<S>,
    codec: Arc<C>,
    tr: Translate,
    config: RunConfig,
    /// The run's stream modes, while a resume with answers nothing asked for may still go on
    /// from the head instead (LangGraph's resume: "any `Command` resumes").
    from_head: Option<StreamMode>,
    /// A resume map not yet given to the runtime: checked against the interrupts waiting first.
    answers: Option<Map<String, Value>>,
    /// `strict_resume`: answers to no waiting interrupt fail the run.
    strict: bool,
    queue: VecDeque<RunEvent>,
    paused: Option<Vec<Paused>>,
    begun: bool,
    done: bool,
}

/// The runtime's stream of the run as [`RunEvent`]s, ending with one [`RunEvent::End`].
pub(crate) fn adapt<S: State, C: Codec<S>>(
    graph: CompiledGraph<S>,
    codec: Arc<C>,
    (started, strict): (Started<S>, bool),
    tr: Translate,
    config: RunConfig,
    stopping: Stopping,
) -> BoxStream<'static, RunEvent> {
    let adapter = Adapter {
        stream: started.stream,
        stopping,
        graph,
        codec,
        tr,
        config,
        from_head: started.from_head,
        answers: started.answers,
        strict,
        queue: VecDeque::new(),
        paused: None,
        begun: false,
        done: false,
    };
    futures::stream::unfold(adapter, |mut a| async move {
        loop {
            if let Some(e) = a.queue.pop_front() {
                return Some((e, a));
            }
            if a.done {
                return None;
            }
            a.next().await;
        }
    })
    .boxed()
}

impl<S: State, C: Codec<S>> Adapter<S, C> {
    /// Takes the runtime's next item into the queue.
    async fn next(&mut self) {
        let mut out = Vec::new();
        if !self.begun {
            self.begun = true;
            self.tr.begin(&mut out);
        }
        if let Some(answers) = self.answers.take() {
            match self.start_answering(answers).await {
                Ok(stream) => self.stream = Some(stream),
                Err(end) => {
                    self.done = true;
                    out.push(RunEvent::End(end));
                    self.queue.extend(out);
                    return;
                }
            }
        }
        let next = match &mut self.stream {
            Some(stream) => stream.next().await,
            None => None,
        };
        match next {
            Some(Ok(event)) => self.translate(event, &mut out),
            // An answer nothing asked for (a thread paused at a static breakpoint, or done):
            // LangGraph resumes with any command, so the run goes on from the head, passing
            // the breakpoint (SEMANTICS G21). Nothing of the failed start ran or was saved.
            Some(Err(e)) if e.is_nothing_to_resume() && self.from_head.is_some() => {
                let modes = self.from_head.take().expect("checked");
                let stream = self.graph.stream_resume(None::<Value>, &self.config, modes);
                match stream {
                    Ok(stream) => self.stream = Some(stream),
                    Err(e) => {
                        self.done = true;
                        let (error, message) = error_kind(&e);
                        out.push(RunEvent::End(RunEnd::Error { error, message }));
                    }
                }
            }
            // A run on from the head with nothing to go on from: nothing runs, and the run
            // ends with the thread's values unchanged (as LangGraph's).
            // On a thread with no checkpoint, it is LangGraph's `EmptyInputError`.
            Some(Err(e)) if e.is_nothing_to_resume() || e.is_empty_input() => {
                self.done = true;
                out.push(RunEvent::End(match self.head_values().await {
                    Some(values) if e.is_nothing_to_resume() => RunEnd::Success { values },
                    None => empty_input(&self.codec.field_names()),
                    Some(_) => {
                        let (error, message) = error_kind(&e);
                        RunEnd::Error { error, message }
                    }
                }));
            }
            Some(Err(e)) => {
                self.done = true;
                let (mut error, message) = error_kind(&e);
                if self.strict && e.is_bad_resume() {
                    error = UNKNOWN_INTERRUPT.to_owned();
                }
                out.push(RunEvent::End(RunEnd::Error { error, message }));
            }
            None => {
                self.done = true;
                let end = self.end().await;
                self.tr.finish(&mut out);
                out.push(RunEvent::End(end));
            }
        }
        self.queue.extend(out);
    }

    fn translate(&mut self, event: Event<S>, out: &mut Vec<RunEvent>) {
        match event {
            Event::Values { state, .. } => self.tr.values("", self.codec.values(&state), out),
            Event::Update { node, key, update, .. } => {
                self.tr
                    .update("", key.as_deref(), &node, self.codec.update(&update), out)
            }
            Event::Custom { value, .. } => self.tr.custom("", value, out),
            Event::Message { chunk, meta } => self.tr.message("", chunk, &meta, out),
            Event::Tool { event, .. } => self.tr.tool("", event, out),
            Event::TaskStart { step, key, node, .. } => self.tr.task_start("", step, &key, &node, out),
            Event::TaskEnd {
                step, key, node, error, ..
            } => self.tr.task_end("", step, (&key, &node), error.as_deref(), out),
            Event::Checkpoint {
                step,
                id,
                source,
                next,
                keys,
            } => self.tr.checkpoint("", (step, &id, source), (&next, &keys), out),
            Event::Paused(pauses) => {
                self.tr.paused(&pauses, out);
                self.paused = Some(pauses);
            }
            Event::Subgraph { ns, keys, event } => self.tr.subgraph((&ns, &keys), event, out),
        }
    }

    /// The run's stream answering a resume map: each answer to its waiting interrupt (by
    /// interrupt id or task id); answers to none are left unused (with none left, the run goes
    /// on from the head and the interrupts ask again), or with `strict_resume` end the run
    /// before anything is written.
    async fn start_answering(&mut self, answers: Map<String, Value>) -> Result<RunStream<S>, RunEnd> {
        let modes = self.from_head.take().expect("a resume map keeps its modes");
        let fail = |e: &Error| {
            let (error, message) = error_kind(e);
            RunEnd::Error { error, message }
        };
        let waiting: Vec<(String, String)> = match self.graph.get_state(&self.config).await {
            Ok(snap) => snap.map_or_else(Vec::new, |s| {
                s.tasks.into_iter().filter_map(|t| Some((t.pause?.id, t.id))).collect()
            }),
            Err(e) => return Err(fail(&e)),
        };
        let waits = |id: &str| waiting.iter().any(|(pause, task)| pause == id || task == id);
        if self.strict {
            let mut pending: Vec<&str> = waiting.iter().map(|(pause, _)| pause.as_str()).collect();
            pending.sort_unstable();
            let pending = if pending.is_empty() {
                "no interrupt is waiting".to_owned()
            } else {
                format!("the interrupts waiting: {}", pending.join(", "))
            };
            let mut unknown: Vec<&String> = answers.keys().filter(|k| !waits(k)).collect();
            unknown.sort_unstable();
            let refused = match unknown.first() {
                _ if answers.is_empty() => Some("The resume map names no interrupt".to_owned()),
                Some(first) => Some(format!("Unknown or already-consumed interrupt: {first}")),
                None => None,
            };
            if let Some(why) = refused {
                return Err(RunEnd::Error {
                    error: UNKNOWN_INTERRUPT.to_owned(),
                    message: format!("{why} ({pending})"),
                });
            }
        }
        let answers: Map<String, Value> = answers.into_iter().filter(|(k, _)| waits(k)).collect();
        let stream = if answers.is_empty() {
            self.graph.stream_resume(None::<Value>, &self.config, modes)
        } else {
            self.from_head = Some(modes);
            self.graph.stream_resume_map(answers, &self.config, modes)
        };
        stream.map_err(|e| fail(&e))
    }

    /// The values at the thread's head, `None` without a checkpoint.
    async fn head_values(&self) -> Option<Value> {
        let head = RunConfig::thread(self.config.thread_id.clone().unwrap_or_default());
        match self.graph.get_state(&head).await {
            Ok(Some(snap)) => Some(self.codec.values(&snap.values)),
            _ => None,
        }
    }

    /// How the run ended without an error: done, or paused (the pauses' task ids read back
    /// from the thread's state).
    async fn end(&mut self) -> RunEnd {
        let values = self.tr.values.clone();
        let Some(pauses) = self.paused.take() else {
            return RunEnd::Success { values };
        };
        let head = RunConfig::thread(self.config.thread_id.clone().unwrap_or_default());
        let tasks = match self.graph.get_state(&head).await {
            Ok(Some(snap)) => snap.tasks,
            _ => Vec::new(),
        };
        // A static pause (interrupt_before/after) has no interrupt object, as in LangGraph.
        let interrupts = pauses
            .iter()
            .filter(|p| p.question.is_some())
            .map(|p| InterruptView {
                task_id: tasks
                    .iter()
                    .find(|t| t.pause.as_ref().is_some_and(|q| q.id == p.id) || t.name == p.node)
                    .map_or_else(|| p.node.clone(), |t| t.key.clone()),
                id: p.id.clone(),
                value: p.question.clone().unwrap_or(Value::Null),
            })
            .collect();
        RunEnd::Interrupted { values, interrupts }
    }
}

impl<S: State, C> Drop for Adapter<S, C> {
    /// A run cut off before its end (a cancellation drops its stream) is stopped in a task of
    /// its own, recorded in [`Stopping`] until it has settled its checkpoint writes.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (Some(stream), Ok(rt)) = (self.stream.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let handle = rt.spawn(async move {
            let _ = stream.stop().await;
        });
        let thread = self.config.thread_id.clone().unwrap_or_default();
        let mut stopping = self.stopping.lock().unwrap_or_else(|p| p.into_inner());
        stopping.retain(|_, handles| {
            handles.retain(|h| !h.is_finished());
            !handles.is_empty()
        });
        stopping.entry(thread).or_default().push(handle);
    }
}

/// The error of a run whose `strict_resume` answers no waiting interrupt (LangGraph's).
const UNKNOWN_INTERRUPT: &str = "UnknownInterruptError";

/// A run with no input on a thread with nothing to go on from: LangGraph's `EmptyInputError`,
/// naming the state's `fields`.
fn empty_input(fields: &[String]) -> RunEnd {
    RunEnd::Error {
        error: "EmptyInputError".into(),
        message: format!("Received no input for {}", fields.join(", ")),
    }
}

/// A failed run's `(error, message)`.
pub(crate) fn error_kind(e: &Error) -> (String, String) {
    let kind = if let Some(kind) = e.node_error_kind() {
        kind
    } else if e.is_node_error() {
        "NodeError"
    } else if e.is_panic() {
        "NodePanic"
    } else if e.is_recursion_limit() {
        "GraphRecursionError"
    } else if e.is_invalid_update() {
        "InvalidUpdateError"
    } else if e.is_timeout() {
        "TimeoutError"
    } else if e.is_bad_resume() {
        "InvalidResume"
    } else {
        "RuntimeError"
    };
    let message = match (e.is_node_error(), std::error::Error::source(e)) {
        (true, Some(source)) => source.to_string(),
        _ => e.to_string(),
    };
    (kind.to_owned(), message)
}
