//! The errors of building and running a graph.

use crate::channel::UpdateError;
use std::borrow::Cow;
use std::fmt;

/// A boxed error from a user's node or router.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A run failed.
///
/// Messages are short, lower-case and name what is at fault: the node, the step, the field.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    Node {
        node: String,
        step: i64,
        source: BoxError,
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
    },
    Conflict {
        thread: String,
        message: String,
    },
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
        pauses: Vec<crate::pregel::Paused>,
    },
    ToParent {
        node: String,
        command: crate::graph::ParentCommand,
    },
}

impl Error {
    pub(crate) fn node(node: &str, step: i64, source: BoxError) -> Self {
        Self {
            kind: ErrorKind::Node {
                node: node.to_owned(),
                step,
                source,
            },
        }
    }
    pub(crate) fn panic(node: &str, step: i64, message: String) -> Self {
        Self {
            kind: ErrorKind::Panic {
                node: node.to_owned(),
                step,
                message,
            },
        }
    }
    pub(crate) fn invalid_update(field: Cow<'static, str>, nodes: Vec<String>, step: i64, source: UpdateError) -> Self {
        Self {
            kind: ErrorKind::InvalidUpdate {
                field,
                nodes,
                step,
                source,
            },
        }
    }
    pub(crate) fn undeclared_write(node: &str, field: Cow<'static, str>, step: i64) -> Self {
        Self {
            kind: ErrorKind::UndeclaredWrite {
                node: node.to_owned(),
                field,
                step,
            },
        }
    }
    pub(crate) fn recursion_limit(limit: usize) -> Self {
        Self {
            kind: ErrorKind::RecursionLimit { limit },
        }
    }
    pub(crate) fn drained(step: i64) -> Self {
        Self {
            kind: ErrorKind::Drained { step },
        }
    }
    pub(crate) fn timeout(node: &str, step: i64, limit: std::time::Duration) -> Self {
        Self {
            kind: ErrorKind::Timeout {
                node: node.to_owned(),
                step,
                limit,
            },
        }
    }
    pub(crate) fn unknown_target(node: &str, target: String, step: i64) -> Self {
        Self {
            kind: ErrorKind::UnknownTarget {
                node: node.to_owned(),
                target,
                step,
            },
        }
    }
    pub(crate) fn empty_input() -> Self {
        Self {
            kind: ErrorKind::EmptyInput,
        }
    }
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Config(message.into()),
        }
    }

    pub(crate) fn to_parent(node: &str, command: crate::graph::ParentCommand) -> Self {
        Self {
            kind: ErrorKind::ToParent {
                node: node.to_owned(),
                command,
            },
        }
    }
    /// The command a node sent to the parent graph, when this graph runs on its own (a subgraph
    /// takes it and goes on in its parent).
    pub fn parent_command(&self) -> Option<&crate::graph::ParentCommand> {
        match &self.kind {
            ErrorKind::ToParent { command, .. } => Some(command),
            _ => None,
        }
    }
    pub(crate) fn paused(pauses: Vec<crate::pregel::Paused>) -> Self {
        Self {
            kind: ErrorKind::Paused { pauses },
        }
    }
    /// Whether the run paused (see [`CompiledGraph::run`](crate::CompiledGraph::run) for the
    /// pause as an outcome rather than an error).
    pub fn is_paused(&self) -> bool {
        matches!(self.kind, ErrorKind::Paused { .. })
    }
    /// The pauses, when the run paused.
    pub fn pauses(&self) -> &[crate::pregel::Paused] {
        match &self.kind {
            ErrorKind::Paused { pauses } => pauses,
            _ => &[],
        }
    }
    pub(crate) fn checkpoint(thread: &str, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Checkpoint {
                thread: thread.to_owned(),
                message: message.into(),
            },
        }
    }
    pub(crate) fn conflict(thread: &str, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Conflict {
                thread: thread.to_owned(),
                message: message.into(),
            },
        }
    }
    pub(crate) fn unsaved_send(node: &str) -> Self {
        Self {
            kind: ErrorKind::UnsavedSend { node: node.to_owned() },
        }
    }
    pub(crate) fn nothing_to_resume(thread: &str, id: Option<&str>) -> Self {
        Self {
            kind: ErrorKind::NothingToResume {
                thread: thread.to_owned(),
                id: id.map(str::to_owned),
            },
        }
    }
    pub(crate) fn ambiguous_resume(thread: &str, ids: &[String]) -> Self {
        Self {
            kind: ErrorKind::AmbiguousResume {
                thread: thread.to_owned(),
                ids: ids.to_vec(),
            },
        }
    }

    /// The thread at fault, for errors of checkpoints and resumes.
    pub fn thread(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::Checkpoint { thread, .. }
            | ErrorKind::Conflict { thread, .. }
            | ErrorKind::NothingToResume { thread, .. }
            | ErrorKind::AmbiguousResume { thread, .. } => Some(thread),
            _ => None,
        }
    }
    /// Whether another run moved the thread on meanwhile (two runs of one thread at once).
    pub fn is_conflict(&self) -> bool {
        matches!(self.kind, ErrorKind::Conflict { .. })
    }
    /// Whether a checkpoint could not be read or written.
    pub fn is_checkpoint(&self) -> bool {
        matches!(self.kind, ErrorKind::Checkpoint { .. } | ErrorKind::UnsavedSend { .. })
    }
    /// Whether a resume found no paused node to answer, could not tell which, or gave a node an
    /// answer of another type than the one it asked for (the node's error names the type).
    pub fn is_bad_resume(&self) -> bool {
        match &self.kind {
            ErrorKind::NothingToResume { .. } | ErrorKind::AmbiguousResume { .. } => true,
            ErrorKind::Node { source, .. } => source
                .downcast_ref::<crate::pregel::Interrupt>()
                .is_some_and(crate::pregel::Interrupt::is_bad_answer),
            _ => false,
        }
    }

    /// The node at fault, when a node failed, panicked, wrote what it may not, or routed nowhere.
    pub fn node_name(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::Node { node, .. }
            | ErrorKind::Panic { node, .. }
            | ErrorKind::UndeclaredWrite { node, .. }
            | ErrorKind::Timeout { node, .. }
            | ErrorKind::UnknownTarget { node, .. } => Some(node),
            ErrorKind::InvalidUpdate { nodes, .. } => nodes.first().map(String::as_str),
            _ => None,
        }
    }
    /// The step at which the run failed, where it applies.
    pub fn step(&self) -> Option<i64> {
        match &self.kind {
            ErrorKind::Node { step, .. }
            | ErrorKind::Panic { step, .. }
            | ErrorKind::InvalidUpdate { step, .. }
            | ErrorKind::UndeclaredWrite { step, .. }
            | ErrorKind::UnknownTarget { step, .. }
            | ErrorKind::Timeout { step, .. }
            | ErrorKind::Drained { step } => Some(*step),
            _ => None,
        }
    }
    /// The field at fault, for an invalid or undeclared write.
    pub fn field(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::InvalidUpdate { field, .. } | ErrorKind::UndeclaredWrite { field, .. } => Some(field),
            _ => None,
        }
    }
    /// Whether a node returned an error.
    pub fn is_node_error(&self) -> bool {
        matches!(self.kind, ErrorKind::Node { .. })
    }
    /// Whether a node panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, ErrorKind::Panic { .. })
    }
    /// Whether a step's writes broke a channel's rule (LangGraph's `InvalidUpdateError`).
    pub fn is_invalid_update(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::InvalidUpdate { .. } | ErrorKind::UndeclaredWrite { .. }
        )
    }
    /// Whether the run hit its recursion limit (LangGraph's `GraphRecursionError`).
    pub fn is_recursion_limit(&self) -> bool {
        matches!(self.kind, ErrorKind::RecursionLimit { .. })
    }
    /// Whether the run stopped between steps because a drain was requested.
    pub fn is_drained(&self) -> bool {
        matches!(self.kind, ErrorKind::Drained { .. })
    }
    /// Whether a node took longer than its timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, ErrorKind::Timeout { .. })
    }
    /// Whether the input wrote nothing.
    pub fn is_empty_input(&self) -> bool {
        matches!(self.kind, ErrorKind::EmptyInput)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Node { node, step, source } => write!(f, "node `{node}` failed at step {step}: {source}"),
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
            ErrorKind::Checkpoint { thread, message } => write!(f, "checkpoint of thread `{thread}`: {message}"),
            ErrorKind::Conflict { thread, message } => {
                write!(f, "thread `{thread}` was moved on by another run meanwhile: {message}")
            }
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

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Node { source, .. } => Some(&**source),
            ErrorKind::InvalidUpdate { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A graph could not be built: every problem found, each naming the node or edge at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    problems: Vec<String>,
}

impl BuildError {
    pub(crate) fn new(problems: Vec<String>) -> Self {
        Self { problems }
    }
    /// Each problem, as a sentence.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => f.write_str(one),
            many => {
                write!(f, "{} problems in the graph:", many.len())?;
                for p in many {
                    write!(f, "\n- {p}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BuildError {}
