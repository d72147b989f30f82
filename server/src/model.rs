//! The objects of LangGraph's server API, as they cross the wire (`../shared/langgraph/server/README.md`
//! §1.3): assistants, threads, runs, and their statuses. These are plain serde structs shared by the
//! storage ([`crate::db`]), the run manager ([`crate::runs`]) and the HTTP handlers ([`crate::api`]);
//! they know nothing of graphs or of HTTP.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use weir_runtime::store::MAX_TTL_MINUTES;

/// A JSON object (metadata, config, context).
pub type Object = Map<String, Value>;

/// The deterministic id of a graph's system assistant: `uuid5(6ba7b821-9dad-11d1-80b4-00c04fd430c8,
/// graph_id)`, as LangGraph's server derives it (`langgraph_api/graph.py`; the namespace is its own,
/// one digit off RFC 4122's `NAMESPACE_URL`). `"chain"` gives `608f7b9c-04e5-5cf2-a3f7-ba75a3719808`,
/// as in the captures.
pub fn system_assistant_id(graph_id: &str) -> uuid::Uuid {
    const NAMESPACE_GRAPH: uuid::Uuid = uuid::uuid!("6ba7b821-9dad-11d1-80b4-00c04fd430c8");
    uuid::Uuid::new_v5(&NAMESPACE_GRAPH, graph_id.as_bytes())
}

/// The time now as the wire writes it: RFC 3339, UTC as `+00:00`, microseconds (the captures'
/// form). The one clock of the server's objects.
pub(crate) fn now() -> String {
    wire_time(weir_runtime::checkpoint::Timestamp::now())
}

/// `at` (an instant that displays as RFC 3339 in UTC, `Z`: the checkpointer's timestamps, jiff's)
/// as the wire writes timestamps, with `+00:00`.
pub(crate) fn wire_time(at: impl std::fmt::Display) -> String {
    let text = at.to_string();
    match text.strip_suffix('Z') {
        Some(stem) => format!("{stem}+00:00"),
        None => text,
    }
}

/// What happens to a thread whose time-to-live ran out (the `strategy` of LangGraph's thread
/// TTL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TtlStrategy {
    /// The thread goes whole: its row, its runs and its checkpoints.
    Delete,
    /// The thread stays with its latest checkpoint; the older ones are pruned.
    KeepLatest,
}

impl TtlStrategy {
    /// Its name on the wire and in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            TtlStrategy::Delete => "delete",
            TtlStrategy::KeepLatest => "keep_latest",
        }
    }

    /// The strategy named `name`, or an error saying which names there are.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "delete" => Ok(TtlStrategy::Delete),
            "keep_latest" => Ok(TtlStrategy::KeepLatest),
            other => Err(format!("`{other}` is not a TTL strategy: `delete` or `keep_latest`")),
        }
    }
}

/// A thread's time-to-live: once the thread has not changed (no run, no state update, no
/// metadata patch: its `updated_at`) for `minutes`, it goes by `strategy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadTtl {
    /// What happens then.
    pub strategy: TtlStrategy,
    /// How long the thread may stay unchanged, in minutes (positive).
    pub minutes: f64,
}

impl ThreadTtl {
    /// Reads the API's `ttl` body field as the SDKs send it: minutes (`60`), or `{"ttl": 60,
    /// "strategy": "delete"}` (strategy `delete` when absent). An error names the part of
    /// `field` at fault.
    pub fn from_json(value: &Value, field: &str) -> Result<Self, String> {
        let minutes = |v: &Value, at: &str| match v.as_f64() {
            Some(m) if m > 0.0 && m <= MAX_TTL_MINUTES => Ok(m),
            _ => Err(format!(
                "body field `{at}`: {v} is not a positive number of minutes up to {MAX_TTL_MINUTES}"
            )),
        };
        match value {
            Value::Object(o) => {
                if let Some(unknown) = o.keys().find(|k| !matches!(k.as_str(), "ttl" | "strategy")) {
                    return Err(format!(
                        "body field `{field}.{unknown}` is unknown: `ttl` and `strategy` are"
                    ));
                }
                let ttl = o
                    .get("ttl")
                    .ok_or_else(|| format!("body field `{field}.ttl` is missing: the minutes the thread lives"))?;
                let strategy = match o.get("strategy") {
                    None | Some(Value::Null) => TtlStrategy::Delete,
                    Some(Value::String(s)) => {
                        TtlStrategy::parse(s).map_err(|e| format!("body field `{field}.strategy`: {e}"))?
                    }
                    Some(other) => return Err(format!("body field `{field}.strategy`: {other} is not a string")),
                };
                Ok(ThreadTtl {
                    strategy,
                    minutes: minutes(ttl, &format!("{field}.ttl"))?,
                })
            }
            other => Ok(ThreadTtl {
                strategy: TtlStrategy::Delete,
                minutes: minutes(other, field)?,
            }),
        }
    }
}

