//! A task's interrupts: the answers it was given so far and the question it asks, shared by the
//! task's [`Context`](super::Context) and the loop that saves them.

use crate::signal::Interrupt;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Mutex;

/// What one task knows of its interrupts: the answers given so far, and the question it asked.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    inner: Mutex<ScratchInner>,
    /// The saved task calls of an entrypoint's task (`crate::func`); `None` for a graph's node.
    pub(crate) calls: Option<std::sync::Arc<crate::func::CallLog>>,
    /// The cache of an entrypoint's cached tasks (`Entrypoint::with_cache`); `None` for a
    /// graph's node, which reaches the graph's cache through its step.
    pub(crate) cache: Option<std::sync::Arc<dyn crate::cache::NodeCache>>,
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
            calls: None,
            cache: None,
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
            return serde_json::from_value(answer.clone())
                .map_err(|e| Interrupt::bad_answer(node, std::any::type_name::<A>(), e.to_string()));
        }
        let q = serde_json::to_value(question).map_err(|e| Interrupt::question(e.to_string()))?;
        inner.asked = Some(q);
        Err(Interrupt::asked())
    }
}
