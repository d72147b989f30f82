//! What a flow run reports: its events, the pauses of its `output` nodes, how it ended, and a
//! thread's checkpoints as snapshots.

use crate::node::{flow_node, Fields};
use crate::state::FlowState;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Something that happened during a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A node ran and wrote these fields.
    Node {
        /// The node's id.
        node: String,
        /// The step it ran in.
        step: i64,
        /// The fields it wrote.
        writes: Fields,
    },
    /// An `output` node's message.
    Message {
        /// The node's id.
        node: String,
        /// The step it ran in.
        step: i64,
        /// The rendered message.
        text: String,
        /// The choices offered with it, if any.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<ChoiceOption>,
    },
}

/// A choice an `output` node offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoiceOption {
    /// What to answer (the edges' `sourceHandle`).
    pub id: String,
    /// What to show.
    pub label: String,
}

/// A run stopped after an `output` node that asks a person to choose (or, with no choices, to
/// acknowledge its message): the node ran, its message is out, and the run waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pause {
    /// The node's id.
    pub node: String,
    /// The question: the node's rendered message, as it was sent.
    pub question: String,
    /// The choices; none when the node asks for an acknowledgement only.
    pub choices: Vec<ChoiceOption>,
}

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.choices.is_empty() {
            "an acknowledgement"
        } else {
            "a choice"
        };
        write!(f, "node `{}` asks for {what}: {}", self.node, self.question)
    }
}

impl std::error::Error for Pause {}

/// What an `output` node asks through the runtime's interrupt, as saved in the checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Question {
    pub(crate) question: String,
    pub(crate) choices: Vec<ChoiceOption>,
}

impl Pause {
    pub(crate) fn from_runtime(p: &weir_runtime::Paused) -> Self {
        let q: Option<Question> = p.question().ok();
        Self {
            node: flow_node(&p.node).to_owned(),
            question: q.as_ref().map_or_else(String::new, |q| q.question.clone()),
            choices: q.map(|q| q.choices).unwrap_or_default(),
        }
    }
}

/// How a run ended: done, or paused at `output` nodes that ask for a choice.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// No node is left to run: the final state.
    Done(FlowState),
    /// The run paused; resume the thread with a choice to go on.
    Paused {
        /// The state so far.
        state: FlowState,
        /// The questions.
        pauses: Vec<Pause>,
    },
}

impl Outcome {
    pub(crate) fn from_runtime(o: weir_runtime::Outcome<FlowState>) -> Self {
        match o {
            weir_runtime::Outcome::Done(s) => Self::Done(s),
            weir_runtime::Outcome::Paused { state, pauses } => Self::Paused {
                state,
                pauses: pauses.iter().map(Pause::from_runtime).collect(),
            },
        }
    }

    /// The state, done or paused.
    pub fn state(&self) -> &FlowState {
        match self {
            Self::Done(s) | Self::Paused { state: s, .. } => s,
        }
    }
}

/// A thread's state at one checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// The declared fields that hold a value.
    pub values: Fields,
    /// The nodes that run next.
    pub next: Vec<String>,
    /// The questions waiting for an answer.
    pub pauses: Vec<Pause>,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The step it was saved after (-1 for the input).
    pub step: i64,
    /// The nodes whose writes it applied.
    pub writes: Vec<String>,
    /// When it was saved (RFC 3339).
    pub created_at: String,
}

impl Snapshot {
    pub(crate) fn from_runtime(s: weir_runtime::StateSnapshot<FlowState>) -> Self {
        Self {
            values: s.values.to_json(),
            next: s.next.iter().map(|n| flow_node(n).to_owned()).collect(),
            pauses: s.pauses.iter().map(Pause::from_runtime).collect(),
            checkpoint_id: s.checkpoint_id,
            step: s.step,
            writes: s.writes.iter().map(|n| flow_node(n).to_owned()).collect(),
            created_at: s.created_at,
        }
    }
}