/// An assistant: a graph with a configuration. One per served graph is made at start
/// (`metadata.created_by = "system"`), with the id [`system_assistant_id`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assistant {
    /// Its id (a UUID).
    pub assistant_id: String,
    /// The served graph it runs.
    pub graph_id: String,
    /// Its run configuration.
    pub config: Object,
    /// Its run context.
    pub context: Object,
    /// Its metadata.
    pub metadata: Object,
    /// Its name (the graph id for a system assistant).
    pub name: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// Its version, from 1.
    pub version: i64,
    /// Its description.
    pub description: Option<String>,
}

/// What a thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// No run is running, and the last one ended well (or none ran).
    Idle,
    /// A run is running.
    Busy,
    /// The last run paused for a person.
    Interrupted,
    /// The last run failed.
    Error,
}

/// A thread: one conversation, whose state lives in the checkpointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// Its id (a UUID, or what the client chose).
    pub thread_id: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When its row last changed (RFC 3339).
    pub updated_at: String,
    /// When its state last changed (RFC 3339).
    pub state_updated_at: String,
    /// Its metadata; the server copies `graph_id` and `assistant_id` into it on the first run.
    pub metadata: Object,
    /// What it is doing.
    pub status: ThreadStatus,
    /// Its configuration.
    pub config: Object,
    /// Its state's values after the last run (`null` before any).
    pub values: Value,
    /// The open interrupts, by task id: `{task_id: [{id, value}]}`.
    pub interrupts: Map<String, Value>,
    /// The last run's error, `null` when it did not fail.
    pub error: Value,
}

impl Thread {
    /// A new thread's row: idle, no values, made now.
    pub fn new(thread_id: String, metadata: Object) -> Self {
        let at = now();
        Thread {
            thread_id,
            created_at: at.clone(),
            updated_at: at.clone(),
            state_updated_at: at,
            metadata,
            status: ThreadStatus::Idle,
            config: Object::new(),
            values: Value::Null,
            interrupts: Map::new(),
            error: Value::Null,
        }
    }
}

/// What a run is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting in the queue.
    Pending,
    /// A worker runs it.
    Running,
    /// It failed.
    Error,
    /// It ended.
    Success,
    /// It ran out of time.
    Timeout,
    /// It paused for a person, or was cancelled with `action=interrupt`.
    Interrupted,
}

impl RunStatus {
    /// Whether the run has ended (no worker will run it again).
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

/// What to do with a new run when its thread already has one (LangGraph's "double texting").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MultitaskStrategy {
    /// Refuse the new run: 409.
    Reject,
    /// Stop the running run (it ends `interrupted`, its checkpoints stay), then run the new one.
    Interrupt,
    /// Stop the running run, delete it and its checkpoints, then run the new one.
    Rollback,
    /// Run the new one after the others (the default).
    #[default]
    Enqueue,
}

/// A run: one execution of an assistant's graph on a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its id (a UUID v7, so ids sort by creation).
    pub run_id: String,
    /// Its thread (a temporary one for a stateless run).
    pub thread_id: String,
    /// The assistant it runs.
    pub assistant_id: String,
    /// Its metadata.
    pub metadata: Object,
    /// What it is doing.
    pub status: RunStatus,
    /// How it was asked for: everything of the request that the worker needs (see [`RunKwargs`]).
    pub kwargs: RunKwargs,
    /// Its multitask strategy.
    pub multitask_strategy: MultitaskStrategy,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// The LangSmith project LangGraph's server traces the run to; weir traces with
    /// OpenTelemetry, so `None`: `null` on the wire, as from a LangGraph server without LangSmith.
    #[serde(default)]
    pub langsmith_session_name: Option<String>,
    /// When it may start (RFC 3339; `after_seconds` past its creation), `None` for at once. The
    /// queue keeps it in a column and claims no run before then; never on the wire.
    #[serde(skip)]
    pub not_before: Option<String>,
    /// How many times a worker has claimed it: the claim's token. A worker settles the run only
    /// while the run is running under the attempt it claimed (see [`crate::db::RunQueue::end_run`]),
    /// so a worker falsely declared dead cannot overwrite what the next one did. Never on the wire.
    #[serde(skip)]
    pub attempt: u32,
}

