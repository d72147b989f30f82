//! How the runtime makes each kind of `Error`: one constructor per kind, crate-private.

use super::kind::{BoxError, ErrorKind, RuntimeFailure};
use super::Error;
use crate::channel::UpdateError;
use crate::signal::{ParentCommand, Paused};
use std::borrow::Cow;

impl Error {
    pub(crate) fn node(node: &str, step: i64, source: BoxError) -> Self {
        let (source, kind) = super::typed::unwrap(source);
        ErrorKind::Node {
            node: node.to_owned(),
            step,
            source,
            kind,
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
    pub(crate) fn paused(pauses: Vec<Paused>) -> Self {
        ErrorKind::Paused { pauses }.into()
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
}
