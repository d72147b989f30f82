//! Making a run from a request body (RunCreateStateful, §1.3 of the server contract): the body's
//! shape ([`RunCreate`]), the checks (assistant, thread, stream modes, the graph's input), the
//! stored [`Run`], and the multitask strategy applied to the thread's runs already in flight.

use super::{non_null, now, Manager, RunError};
use crate::bus::{CancelAction, Publisher, StreamItem};
use crate::db::{Enqueued, IfExists, RunFate, ThreadUpdate};
use crate::graph::Mode;
use crate::model::{
    system_assistant_id, Assistant, MultitaskStrategy, Object, OnCompletion, Run, RunKwargs, RunStatus, Thread,
    ThreadStatus,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::time::Duration;
use weir_runtime::checkpoint::Timestamp;
use weir_runtime::Durability;

/// The text of LangGraph's 409 for `multitask_strategy: reject` (captured).
pub const REJECT_DETAIL: &str =
    "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.";

/// The text of LangGraph's 404 for an unknown thread or assistant (captured).
pub const NOT_FOUND_DETAIL: &str = "Thread or assistant not found.";

/// The body of `POST /threads/{tid}/runs[/wait|/stream]` and `POST /runs[/wait|/stream]`. Fields
/// the server does not use (`langsmith_tracer`, …) are accepted and ignored; `feedback_keys`
/// is kept in the run's `kwargs`, as LangGraph's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunCreate {
    /// A UUID, or a graph name (its system assistant).
    pub assistant_id: String,
    /// The input (`null`: run on from the thread's state).
    pub input: Value,
    /// A `Command` (`{resume, update, goto}`).
    pub command: Value,
    /// The checkpoint to start from (`{checkpoint_id, …}`).
    pub checkpoint: Value,
    /// Shorthand for `checkpoint.checkpoint_id`.
    pub checkpoint_id: Option<String>,
    /// The run's metadata.
    pub metadata: Option<Object>,
    /// The run's configuration, over the assistant's.
    pub config: Option<Object>,
    /// The run's context, over the assistant's.
    pub context: Option<Object>,
    /// A URL to POST the run to when it ends (`http://` only).
    pub webhook: Value,
    /// `"*"` or node names to pause before.
    pub interrupt_before: Value,
    /// `"*"` or node names to pause after.
    pub interrupt_after: Value,
    /// One mode or a list (default `["values"]`).
    pub stream_mode: Option<StreamModes>,
    /// Whether subgraph events are streamed.
    pub stream_subgraphs: bool,
    /// Whether the stream carries `id:` lines and is kept for `Last-Event-ID` replay.
    pub stream_resumable: bool,
    /// What to do with the thread's runs in flight (default `enqueue`).
    pub multitask_strategy: MultitaskStrategy,
    /// What to do when the thread does not exist (default `reject`).
    pub if_not_exists: IfNotExists,
    /// How long after its creation the run may start (seconds, `>= 0`); it is queued at once,
    /// and no worker claims it before then.
    pub after_seconds: Option<f64>,
    /// `sync`, `async` (the default) or `exit`.
    pub durability: Option<String>,
    /// The older form of `durability` (deprecated by LangGraph, still sent by its clients):
    /// `false` is `exit` when `durability` is absent.
    pub checkpoint_during: Option<bool>,
    /// Kept in the run's `kwargs` (LangSmith feedback keys; weir has no LangSmith).
    pub feedback_keys: Value,
    /// What a client dropping `/runs/stream` does to the run (default `continue`).
    pub on_disconnect: OnDisconnect,
    /// For a stateless run: `delete` (the default) or `keep` its temporary thread.
    pub on_completion: Option<OnCompletion>,
    /// Whether a resume that answers no waiting interrupt fails the run (`UnknownInterruptError`)
    /// instead of being left unused.
    pub strict_resume: Option<bool>,
}

/// `stream_mode`: one mode or a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StreamModes {
    /// `"values"`.
    One(String),
    /// `["values", "updates"]`.
    Many(Vec<String>),
}