/// `true`, the default of a field that older stored runs lack.
fn yes() -> bool {
    true
}

/// A run's request, as LangGraph keeps it in `Run.kwargs`: what the worker runs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunKwargs {
    /// The input (`null` for a resume or a run on the current state).
    pub input: Value,
    /// A `Command` (`{resume, update, goto}`), `null` when none.
    pub command: Value,
    /// The configuration (`configurable`, `recursion_limit`, …).
    pub config: Object,
    /// The run context.
    pub context: Object,
    /// The stream modes asked for.
    pub stream_mode: Vec<String>,
    /// `"*"` or node names to pause before.
    pub interrupt_before: Value,
    /// `"*"` or node names to pause after.
    pub interrupt_after: Value,
    /// A URL to POST the run to when it ends.
    pub webhook: Value,
    /// Whether subgraph events are streamed.
    pub subgraphs: bool,
    /// Whether the stream is kept for `Last-Event-ID` replay.
    pub resumable: bool,
    /// `sync`, `async` or `exit`.
    pub durability: String,
    /// The request's `checkpoint_during` (`true` when absent), as LangGraph keeps it.
    #[serde(default = "yes")]
    pub checkpoint_during: bool,
    /// The request's `feedback_keys`, as given.
    #[serde(default)]
    pub feedback_keys: Value,
    /// Whether the run's thread is a temporary one it deletes when it ends (a stateless run
    /// with `on_completion: delete`).
    #[serde(default)]
    pub temporary: bool,
    /// The checkpoint to start from (`{checkpoint_id, …}`), `null` for the head.
    pub checkpoint: Value,
    /// For a stateless run: `delete` (the default) or `keep` the temporary thread afterwards.
    pub on_completion: Option<String>,
    /// The request's `strict_resume` (kept only when set).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict_resume: bool,
}

/// What a stateless run does with its temporary thread when it ends (`on_completion` of a run,
/// `on_run_completed` of a cron).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnCompletion {
    /// Delete the temporary thread after the run.
    #[default]
    Delete,
    /// Keep it.
    Keep,
}

/// A cron: a run made on a schedule, each time on its thread, or (a stateless cron, no
/// `thread_id`) on a new thread. The shape of LangGraph's `Cron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cron {
    /// Its id (a UUID v7).
    pub cron_id: String,
    /// The assistant its runs run.
    pub assistant_id: String,
    /// The thread its runs run on; `None` for a new thread each time.
    pub thread_id: Option<String>,
    /// Who made it (`""`: weir has no authentication).
    pub user_id: String,
    /// When it stops firing (RFC 3339), `None` for never.
    pub end_time: Option<String>,
    /// Its schedule ([`crate::cron::Schedule`]'s syntax).
    pub schedule: String,
    /// The IANA time zone its schedule reads the wall clock of; `None` for UTC.
    pub timezone: Option<String>,
    /// The body of the runs it makes (as `POST /threads/{id}/runs` takes it), with
    /// `config.configurable.cron_id`.
    pub payload: Object,
    /// When it fires next (RFC 3339, whole seconds), `None` when its schedule has no time left.
    pub next_run_date: Option<String>,
    /// Its metadata, which its runs' metadata starts from.
    pub metadata: Object,
    /// A stateless cron's `delete` (the default) or `keep` of each run's thread; `None` for a
    /// thread's cron.
    pub on_run_completed: Option<OnCompletion>,
    /// Whether it fires.
    pub enabled: bool,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
}

impl Cron {
    /// The time zone its schedule reads.
    ///
    /// # Errors
    /// When [`Cron::timezone`] is not a zone this system or weir's bundled database knows.
    pub fn zone(&self) -> Result<jiff::tz::TimeZone, String> {
        zone(self.timezone.as_deref())
    }

    /// When it fires next after `after`, in the wire's form; `None` when its schedule has no
    /// time left (or cannot be read: it was checked when stored).
    pub fn following(&self, after: jiff::Timestamp) -> Option<String> {
        let schedule = crate::cron::Schedule::parse(&self.schedule).ok()?;
        schedule.next_after(after, &self.zone().ok()?).map(wire_time)
    }
}

/// The zone of an IANA name, UTC for none.
///
/// # Errors
/// Names the zone nobody knows, with the form expected.
pub(crate) fn zone(name: Option<&str>) -> Result<jiff::tz::TimeZone, String> {
    match name {
        None => Ok(jiff::tz::TimeZone::UTC),
        Some(name) => jiff::tz::TimeZone::get(name)
            .map_err(|_| format!("`{name}` is not a time zone; use an IANA name, such as `America/New_York`")),
    }
}
