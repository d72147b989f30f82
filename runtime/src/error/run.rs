//! The run's `Error`: what it is made of, and what a caller can ask of it.

use super::kind::ErrorKind;
use crate::signal::{Interrupt, ParentCommand, Paused};
use std::fmt;
use std::sync::Arc;

/// A run failed.
///
/// Messages are short, lower-case and name what is at fault: the node, the step, the field.
/// Cheap to clone (the cause is shared), so a streamed run's last item and its outcome are the
/// same error, with the same predicates.
#[derive(Debug, Clone)]
pub struct Error {
    pub(super) kind: Arc<ErrorKind>,
    /// What failed next while the run was settled after this error (see [`Error::secondary`]).
    pub(super) secondary: Option<Box<Error>>,
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self {
            kind: Arc::new(kind),
            secondary: None,
        }
    }
}

/// What a caller asks of an error: what failed, where, and of which kind.
impl Error {
    /// The command a node sent to the parent graph, when this graph runs on its own (a subgraph
    /// takes it and goes on in its parent).
    pub fn parent_command(&self) -> Option<&ParentCommand> {
        match &*self.kind {
            ErrorKind::ToParent { command, .. } => Some(command),
            _ => None,
        }
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
    /// What failed after this error, while the run was being settled: its last checkpoint or
    /// the pending writes of its incomplete step could not be saved. The run's error stays the
    /// first failure (the node's), with this one attached.
    pub fn secondary(&self) -> Option<&Error> {
        self.secondary.as_deref()
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
    /// Whether a resume found no paused task to answer (the thread finished, or never paused).
    pub fn is_nothing_to_resume(&self) -> bool {
        matches!(*self.kind, ErrorKind::NothingToResume { .. })
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
    /// The kind of a node's error: the short name of the Rust type the node's `Result` failed
    /// with (`ValueError` for `my_app::ValueError`, generic arguments dropped), as a Python
    /// node's error shows its exception's class. `None` for other errors, and for a node error
    /// with no type of its own (a `Box<dyn Error>`, a `String`, a `&str`).
    pub fn node_error_kind(&self) -> Option<&'static str> {
        match &*self.kind {
            ErrorKind::Node { kind, .. } => *kind,
            _ => None,
        }
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