/// `if_not_exists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IfNotExists {
    /// 404 when the thread does not exist.
    #[default]
    Reject,
    /// Make the thread.
    Create,
}

/// `on_disconnect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// The run goes on.
    #[default]
    Continue,
    /// The run is cancelled (`action=interrupt`).
    Cancel,
}

impl RunCreate {
    /// The stream modes asked for, checked: an unknown name is refused naming `stream_mode`.
    fn modes(&self) -> Result<Vec<String>, RunError> {
        let names = match &self.stream_mode {
            None => vec!["values".to_owned()],
            Some(StreamModes::One(m)) => vec![m.clone()],
            Some(StreamModes::Many(ms)) => ms.clone(),
        };
        for name in &names {
            if Mode::parse(name).is_none() {
                return Err(RunError::Invalid(format!(
                    "body field `stream_mode`: unknown mode `{name}`; the modes are values, updates, custom, \
                     tasks, checkpoints, debug, messages-tuple, messages, events"
                )));
            }
        }
        Ok(names)
    }

    /// The `durability` asked for: `sync`, `async` or `exit`; when absent, `exit` if
    /// `checkpoint_during` is `false`, else `async` (as LangGraph's server decides it).
    fn durability_name(&self) -> &str {
        match (&self.durability, self.checkpoint_during) {
            (Some(d), _) => d,
            (None, Some(false)) => "exit",
            (None, _) => "async",
        }
    }

    /// [`durability_name`](Self::durability_name) checked.
    pub(super) fn durability(&self) -> Result<Durability, RunError> {
        let name = self.durability_name();
        parse_durability(name).ok_or_else(|| {
            RunError::Invalid(format!(
                "body field `durability`: expected sync, async or exit, got `{name}`"
            ))
        })
    }

    /// `after_seconds` checked: a number of seconds from 0 to [`MAX_DELAY_SECS`]; `None` (or 0)
    /// for at once.
    fn delay(&self) -> Result<Option<Duration>, RunError> {
        match self.after_seconds {
            None => Ok(None),
            Some(s) if (0.0..=MAX_DELAY_SECS).contains(&s) => Ok((s > 0.0).then(|| Duration::from_secs_f64(s))),
            Some(s) => {
                // 1e300 as itself, not as its 301 digits.
                let shown = if s.abs() < 1e16 {
                    s.to_string()
                } else {
                    format!("{s:e}")
                };
                Err(RunError::Invalid(format!(
                    "body field `after_seconds`: expected a number of seconds from 0 to {MAX_DELAY_SECS} (100 years), got {shown}"
                )))
            }
        }
    }

    /// `interrupt_before`/`after` checked: `null`, `"*"` or a list of node names.
    fn check_interrupts(&self) -> Result<(), RunError> {
        for (field, v) in [
            ("interrupt_before", &self.interrupt_before),
            ("interrupt_after", &self.interrupt_after),
        ] {
            let ok = match v {
                Value::Null => true,
                Value::String(s) => s == "*",
                Value::Array(items) => items.iter().all(Value::is_string),
                _ => false,
            };
            if !ok {
                return Err(RunError::Invalid(format!(
                    "body field `{field}`: expected \"*\" or a list of node names, got {v}"
                )));
            }
        }
        Ok(())
    }
}

/// LangGraph's 422 for an `assistant_id` that is neither a UUID nor a served graph's name.
fn invalid_assistant<'a>(id: &str, graphs: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = graphs.map(String::as_str).collect();
    format!(
        "Invalid assistant: '{id}'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: {}",
        names.join(", ")
    )
}

/// A run's stored `durability` as the runtime's; `None` for another word.
pub(super) fn parse_durability(word: &str) -> Option<Durability> {
    match word {
        "sync" => Some(Durability::Sync),
        "async" => Some(Durability::Async),
        "exit" => Some(Durability::Exit),
        _ => None,
    }
}

/// The longest `after_seconds`: 100 years (a start time stays a date every client can read).
const MAX_DELAY_SECS: f64 = 100.0 * 365.25 * 86_400.0;

