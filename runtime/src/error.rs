//! The errors of building and running a graph: a leaf of the crate, naming the loop's types
//! (pauses, a parent command) only through [`crate::signal`], never the loop itself.

use crate::channel::UpdateError;
use crate::signal::{Interrupt, ParentCommand, Paused};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// A boxed error from a user's node or router.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A run failed.
///
/// Messages are short, lower-case and name what is at fault: the node, the step, the field.
/// Cheap to clone (the cause is shared), so a streamed run's last item and its outcome are the
/// same error, with the same predicates.
#[derive(Debug, Clone)]
pub struct Error {
    kind: Arc<ErrorKind>,
    /// What failed next while the run was settled after this error (see [`Error::secondary`]).
    secondary: Option<Box<Error>>,
}

/// Why the run could not go on, for a reason outside the graph.
#[derive(Debug)]
enum RuntimeFailure {
    /// No tokio runtime to run on.
    NoTokio,
    /// The task running the run (a streamed run) ended without an outcome.
    Lost(String),
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

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self {
            kind: Arc::new(kind),
            secondary: None,
        }
    }
}

impl Error {
    pub(crate) fn node(node: &str, step: i64, source: BoxError) -> Self {
        ErrorKind::Node {
            node: node.to_owned(),
            step,
            source,
        }
        .into()
    }
    pub(crate) fn panic(node: &str, step: i64, message: String) -> Self {
        ErrorKind::Panic {
            node: node.to_owned(),
            step,
            message,
        }
        .into()
    }
    pub(crate) fn invalid_update(field: Cow<'static, str>, nodes: Vec<String>, step: i64, source: UpdateError) -> Self {
        ErrorKind::InvalidUpdate {
            field,
            nodes,
            step,
            source,
        }
        .into()
    }
    pub(crate) fn undeclared_write(node: &str, field: Cow<'static, str>, step: i64) -> Self {
        ErrorKind::UndeclaredWrite {
            node: node.to_owned(),
            field,
            step,
        }
        .into()
    }
    pub(crate) fn recursion_limit(limit: usize) -> Self {
        ErrorKind::RecursionLimit { limit }.into()
    }
    pub(crate) fn drained(step: i64) -> Self {
        ErrorKind::Drained { step }.into()
    }
    pub(crate) fn timeout(node: &str, step: i64, limit: std::time::Duration) -> Self {
        ErrorKind::Timeout {
            node: node.to_owned(),
            step,
            limit,
        }
        .into()
    }
    pub(crate) fn unknown_target(node: &str, target: String, step: i64) -> Self {
        ErrorKind::UnknownTarget {
            node: node.to_owned(),
            target,
            step,
        }
        .into()
    }
    pub(crate) fn empty_input() -> Self {
        ErrorKind::EmptyInput.into()
    }
    pub(crate) fn config(message: impl Into<String>) -> Self {
        ErrorKind::Config(message.into()).into()
    }

    pub(crate) fn to_parent(node: &str, command: ParentCommand) -> Self {
        ErrorKind::ToParent {
            node: node.to_owned(),
            command,
        }
        .into()
    }
    /// The command a node sent to the parent graph, when this graph runs on its own (a subgraph
    /// takes it and goes on in its parent).
    pub fn parent_command(&self) -> Option<&ParentCommand> {
        match &*self.kind {
            ErrorKind::ToParent { command, .. } => Some(command),
            _ => None,
        }
    }
    pub(crate) fn paused(pauses: Vec<Paused>) -> Self {
        ErrorKind::Paused { pauses }.into()
    }
    /// Whether the run paused (see [`CompiledGraph::run`](crate::CompiledGraph::run) for the
    /// pause as an outcome rather than an error).
    pub fn is_paused(&self) -> bool {
        matches!(*self.kind, ErrorKind::Paused { .. })
    }
    /// The pauses, when the run paused.
    pub fn pauses(&self) -> &[Paused] {
        match &*self.kind {
            ErrorKind::Paused { pauses } => pauses,
            _ => &[],
        }
    }
    pub(crate) fn checkpoint(thread: &str, message: impl Into<String>) -> Self {
        ErrorKind::Checkpoint {
            thread: thread.to_owned(),
            message: message.into(),
            source: None,
        }
        .into()
    }
    /// The checkpointer failed on thread `thread` (`conflict`: another run moved the thread on).
    pub(crate) fn checkpointer(thread: &str, conflict: bool, source: BoxError) -> Self {
        let thread = thread.to_owned();
        if conflict {
            ErrorKind::Conflict { thread, source }.into()
        } else {
            ErrorKind::Checkpoint {
                thread,
                message: String::new(),
                source: Some(source),
            }
            .into()
        }
    }
    /// The node cache failed for a task of `node` at step `step`.
    pub(crate) fn cache(node: &str, step: i64, source: BoxError) -> Self {
        ErrorKind::Cache {
            node: node.to_owned(),
            step,
            source,
        }
        .into()
    }
    /// A run was started outside a tokio runtime, which runs the graph's tasks.
    pub(crate) fn no_runtime() -> Self {
        ErrorKind::Runtime(RuntimeFailure::NoTokio).into()
    }
    /// The task running a streamed run ended without its outcome (it panicked, or its runtime
    /// shut down).
    pub(crate) fn run_lost(why: String) -> Self {
        ErrorKind::Runtime(RuntimeFailure::Lost(why)).into()
    }
    /// This error, with `later` (what failed while the run was settled after it) attached as its
    /// [`secondary`](Self::secondary): the first failure stays the error.
    pub(crate) fn with_secondary(mut self, later: Error) -> Self {
        self.secondary = Some(Box::new(later));
        self
    }
    /// What failed after this error, while the run was being settled: its last checkpoint or
    /// the pending writes of its incomplete step could not be saved. The run's error stays the
    /// first failure (the node's), with this one attached.
    pub fn secondary(&self) -> Option<&Error> {
        self.secondary.as_deref()
    }
    pub(crate) fn unsaved_send(node: &str) -> Self {
        ErrorKind::UnsavedSend { node: node.to_owned() }.into()
    }
    pub(crate) fn nothing_to_resume(thread: &str, id: Option<&str>) -> Self {
        ErrorKind::NothingToResume {
            thread: thread.to_owned(),
            id: id.map(str::to_owned),
        }
        .into()
    }
    pub(crate) fn ambiguous_resume(thread: &str, ids: &[String]) -> Self {
        ErrorKind::AmbiguousResume {
            thread: thread.to_owned(),
            ids: ids.to_vec(),
        }
        .into()
    }

