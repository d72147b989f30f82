//! The JSON bridge between the server and a graph: [`ServedGraph`], what the server asks of every
//! graph it serves — run it from JSON and stream LangGraph-shaped events, read and edit its threads'
//! state, draw it, describe its JSON Schemas. A typed [`CompiledGraph`](weir_runtime::CompiledGraph)
//! whose state is serde + schemars gets it from [`typed`], a JSON flow from [`flow`], an
//! entrypoint (`weir_runtime::func::Func`) from `func`. Nothing here
//! knows HTTP, the run queue or the metadata tables; the bridge owns the conversion of weir's
//! events, snapshots and errors into LangGraph's wire shapes (§1.3, §1.4 of the server contract).

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

mod bridge;
mod chain;
mod codec;
mod draw;
mod events;
pub mod flow;
mod func;
mod messages;
mod run;
mod state;
pub mod typed;

pub use codec::Codec;
pub use typed::Serve;

/// One stream mode a client can ask for, by its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// `values`: the whole state after each step.
    Values,
    /// `updates`: each node's update.
    Updates,
    /// `custom`: what nodes emitted.
    Custom,
    /// `tasks`: each task's start and result.
    Tasks,
    /// `checkpoints`: each checkpoint written.
    Checkpoints,
    /// `debug`: checkpoints and tasks, wrapped with step, timestamp and type.
    Debug,
    /// `messages-tuple`: chat-model tokens as `[chunk, metadata]` (the chunks nodes emit with
    /// `Context::emit_message`, as weir-agent's model calls do).
    MessagesTuple,
    /// `messages`: the legacy message events.
    Messages,
    /// `events`: LangChain `astream_events` v2.
    Events,
    /// `tools`: each tool call's start and end, as the agent layer's tool node reports them
    /// (LangGraph's `tools` mode; the thread-centric streaming protocol's `tools` channel).
    Tools,
}

impl Mode {
    /// The mode named `name` on the wire (`"messages-tuple"`, …), `None` for an unknown name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "values" => Mode::Values,
            "updates" => Mode::Updates,
            "custom" => Mode::Custom,
            "tasks" => Mode::Tasks,
            "checkpoints" => Mode::Checkpoints,
            "debug" => Mode::Debug,
            "messages-tuple" => Mode::MessagesTuple,
            "messages" => Mode::Messages,
            "events" => Mode::Events,
            "tools" => Mode::Tools,
            _ => return None,
        })
    }
}

/// One run of a graph on a thread, as the worker asks for it.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The thread (the checkpointer's thread id).
    pub thread_id: String,
    /// The run's id, recorded in the checkpoints' metadata.
    pub run_id: String,
    /// The input; `None` (or JSON `null`) runs on from the thread's state.
    pub input: Option<Value>,
    /// A LangGraph `Command` object (`{resume, update, goto}`), as the client sent it.
    pub command: Option<Value>,
    /// The checkpoint to start from, `None` for the thread's head.
    pub checkpoint_id: Option<String>,
    /// The modes to produce [`RunEvent::Stream`] events for.
    pub modes: Vec<Mode>,
    /// Whether subgraphs' events are streamed too (with a `|<ns>` suffix on the event name).
    pub subgraphs: bool,
    /// Nodes to pause before (`["*"]`: every node).
    pub interrupt_before: Vec<String>,
    /// Nodes to pause after (`["*"]`: every node).
    pub interrupt_after: Vec<String>,
    /// The run's `config` object (`recursion_limit`, `configurable`, …).
    pub config: Map<String, Value>,
    /// The run's `context` object.
    pub context: Map<String, Value>,
    /// Extra metadata for the checkpoints (`graph_id`, `assistant_id`, the run's own): every
    /// pair, of any JSON value, is recorded in every checkpoint of the run, with `run_id`, and
    /// shown in the ThreadState's `metadata` (where `history`'s metadata filter finds them).
    pub metadata: Map<String, Value>,
    /// When the run writes its checkpoints (LangGraph's `durability`; default `async`).
    pub durability: weir_runtime::Durability,
    /// LangGraph's `strict_resume`: a resume that answers no waiting interrupt (ids not pending,
    /// an empty map, one answer for several) fails the run with `UnknownInterruptError` and
    /// changes nothing, where by default such answers are left unused.
    pub strict_resume: bool,
}