/// The wire timestamp `delay` after `at` (itself a wire timestamp; now if it cannot be read).
fn later(at: &str, delay: Duration) -> String {
    let start = super::execute::parse_time(at).unwrap_or_else(Timestamp::now);
    let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
    crate::model::wire_time(Timestamp::from_unix_micros(start.unix_micros().saturating_add(micros)))
}

/// What [`Manager::check`] found in a run's body.
pub(super) struct Checked {
    /// The stream modes.
    pub(super) modes: Vec<String>,
    /// How long the run waits before it may start.
    pub(super) delay: Option<Duration>,
    /// Its assistant.
    pub(super) assistant: Assistant,
}

/// `a` with `b`'s pairs over it.
pub(super) fn merged(a: &Object, b: Option<&Object>) -> Object {
    let mut out = a.clone();
    if let Some(b) = b {
        out.extend(b.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    out
}

impl Manager {
    /// Makes a run on `thread_id` (a stateless run, on a temporary thread, when `None`): checks
    /// the body, stores the run, applies its multitask strategy and wakes a worker, or starts
    /// it here when a slot is free and its thread has nothing in flight. The run is answered
    /// `pending`, as LangGraph answers every new run.
    pub async fn create(&self, thread_id: Option<&str>, body: RunCreate) -> Result<Run, RunError> {
        let Checked {
            modes,
            delay,
            assistant,
        } = self.check(&body).await?;
        let thread = self.thread_for(thread_id, &body).await?;
        let mut run = build_run(&assistant, &thread, &body, modes, thread_id.is_none());
        if let Some(delay) = delay {
            // As LangGraph's: a delayed run's `created_at` is when it may start.
            let at = later(&run.created_at, delay);
            run.created_at.clone_from(&at);
            run.not_before = Some(at);
        }
        // The thread busy in the run's own transaction: marked after, it could overwrite the row
        // a worker (of any process: they also poll) had already settled with the run's values.
        let mut busy = Object::new();
        busy.insert("graph_id".into(), json!(assistant.graph_id));
        busy.insert("assistant_id".into(), json!(assistant.assistant_id));
        // With a slot free here, a run that can start at once is claimed as it is stored: no
        // wake, no claim, no trip through the queue.
        let slot = self.free_slot();
        let claim = slot.as_ref().map(|_| self.inner.worker_id.as_str());
        let bound = Some(self.inner.config.max_queued_runs);
        match self.inner.queue.enqueue(&run, Some(&busy), claim, bound).await? {
            Enqueued::NoThread => return Err(RunError::NotFound(NOT_FOUND_DETAIL.to_owned())),
            Enqueued::Rejected => return Err(RunError::Conflict(REJECT_DETAIL.to_owned())),
            Enqueued::Full { ahead } => return Err(RunError::Full(full_detail(&run.thread_id, ahead))),
            Enqueued::Claimed(claimed) => {
                if let Some(slot) = slot {
                    self.spawn_run(*claimed, slot).await;
                }
                if thread_id.is_some() {
                    self.announce(&run).await;
                }
                return Ok(run);
            }
            Enqueued::Queued { inflight } => {
                drop(slot);
                self.apply_strategy(run.multitask_strategy, &inflight).await?;
            }
        }
        // The run is stored: a wake that fails only delays it until a worker polls (each
        // does, every `ManagerConfig::poll`), so the client still gets its run. A stateless
        // run's thread is its own: nobody watches it.
        let announce = async {
            if thread_id.is_some() {
                self.announce(&run).await;
            }
        };
        let (woken, ()) = futures::join!(self.inner.bus.wake(), announce);
        if let Err(e) = woken {
            tracing::warn!(run_id = %run.run_id, error = %e, "no worker was woken for a queued run; a worker's poll will find it");
        }
        Ok(run)
    }

    /// Makes several runs in the background (`POST /runs/batch`): each on its thread, or stateless
    /// (`None`). Every body is checked before any run is made, so a batch with a bad body makes
    /// none; a run refused as it is made (its thread gone, its `reject` strategy) stops the batch
    /// there, the runs before it made. Errors name the item (`body item [2]: …`).
    ///
    /// # Errors
    /// As [`Manager::create`]'s, for the first item that fails.
    pub async fn create_batch(&self, items: Vec<(Option<String>, RunCreate)>) -> Result<Vec<Run>, RunError> {
        let at = |i: usize| move |e: RunError| e.prefixed(&format!("body item [{i}]: "));
        for (i, (_, body)) in items.iter().enumerate() {
            self.check(body).await.map_err(at(i))?;
        }
        let mut made = Vec::with_capacity(items.len());
        for (i, (thread_id, body)) in items.into_iter().enumerate() {
            made.push(self.create(thread_id.as_deref(), body).await.map_err(at(i))?);
        }
        Ok(made)
    }

    /// The checks of a run's body that need no thread: its fields, its assistant, and its input
    /// and context against the assistant's graph. A cron's body is checked so when it is made.
    pub(super) async fn check(&self, body: &RunCreate) -> Result<Checked, RunError> {
        let modes = body.modes()?;
        body.check_interrupts()?;
        body.durability()?;
        let delay = body.delay()?;
        let assistant = self.assistant(&body.assistant_id).await?;
        let graph = self.graph(&assistant.graph_id)?;
        graph.check_input(non_null(&body.input), non_null(&body.command))?;
        graph.check_context(&merged(&assistant.context, body.context.as_ref()))?;
        Ok(Checked {
            modes,
            delay,
            assistant,
        })
    }

    /// The assistant named by `id`: a UUID, or a graph name standing for its system assistant.
    async fn assistant(&self, id: &str) -> Result<Assistant, RunError> {
        if id.is_empty() {
            return Err(RunError::Invalid("body field `assistant_id`: missing".to_owned()));
        }
        let uuid = match uuid::Uuid::parse_str(id) {
            Ok(u) => u.to_string(),
            Err(_) if self.inner.graphs.contains_key(id) => system_assistant_id(id).to_string(),
            Err(_) => return Err(RunError::Invalid(invalid_assistant(id, self.inner.graphs.keys()))),
        };
        let found = self.inner.catalog.get_assistant(&uuid).await?;
        found.ok_or_else(|| RunError::NotFound(NOT_FOUND_DETAIL.to_owned()))
    }

    /// The run's thread without its values: the named one (made when `if_not_exists: create`),
    /// or a new temporary one.
    async fn thread_for(&self, thread_id: Option<&str>, body: &RunCreate) -> Result<Thread, RunError> {
        let catalog = &self.inner.catalog;
        if let Some(tid) = thread_id {
            // Its metadata and id are all a run takes from it.
            if let Some(t) = catalog.get_thread_without_values(tid).await? {
                return Ok(t);
            }
            if body.if_not_exists == IfNotExists::Reject {
                return Err(RunError::NotFound(NOT_FOUND_DETAIL.to_owned()));
            }
        }
        let tid = thread_id.map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned);
        let made = catalog
            .create_thread(&Thread::new(tid, Object::new()), IfExists::DoNothing)
            .await?;
        if let Some(ttl) = self.inner.config.thread_ttl {
            catalog.set_thread_ttl(&made.thread_id, Some(ttl)).await?;
        }
        Ok(made)
    }

    /// Stops the runs ahead of a new one, per its strategy (`enqueue` and `reject` leave them).
    async fn apply_strategy(&self, strategy: MultitaskStrategy, inflight: &[Run]) -> Result<(), RunError> {
        let action = match strategy {
            MultitaskStrategy::Interrupt => CancelAction::Interrupt,
            MultitaskStrategy::Rollback => CancelAction::Rollback,
            MultitaskStrategy::Enqueue | MultitaskStrategy::Reject => return Ok(()),
        };
        for run in inflight {
            self.cancel_run(run, action).await?;
        }
        Ok(())
    }

    /// Cancels `run` wherever it is: a running run through the bus (its worker stops it), a
    /// pending one here (it never starts; its stream is closed).
    pub(super) async fn cancel_run(&self, run: &Run, action: CancelAction) -> Result<(), RunError> {
        let inner = &self.inner;
        // Through the bus in both cases: a pending run may be claimed between our read and now.
        inner.bus.cancel(&run.run_id, action).await?;
        if run.status == RunStatus::Pending {
            let fate = match action {
                CancelAction::Interrupt => RunFate::Status(RunStatus::Interrupted),
                CancelAction::Rollback => RunFate::Deleted,
            };
            // Only while it is still pending, and its thread idle unless another of its runs
            // waits, in one transaction; a worker that claimed it meanwhile heard the cancel.
            let idle = ThreadUpdate::status(ThreadStatus::Idle, None);
            if inner.queue.end_run(run, fate, &idle).await? {
                inner
                    .bus
                    .publish(&run.run_id, Publisher::Server, StreamItem::Done)
                    .await?;
            }
        }
        Ok(())
    }
}

/// The 429's detail for a run refused because its thread's queue is full.
fn full_detail(thread_id: &str, ahead: usize) -> String {
    format!(
        "thread `{thread_id}` has {ahead} runs pending or running, as many as a thread may queue \
         (max_queued_runs); wait for some to end, cancel some, or use another multitask_strategy"
    )
}

/// The stored run: metadata and configuration as LangGraph records them (the assistant's, the
/// thread's and the request's, with `graph_id`, `assistant_id`, `run_id` and `thread_id`).
fn build_run(assistant: &Assistant, thread: &Thread, body: &RunCreate, modes: Vec<String>, stateless: bool) -> Run {
    let run_id = uuid::Uuid::now_v7().to_string();
    let mut metadata = merged(
        &merged(&assistant.metadata, Some(&thread.metadata)),
        body.metadata.as_ref(),
    );
    metadata.insert("graph_id".into(), json!(assistant.graph_id));
    metadata.insert("assistant_id".into(), json!(assistant.assistant_id));
    let mut config = merged(&assistant.config, body.config.as_ref());
    let mut configurable = match config.get("configurable") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    for (k, v) in [
        ("run_id", &run_id),
        ("thread_id", &thread.thread_id),
        ("graph_id", &assistant.graph_id),
        ("assistant_id", &assistant.assistant_id),
    ] {
        configurable.insert(k.into(), json!(v));
    }
    config.insert("configurable".into(), Value::Object(configurable));
    let checkpoint = match (&body.checkpoint, &body.checkpoint_id) {
        (Value::Null, Some(id)) => json!({ "checkpoint_id": id }),
        (c, _) => c.clone(),
    };
    let at = now();
    Run {
        run_id,
        thread_id: thread.thread_id.clone(),
        assistant_id: assistant.assistant_id.clone(),
        metadata,
        status: RunStatus::Pending,
        kwargs: RunKwargs {
            input: body.input.clone(),
            command: body.command.clone(),
            config,
            context: merged(&assistant.context, body.context.as_ref()),
            stream_mode: modes,
            interrupt_before: body.interrupt_before.clone(),
            interrupt_after: body.interrupt_after.clone(),
            webhook: body.webhook.clone(),
            subgraphs: body.stream_subgraphs,
            resumable: body.stream_resumable,
            durability: body.durability_name().to_owned(),
            checkpoint_during: body.checkpoint_during.unwrap_or(true),
            feedback_keys: body.feedback_keys.clone(),
            temporary: stateless && body.on_completion.unwrap_or_default() == OnCompletion::Delete,
            checkpoint,
            on_completion: stateless.then(|| {
                match body.on_completion.unwrap_or_default() {
                    OnCompletion::Delete => "delete",
                    OnCompletion::Keep => "keep",
                }
                .to_owned()
            }),
            strict_resume: body.strict_resume.unwrap_or(false),
        },
        multitask_strategy: body.multitask_strategy,
        created_at: at.clone(),
        updated_at: at,
        langsmith_session_name: None,
        not_before: None,
        attempt: 0,
    }
}
