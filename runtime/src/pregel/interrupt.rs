//! Interrupts: a node pauses the run to ask a person, and gets the answer when the thread resumes.

use serde::{de::DeserializeOwned, Serialize};
use std::fmt;
use std::sync::Mutex;

/// Why [`Context::interrupt`](super::Context::interrupt) did not return an answer.
///
/// Propagate it with `?`: the run then stops with an [`Outcome::Interrupted`](super::Outcome)
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

/// What one task knows of its interrupts: the answers given so far, and the question it asked.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    inner: Mutex<ScratchInner>,
}

#[derive(Debug, Default)]
struct ScratchInner {
    /// Answers to this task's earlier interrupts, in order.
    answers: Vec<serde_json::Value>,
    /// How many interrupts this execution has reached.
    next: usize,
    /// The question asked, when the task paused.
    asked: Option<serde_json::Value>,
}

impl Scratch {
    pub(crate) fn with_answers(answers: Vec<serde_json::Value>) -> Self {
        Self {
            inner: Mutex::new(ScratchInner {
                answers,
                next: 0,
                asked: None,
            }),
        }
    }

    /// The question asked and the answers so far, when the task paused.
    pub(crate) fn paused(&self) -> Option<(serde_json::Value, Vec<serde_json::Value>)> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.asked.clone().map(|q| (q, inner.answers.clone()))
    }

    pub(crate) fn ask<Q: Serialize, A: DeserializeOwned>(&self, node: &str, question: Q) -> Result<A, Interrupt> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let index = inner.next;
        inner.next += 1;
        if let Some(answer) = inner.answers.get(index) {
            return serde_json::from_value(answer.clone()).map_err(|e| Interrupt {
                kind: InterruptKind::BadAnswer {
                    node: node.to_owned(),
                    expected: std::any::type_name::<A>(),
                    message: e.to_string(),
                },
            });
        }
        let q = serde_json::to_value(question).map_err(|e| Interrupt {
            kind: InterruptKind::Question(e.to_string()),
        })?;
        inner.asked = Some(q);
        Err(Interrupt {
            kind: InterruptKind::Asked,
        })
    }
}

pub(crate) fn no_checkpointer() -> Interrupt {
    Interrupt {
        kind: InterruptKind::NoCheckpointer,
    }
}

/// A pause of a run, as its caller sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    /// The node that paused.
    pub node: String,
    /// The pause's id, to answer it among several (the task's id, stable across re-executions).
    pub id: String,
    /// The question, as JSON; `None` for a static interrupt before or after the node.
    pub question: Option<serde_json::Value>,
    /// Which kind of pause.
    pub kind: PauseKind,
}

/// How a run paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseKind {
    /// The node called [`Context::interrupt`](super::Context::interrupt).
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