    /// The thread at fault, for errors of checkpoints and resumes.
    pub fn thread(&self) -> Option<&str> {
        match &*self.kind {
            ErrorKind::Checkpoint { thread, .. }
            | ErrorKind::Conflict { thread, .. }
            | ErrorKind::NothingToResume { thread, .. }
            | ErrorKind::AmbiguousResume { thread, .. } => Some(thread),
            _ => None,
        }
    }
    /// Whether another run moved the thread on meanwhile (two runs of one thread at once).
    pub fn is_conflict(&self) -> bool {
        matches!(*self.kind, ErrorKind::Conflict { .. })
    }
    /// Whether a checkpoint could not be read or written.
    pub fn is_checkpoint(&self) -> bool {
        matches!(*self.kind, ErrorKind::Checkpoint { .. } | ErrorKind::UnsavedSend { .. })
    }
    /// Whether a resume found no paused node to answer, could not tell which, or gave a node an
    /// answer of another type than the one it asked for (the node's error names the type).
    pub fn is_bad_resume(&self) -> bool {
        match &*self.kind {
            ErrorKind::NothingToResume { .. } | ErrorKind::AmbiguousResume { .. } => true,
            ErrorKind::Node { source, .. } => source.downcast_ref::<Interrupt>().is_some_and(Interrupt::is_bad_answer),
            _ => false,
        }
    }

    /// The node at fault, when a node failed, panicked, wrote what it may not, or routed nowhere.
    pub fn node_name(&self) -> Option<&str> {
        match &*self.kind {
            ErrorKind::Node { node, .. }
            | ErrorKind::Panic { node, .. }
            | ErrorKind::UndeclaredWrite { node, .. }
            | ErrorKind::Timeout { node, .. }
            | ErrorKind::UnknownTarget { node, .. }
            | ErrorKind::Cache { node, .. } => Some(node),
            ErrorKind::InvalidUpdate { nodes, .. } => nodes.first().map(String::as_str),
            _ => None,
        }
    }
    /// The step at which the run failed, where it applies.
    pub fn step(&self) -> Option<i64> {
        match &*self.kind {
            ErrorKind::Node { step, .. }
            | ErrorKind::Panic { step, .. }
            | ErrorKind::InvalidUpdate { step, .. }
            | ErrorKind::UndeclaredWrite { step, .. }
            | ErrorKind::UnknownTarget { step, .. }
            | ErrorKind::Timeout { step, .. }
            | ErrorKind::Cache { step, .. }
            | ErrorKind::Drained { step } => Some(*step),
            _ => None,
        }
    }
    /// The field at fault, for an invalid or undeclared write.
    pub fn field(&self) -> Option<&str> {
        match &*self.kind {
            ErrorKind::InvalidUpdate { field, .. } | ErrorKind::UndeclaredWrite { field, .. } => Some(field),
            _ => None,
        }
    }
    /// Whether a node returned an error.
    pub fn is_node_error(&self) -> bool {
        matches!(*self.kind, ErrorKind::Node { .. })
    }
    /// Whether a node panicked.
    pub fn is_panic(&self) -> bool {
        matches!(*self.kind, ErrorKind::Panic { .. })
    }
    /// Whether a step's writes broke a channel's rule (LangGraph's `InvalidUpdateError`).
    pub fn is_invalid_update(&self) -> bool {
        matches!(
            *self.kind,
            ErrorKind::InvalidUpdate { .. } | ErrorKind::UndeclaredWrite { .. }
        )
    }
    /// Whether the run hit its recursion limit (LangGraph's `GraphRecursionError`).
    pub fn is_recursion_limit(&self) -> bool {
        matches!(*self.kind, ErrorKind::RecursionLimit { .. })
    }
    /// Whether the run stopped between steps because a drain was requested.
    pub fn is_drained(&self) -> bool {
        matches!(*self.kind, ErrorKind::Drained { .. })
    }
    /// Whether a node took longer than its timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(*self.kind, ErrorKind::Timeout { .. })
    }
    /// Whether the input wrote nothing.
    pub fn is_empty_input(&self) -> bool {
        matches!(*self.kind, ErrorKind::EmptyInput)
    }
    /// Whether the node cache could not be read or written (the error names the node).
    pub fn is_cache(&self) -> bool {
        matches!(*self.kind, ErrorKind::Cache { .. })
    }
    /// Whether the run could not go on for a reason outside the graph: it was started outside a
    /// tokio runtime, or the task running it was lost.
    pub fn is_runtime(&self) -> bool {
        matches!(*self.kind, ErrorKind::Runtime(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.kind, f)?;
        match &self.secondary {
            Some(later) => write!(f, "; then, settling the run: {later}"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
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

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.kind {
            ErrorKind::Node { source, .. }
            | ErrorKind::Cache { source, .. }
            | ErrorKind::Conflict { source, .. }
            | ErrorKind::Checkpoint {
                source: Some(source), ..
            } => Some(&**source),
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