/// What a running graph reports. A run's stream ends with exactly one [`RunEvent::End`].
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// One SSE event: its name with the namespace suffix (`values`, `updates|inner:<task id>`)
    /// and its data, shaped as LangGraph's server sends them.
    Stream {
        /// The SSE event name.
        event: String,
        /// Its data.
        data: Value,
    },
    /// How the run ended.
    End(RunEnd),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// It reached the end; the final values.
    Success {
        /// The state's values.
        values: Value,
    },
    /// It paused for a person.
    Interrupted {
        /// The state's values.
        values: Value,
        /// The open interrupts.
        interrupts: Vec<InterruptView>,
    },
    /// It failed. `error` is the kind (`"ValueError"`-like: the error's kind name), `message`
    /// the text: the `{"error", "message"}` of the `error` SSE event and of `__error__`.
    Error {
        /// The kind.
        error: String,
        /// The message.
        message: String,
    },
}

/// One open interrupt.
#[derive(Debug, Clone, PartialEq)]
pub struct InterruptView {
    /// The task that paused (the key of `Thread.interrupts`).
    pub task_id: String,
    /// The interrupt's id (32 hex digits).
    pub id: String,
    /// The question (`null` for a static interrupt).
    pub value: Value,
}

/// A paused run's values with its interrupts, as `runs/wait`, `join` and the `values` stream
/// answer them: `{..values, "__interrupt__": interrupts}` for a state object, and for the values
/// of a functional graph (the entrypoint's return value, `null` before it first returns),
/// `{"__interrupt__": interrupts}` alone, as LangGraph's `values` chunk of an interrupt is.
pub fn with_interrupts(values: Value, interrupts: Value) -> Value {
    let mut values = match values {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    values.insert("__interrupt__".into(), interrupts);
    Value::Object(values)
}

/// A thread's state at one checkpoint, as `GET /threads/{id}/state` returns it (ThreadState,
/// §1.3): `values, next, tasks, metadata, created_at, checkpoint, parent_checkpoint, interrupts,
/// checkpoint_id, parent_checkpoint_id`.
pub type ThreadState = Value;

/// Which checkpoints `history` lists.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    /// At most this many (newest first).
    pub limit: usize,
    /// Only those older than this checkpoint.
    pub before: Option<String>,
    /// Only those whose metadata contains these pairs.
    pub metadata: Option<Map<String, Value>>,
    /// Start from this checkpoint instead of the head.
    pub checkpoint_id: Option<String>,
}

/// A thread's head checkpoint, briefly ([`ServedGraph::head`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// Its id.
    pub checkpoint_id: String,
    /// When it was written.
    pub created_at: weir_runtime::checkpoint::Timestamp,
    /// The run that wrote it (its metadata's `run_id`), if a run did.
    pub run_id: Option<String>,
}

/// An edit of a thread's state (`POST /threads/{id}/state`).
#[derive(Debug, Clone, Default)]
pub struct StateUpdate {
    /// The update, as an object of fields; `None` (or `null`) for an edit that writes nothing.
    pub values: Option<Value>,
    /// The node the update is made as; `None` lets the graph choose as LangGraph does.
    pub as_node: Option<String>,
    /// The checkpoint to edit, `None` for the head.
    pub checkpoint_id: Option<String>,
    /// Pairs recorded in the metadata of the checkpoint the edit writes (the server's
    /// `graph_id`, as LangGraph's server records it).
    pub metadata: BTreeMap<String, String>,
}

/// The JSON Schemas of `/assistants/{id}/schemas` (without `graph_id`, which the server adds).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schemas {
    /// The input's schema.
    pub input: Value,
    /// The output's schema.
    pub output: Value,
    /// The state's schema.
    pub state: Value,
    /// The `config` object's schema (`null` when the graph has none).
    pub config: Value,
    /// The `context` object's schema (`null` when the graph has none).
    pub context: Value,
}

