//! The kinds of a run's error and their messages.

use crate::channel::UpdateError;
use crate::signal::{ParentCommand, Paused};
use std::borrow::Cow;
use std::fmt;

/// A boxed error from a user's node or router.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why the run could not go on, for a reason outside the graph.
#[derive(Debug)]
pub(super) enum RuntimeFailure {
    /// No tokio runtime to run on.
    NoTokio,
    /// The task running the run (a streamed run) ended without an outcome.
    Lost(String),
}

/// What went wrong, with what it takes to say so; its `Display` is the error's message.
#[derive(Debug)]
pub(super) enum ErrorKind {
    Node {
        node: String,
        step: i64,
        source: BoxError,
        /// The short name of the node's error type, when it has one of its own.
        kind: Option<&'static str>,
    },
    Panic {
        node: String,
        step: i64,
        message: String,
    },
    InvalidUpdate {
        field: Cow<'static, str>,
        nodes: Vec<String>,
        step: i64,
        source: UpdateError,
    },
    UndeclaredWrite {
        node: String,
        field: Cow<'static, str>,
        step: i64,
    },
    RecursionLimit {
        limit: usize,
    },
    Drained {
        step: i64,
    },
    Timeout {
        node: String,
        step: i64,
        limit: std::time::Duration,
    },
    UnknownTarget {
        node: String,
        target: String,
        step: i64,
    },
    EmptyInput,
    Config(String),
    Checkpoint {
        thread: String,
        message: String,
        /// The checkpointer's own error, when a checkpointer failed.
        source: Option<BoxError>,
    },
    Conflict {
        thread: String,
        source: BoxError,
    },
    Cache {
        node: String,
        step: i64,
        source: BoxError,
    },
    Runtime(RuntimeFailure),
    UnsavedSend {
        node: String,
    },
    NothingToResume {
        thread: String,
        id: Option<String>,
    },
    AmbiguousResume {
        thread: String,
        ids: Vec<String>,
    },
    Paused {
        pauses: Vec<Paused>,
    },
    ToParent {
        node: String,
        command: ParentCommand,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Node { node, step, source, .. } => write!(f, "node `{node}` failed at step {step}: {source}"),
            ErrorKind::Panic { node, step, message } => write!(f, "node `{node}` panicked at step {step}: {message}"),
            ErrorKind::InvalidUpdate { field, nodes, step, source } => {
                write!(f, "field `{field}` at step {step}: {source}")?;
                match nodes.as_slice() {
                    [] => Ok(()),
                    [a] => write!(f, " (written by node `{a}`)"),
                    [a, b] if a == b => write!(f, " (node `{a}` wrote it twice)"),
                    [a, b] => write!(f, " (written by nodes `{a}` and `{b}`)"),
                    _ => write!(f, " (written by nodes {})", nodes.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")),
                }
            }
            ErrorKind::UndeclaredWrite { node, field, step } => write!(
                f,
                "node `{node}` wrote field `{field}` at step {step}, which is not among the fields it declares in `writes(..)`"
            ),
            ErrorKind::RecursionLimit { limit } => write!(
                f,
                "recursion limit of {limit} steps reached without hitting a stop condition; raise it with `RunConfig::recursion_limit`"
            ),
            ErrorKind::Drained { step } => write!(f, "run drained before step {step}, as requested"),
            ErrorKind::Timeout { node, step, limit } => {
                write!(f, "node `{node}` timed out at step {step}: an attempt took longer than its limit of {limit:?}")
            }
            ErrorKind::UnknownTarget { node, target, step } => {
                write!(f, "router of node `{node}` at step {step} chose `{target}`, which is not one of its declared targets")
            }
            ErrorKind::EmptyInput => f.write_str("the input writes no field: nothing to run"),
            ErrorKind::Config(m) => f.write_str(m),
            ErrorKind::Checkpoint {
                thread,
                source: Some(source),
                ..
            } => write!(f, "checkpoint of thread `{thread}`: {source}"),
            ErrorKind::Checkpoint { thread, message, .. } => write!(f, "checkpoint of thread `{thread}`: {message}"),
            ErrorKind::Conflict { thread, source } => {
                write!(f, "thread `{thread}` was moved on by another run meanwhile: {source}")
            }
            ErrorKind::Cache { node, step, source } => {
                write!(f, "node cache of node `{node}` at step {step}: {source}")
            }
            ErrorKind::Runtime(RuntimeFailure::NoTokio) => f.write_str(
                "a graph runs on tokio: call `invoke`, `run`, `resume` or `stream` from within a tokio runtime (e.g. under `#[tokio::main]`)",
            ),
            ErrorKind::Runtime(RuntimeFailure::Lost(why)) => write!(f, "the run's task ended without an outcome: {why}"),
            ErrorKind::UnsavedSend { node } => write!(
                f,
                "a `Send` to node `{node}` is pending but cannot be saved in a checkpoint: add the node with `add_send_node`, whose input is serializable"
            ),
            ErrorKind::NothingToResume { thread, id: None } => {
                write!(f, "thread `{thread}` has no paused node to give an answer to")
            }
            ErrorKind::NothingToResume { thread, id: Some(id) } => {
                write!(f, "thread `{thread}` has no paused task `{id}` to give an answer to")
            }
            ErrorKind::ToParent { node, command } => write!(
                f,
                "node `{node}` sent a command to the parent graph (going to {:?}), but this graph runs on its own",
                command.goto
            ),
            ErrorKind::Paused { pauses } => write!(
                f,
                "the run paused at {}: resume the thread to go on",
                pauses.iter().map(|p| format!("`{}`", p.node)).collect::<Vec<_>>().join(", ")
            ),
            ErrorKind::AmbiguousResume { thread, ids } => write!(
                f,
                "thread `{thread}` has several paused tasks ({}): answer each by its id",
                ids.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}
