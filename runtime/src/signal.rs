//! What a node signals to its run besides an update, as leaf types the errors can name without
//! knowing the loop: the pause of [`Context::interrupt`](crate::Context::interrupt)
//! ([`Interrupt`]), a pause as the run's caller sees it ([`Paused`]), and a command for the parent
//! graph ([`ParentCommand`]).

use serde::de::DeserializeOwned;
use std::fmt;

/// Why [`Context::interrupt`](crate::Context::interrupt) did not return an answer.
///
/// Propagate it with `?`: the run then stops with an [`Outcome::Paused`](crate::Outcome::Paused)
/// carrying the question, and resuming the thread runs the node again from the top, this time with
/// the answer.
#[derive(Debug)]
pub struct Interrupt {
    kind: InterruptKind,
}

#[derive(Debug)]
enum InterruptKind {
    Asked,
    NoCheckpointer,
    Question(String),
    BadAnswer {
        node: String,
        expected: &'static str,
        message: String,
    },
}

impl Interrupt {
    /// Whether this is the pause itself (and not an error about the question or the answer).
    pub fn is_pause(&self) -> bool {
        matches!(self.kind, InterruptKind::Asked)
    }

    /// Whether the answer given to the node is not of the type it asked for.
    pub fn is_bad_answer(&self) -> bool {
        matches!(self.kind, InterruptKind::BadAnswer { .. })
    }
}

impl fmt::Display for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            InterruptKind::Asked => f.write_str("the node is waiting for an answer (resume the thread with one)"),
            InterruptKind::NoCheckpointer => {
                f.write_str("`interrupt` needs a checkpointer to pause the run: compile the graph with one")
            }
            InterruptKind::Question(m) => write!(f, "the interrupt's question cannot be saved: {m}"),
            InterruptKind::BadAnswer {
                node,
                expected,
                message,
            } => {
                write!(f, "the answer given to node `{node}` is not a `{expected}`: {message}")
            }
        }
    }
}

impl std::error::Error for Interrupt {}

impl Interrupt {
    /// The pause itself: the node asked and waits for an answer.
    pub(crate) fn asked() -> Self {
        Self {
            kind: InterruptKind::Asked,
        }
    }
    /// The question could not be serialized.
    pub(crate) fn question(message: String) -> Self {
        Self {
            kind: InterruptKind::Question(message),
        }
    }
    /// The answer given to `node` is not an `expected`.
    pub(crate) fn bad_answer(node: &str, expected: &'static str, message: String) -> Self {
        Self {
            kind: InterruptKind::BadAnswer {
                node: node.to_owned(),
                expected,
                message,
            },
        }
    }
    /// The graph has no checkpointer to pause with.
    pub(crate) fn no_checkpointer() -> Self {
        Self {
            kind: InterruptKind::NoCheckpointer,
        }
    }
}

/// A pause of a run, as its caller sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    /// The node that paused.
    pub node: String,
    /// The pause's id, to answer it among several (`CompiledGraph::resume_map`): 32 hex digits
    /// (as LangGraph's interrupt ids look), the same for every pause of one task in one step
    /// however often the task runs again, and another for the same node in another step or
    /// subgraph, so that an answer meant for an earlier question is refused. The task's own id
    /// (`pull:<node>`, `push:<index>`, see [`TaskSnapshot::id`](crate::TaskSnapshot::id)) is
    /// accepted too.
    pub id: String,
    /// The question, as JSON; `None` for a static interrupt before or after the node.
    pub question: Option<serde_json::Value>,
    /// Which kind of pause.
    pub kind: PauseKind,
}

/// How a run paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseKind {
    /// The node called [`Context::interrupt`](crate::Context::interrupt).
    Interrupt,
    /// A static interrupt before the node.
    Before,
    /// A static interrupt after the node.
    After,
}

impl Paused {
    /// The question, decoded as `Q`.
    ///
    /// # Errors
    /// When there is no question (a static interrupt) or it is not a `Q`.
    pub fn question<Q: DeserializeOwned>(&self) -> Result<Q, serde_json::Error> {
        use serde::de::Error as _;
        match &self.question {
            Some(q) => serde_json::from_value(q.clone()),
            None => Err(serde_json::Error::custom("a static interrupt has no question")),
        }
    }
}

/// What a subgraph's node asks of its parent graph: an update of the parent's state (as JSON, in
/// the shape of the parent's update type) and the parent's nodes to go to.
#[derive(Debug, Clone, PartialEq)]
pub struct ParentCommand {
    /// The parent's update, serialized.
    pub update: serde_json::Value,
    /// The parent's nodes to run next, by name.
    pub goto: Vec<String>,
}