/// Why the bridge refused or failed a request. The API maps each kind to its status code.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphError {
    /// Bad input from the client (422): the message names the JSON path at fault.
    Invalid(String),
    /// No such thread or checkpoint (404).
    NotFound(String),
    /// The request conflicts with the thread's state (409), e.g. a resume with nothing paused.
    Conflict(String),
    /// The checkpointer or the runtime failed (500).
    Internal(String),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::Invalid(m) | GraphError::NotFound(m) | GraphError::Conflict(m) | GraphError::Internal(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for GraphError {}

/// What the server asks of a graph it serves. Object-safe: the server keeps `Arc<dyn ServedGraph>`
/// by graph id. Every thread method works on the checkpointer the graph was given when served.
pub trait ServedGraph: Send + Sync + 'static {
    /// Nodes and edges in the shape of `GET /assistants/{id}/graph`; `xray` is how many levels
    /// of subgraphs to draw inside their nodes (0: none).
    fn drawing(&self, xray: u32) -> Value;

    /// The graph's JSON Schemas.
    fn schemas(&self) -> Schemas;

    /// Its subgraphs' schemas by namespace (`GET /assistants/{id}/subgraphs`), only those under
    /// `namespace` when given, and their own subgraphs too when `recurse`.
    fn subgraphs(&self, namespace: Option<&str>, recurse: bool) -> BTreeMap<String, Schemas>;

    /// Starts a run. Input or a command that does not fit the graph is refused before anything
    /// runs, with [`GraphError::Invalid`] naming the JSON path at fault (the API answers 422).
    /// Dropping the stream stops the run between two awaits; its checkpoints so far stay.
    fn run(&self, request: RunRequest) -> Result<BoxStream<'static, RunEvent>, GraphError>;

    /// Checks a run's input and command without running anything (the API refuses a bad one
    /// with 422 before the run is queued): [`GraphError::Invalid`] names the JSON path at fault.
    fn check_input(&self, input: Option<&Value>, command: Option<&Value>) -> Result<(), GraphError>;

    /// Checks a run's `context` object against the graph's context type without running
    /// anything (the API refuses a bad one with 422): [`GraphError::Invalid`] names the field.
    fn check_context(&self, _context: &Map<String, Value>) -> Result<(), GraphError> {
        Ok(())
    }

    /// The thread's head checkpoint as a run starting on it needs it (which one it is, when it
    /// was made, by which run): one row read, nothing decoded; `None` when the thread has no
    /// checkpoint.
    fn head<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Head>, GraphError>>;

    /// The thread's state at `checkpoint_id` (its head when `None`); `None` when the thread has
    /// no checkpoint. With `subgraphs`, each task's `state` holds its subgraph's state.
    fn state<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
        subgraphs: bool,
    ) -> BoxFuture<'a, Result<Option<ThreadState>, GraphError>>;

    /// The thread's states, newest first, each with its parent link.
    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        query: &'a HistoryQuery,
    ) -> BoxFuture<'a, Result<Vec<ThreadState>, GraphError>>;

    /// One page of the thread's checkpoints for the studio's timeline, newest first: at most
    /// `limit` of those older than `before` (all when `None`), each with its links, metadata,
    /// time and the nodes whose writes it applied (`writes`), and none of its `values`, `next`
    /// or `tasks`. Reads the checkpoints' records only, never their channels.
    fn timeline<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Value>, GraphError>>;

    /// Edits the thread's state; returns the new checkpoint's id.
    fn update_state<'a>(&'a self, thread_id: &'a str, update: StateUpdate)
        -> BoxFuture<'a, Result<String, GraphError>>;

    /// Applies `updates` together, as the tasks of one step after the thread's head (a superstep
    /// of LangGraph's `bulk_update_state`, as a thread made with `supersteps` has them): one
    /// checkpoint, whose metadata has every update's `metadata` pairs; returns its id. An update
    /// as `__input__` stands alone. The updates' `checkpoint_id`s are not read.
    fn update_superstep<'a>(
        &'a self,
        thread_id: &'a str,
        updates: Vec<StateUpdate>,
    ) -> BoxFuture<'a, Result<String, GraphError>>;

    /// Copies every checkpoint of thread `from` to the new thread `to`.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), GraphError>>;

    /// Deletes the thread's checkpoints.
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), GraphError>>;

    /// Prunes the thread to its latest checkpoint (a `keep_latest` TTL ran out); how many
    /// checkpoints went.
    fn keep_latest<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<u64, GraphError>>;

    /// Deletes the checkpoints written after `checkpoint_id` (every checkpoint when `None`): a
    /// rolled-back run's.
    fn rollback<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), GraphError>>;
}
