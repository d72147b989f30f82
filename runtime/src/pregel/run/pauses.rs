//! Where a run pauses: static interrupts before and after nodes (LangGraph's
//! `should_interrupt`), and answers given to the tasks that asked a question.

use super::Loop;
use crate::error::Error;
use crate::signal::{PauseKind, Paused};
use crate::state::State;

impl<S: State> Loop<S> {
    /// LangGraph's `should_interrupt`: a task's node is in `mask`, and something changed since
    /// the run last resumed (so a resumed run passes the breakpoint it stopped at).
    pub(super) fn should_interrupt(&self, mask: &[bool], nodes: impl Iterator<Item = u32>) -> bool {
        let Some(p) = self.persist.on() else { return false };
        let changed = self.versions.iter().zip(&p.interrupt_seen).any(|(v, seen)| v > seen);
        changed
            && nodes
                .into_iter()
                .any(|n| mask.get(n as usize).copied().unwrap_or(false))
    }

    /// Whether the step just applied ran a node to pause after.
    pub(crate) fn interrupt_after(&self, writers: &[u32]) -> bool {
        self.should_interrupt(&self.interrupt_after, writers.iter().copied())
    }

    /// The pauses of the static interrupt before the planned step.
    pub(crate) fn pauses_before(&self) -> Vec<Paused> {
        let nodes = self.tasks.iter().map(|t| (t.node, t.push));
        self.static_pauses(PauseKind::Before, nodes)
    }

    /// The pauses of a static interrupt on `nodes`.
    pub(crate) fn static_pauses(
        &self,
        kind: PauseKind,
        nodes: impl Iterator<Item = (u32, Option<usize>)>,
    ) -> Vec<Paused> {
        let mask = if kind == PauseKind::Before {
            &self.interrupt_before
        } else {
            &self.interrupt_after
        };
        nodes
            .filter(|(n, _)| mask.get(*n as usize).copied().unwrap_or(false))
            .map(|(n, push)| Paused {
                node: self.g.node_name(n),
                id: self.task_id(n, push),
                question: None,
                kind,
            })
            .collect()
    }

    /// Marks every channel's version as seen by the interrupts (LangGraph does this on resume).
    pub(crate) fn pass_interrupts(&mut self) {
        if let Some(p) = self.persist.on_mut() {
            p.interrupt_seen.clone_from(&self.versions);
        }
    }

    /// Gives the answer to the paused task `id` (or, with `None`, to the only paused task).
    pub(crate) fn answer(&mut self, id: Option<&str>, value: serde_json::Value) -> Result<(), Error> {
        let p = self
            .persist
            .on_mut()
            .ok_or_else(|| Error::config("resuming needs a checkpointer"))?;
        let paused: Vec<String> = p
            .pending
            .iter()
            .filter(|(_, t)| t.question.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let target = match (id, paused.as_slice()) {
            (Some(id), _) if paused.iter().any(|p| p == id) => id.to_owned(),
            (Some(id), _) => return Err(Error::nothing_to_resume(&p.info.thread, Some(id))),
            (None, [one]) => one.clone(),
            (None, []) => return Err(Error::nothing_to_resume(&p.info.thread, None)),
            (None, _) => return Err(Error::ambiguous_resume(&p.info.thread, &paused)),
        };
        let task = p.pending.get_mut(&target).expect("a paused task");
        task.question = None;
        task.answers.push(value);
        Ok(())
    }
}
