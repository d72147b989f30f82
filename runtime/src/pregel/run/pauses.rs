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
                id: self.pause_id(n, push),
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

    /// The id of a pause of the task of `node` (or of the `push`-th `Send`) in the step under
    /// way: 32 hex digits, as LangGraph's interrupt ids look, from the namespace, the step and
    /// the task's id. Every pause of one task in one step has it, however often the task runs
    /// again; a pause of the same node in another step, or in another subgraph, has another.
    pub(crate) fn pause_id(&self, node: u32, push: Option<usize>) -> String {
        let ns = self.persist.on().map_or("", |p| &*p.info.ns);
        pause_id(ns, self.step, &self.task_id(node, push))
    }

    /// Gives each answer to its paused task, all before the step runs again (LangGraph's resume
    /// map): every id (a pause id or a task id) must name a paused task, once.
    pub(crate) fn answer_all(&mut self, answers: Vec<(Option<String>, serde_json::Value)>) -> Result<(), Error> {
        if answers.len() > 1 && answers.iter().any(|(id, _)| id.is_none()) {
            return Err(Error::config(
                "each of several answers needs the id of the task it answers",
            ));
        }
        let mut resolved: Vec<(String, serde_json::Value)> = Vec::with_capacity(answers.len());
        for (id, value) in answers {
            let task = self.paused_task(id.as_deref())?;
            if resolved.iter().any(|(t, _)| *t == task) {
                let named = id.unwrap_or(task);
                return Err(Error::config(format!(
                    "the answers name the paused task `{named}` twice"
                )));
            }
            resolved.push((task, value));
        }
        let Some(p) = self.persist.on_mut() else {
            return Err(Error::config("resuming needs a checkpointer"));
        };
        for (task, value) in resolved {
            let record = p.pending.get_mut(&task).expect("a paused task");
            record.question = None;
            record.answers.push(value);
        }
        Ok(())
    }

    /// The id of the paused task `id` names (by its pause id or its task id), or with `None`
    /// of the only paused task.
    fn paused_task(&self, id: Option<&str>) -> Result<String, Error> {
        let p = self
            .persist
            .on()
            .ok_or_else(|| Error::config("resuming needs a checkpointer"))?;
        // Each paused task, by its task id and its pause id.
        let paused: Vec<(&String, String)> = p
            .pending
            .iter()
            .filter(|(_, t)| t.question.is_some())
            .map(|(k, _)| (k, pause_id(&p.info.ns, self.step, k)))
            .collect();
        match (id, paused.as_slice()) {
            (Some(id), _) => match paused.iter().find(|(task, pause)| *task == id || pause == id) {
                Some((task, _)) => Ok((*task).clone()),
                None => Err(Error::nothing_to_resume(&p.info.thread, Some(id))),
            },
            (None, [(one, _)]) => Ok((*one).clone()),
            (None, []) => Err(Error::nothing_to_resume(&p.info.thread, None)),
            (None, _) => {
                let ids: Vec<String> = paused.into_iter().map(|(_, pause)| pause).collect();
                Err(Error::ambiguous_resume(&p.info.thread, &ids))
            }
        }
    }
}

/// A pause's id: FNV-1a (128 bits) of `ns`, `step` and `task`, in 32 hex digits. Stable from
/// build to build and machine to machine (no random seed), as ids saved by a client must be.
pub(crate) fn pause_id(ns: &str, step: i64, task: &str) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let step = step.to_string();
    let parts = [ns.as_bytes(), b"|", step.as_bytes(), b"|", task.as_bytes()];
    let hash = parts
        .iter()
        .flat_map(|p| p.iter())
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME));
    format!("{hash:032x}")
}
