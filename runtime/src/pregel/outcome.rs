//! How a run ended: done, with its final state, or paused, with its pauses.

use crate::signal::Paused;

/// How a run ended.
#[derive(Debug, Clone)]
pub enum Outcome<S> {
    /// No node is left to run: the final state.
    Done(S),
    /// The run paused: the state so far, and why (each node's question, or a static interrupt).
    /// Resume the thread to go on.
    Paused {
        /// The state when the run paused.
        state: S,
        /// The pauses, one per paused node.
        pauses: Vec<Paused>,
    },
}

impl<S> Outcome<S> {
    /// The state, whether the run is done or paused.
    pub fn state(&self) -> &S {
        match self {
            Self::Done(s) | Self::Paused { state: s, .. } => s,
        }
    }
    /// The pauses; empty when the run is done.
    pub fn pauses(&self) -> &[Paused] {
        match self {
            Self::Done(_) => &[],
            Self::Paused { pauses, .. } => pauses,
        }
    }
    /// Whether the run paused.
    pub fn is_paused(&self) -> bool {
        matches!(self, Self::Paused { .. })
    }
}
