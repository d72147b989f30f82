//! The null task's writes (LangGraph's `NULL_TASK_ID` writes): a [`RunCommand`]'s update and
//! goto, saved as pending writes of the thread's checkpoint before the step runs, and applied to
//! the loaded state with no step of their own: fields written without clearing the others,
//! the goto's nodes triggered in the step the thread stopped at, its `Send`s added to that step's.
//!
//! [`RunCommand`]: crate::RunCommand

use super::super::command::NULL_TASK;
use super::super::persist::WRITES;
use super::{field_error, Loop};
use crate::error::Error;
use crate::graph::{Command, Goto, NodeId};
use crate::state::State;
use std::sync::Arc;

impl<S: State> Loop<S> {
    /// Saves a command's update and goto as the null task's pending writes on the current
    /// checkpoint, after those already there (an earlier command's, whose step never completed):
    /// they are applied again, once, whenever the thread goes on from this checkpoint. They are
    /// put now, whatever the durability: under `Durability::Exit` too, since a run that pauses
    /// again before its step completes writes no checkpoint that would hold them.
    ///
    /// # Errors
    /// A goto to a node the graph does not have, a `Send` that cannot be saved, or the
    /// checkpointer's failure to store the writes.
    pub(crate) async fn save_null_writes(&mut self, mut command: Command<S>) -> Result<(), Error> {
        for to in &mut command.goto {
            *to = self.resolve_goto(std::mem::replace(to, Goto::End))?;
        }
        let bytes = self.save_task(&command, true)?;
        let Some(p) = self.persist.on_mut() else {
            return Err(Error::config("a command needs a checkpointer"));
        };
        p.null.push(bytes);
        // A put of the writes replaces the task's earlier ones: all of them go again.
        let rows = p.null.iter().map(|b| (WRITES, b.clone())).collect();
        p.flush().await?;
        p.put_task_writes(NULL_TASK, rows).await
    }

    /// A goto of a command, by node id: the node must be one of the graph's own.
    fn resolve_goto(&self, to: Goto<S>) -> Result<Goto<S>, Error> {
        let g = &self.g;
        let known = |n: usize| n < g.n_user;
        let unknown = |name: &str| {
            Error::config(format!(
                "the command's `goto` names unknown node `{name}`; the nodes are `{}`",
                g.user_node_names().join("`, `")
            ))
        };
        match to {
            Goto::Named(name) => match g.node_ids.get(&name) {
                Some(&n) if known(n as usize) => Ok(Goto::Node(NodeId(n))),
                _ => Err(unknown(&name)),
            },
            Goto::Node(id) if !known(id.index()) => Err(unknown(&format!("#{}", id.index()))),
            Goto::Send(p) if !known(p.node.index()) => Err(unknown(&format!("#{}", p.node.index()))),
            other => Ok(other),
        }
    }

    /// Applies the null task's pending writes, in the order saved, as LangGraph applies them: in
    /// one boundary of a task with no triggers, so no step is taken and no field nobody wrote
    /// is cleared. The updates' fields and the goto's nodes take the next version; the `Send`s
    /// join the step's.
    ///
    /// # Errors
    /// Saved writes that do not decode, or that a field refuses (two writes of one value).
    pub(crate) fn apply_null_writes(&mut self) -> Result<(), Error> {
        let Some(p) = self.persist.on_mut() else { return Ok(()) };
        if p.null.is_empty() {
            return Ok(());
        }
        let saved = std::mem::take(&mut p.null);
        let mut updates = Vec::with_capacity(saved.len());
        let mut gotos = Vec::new();
        for bytes in &saved {
            let (command, _) = self.load_task(bytes)?;
            updates.push(command.update);
            gotos.extend(command.goto);
        }
        let next = self.next_version();
        self.changed.fill(false);
        Arc::make_mut(&mut self.state)
            .apply(&mut self.channels, &mut updates, false, &mut self.changed)
            .map_err(|e| field_error(e, &[], &self.g, self.step))?;
        let mut bumped = self.record_changed_fields(next);
        for to in gotos {
            match to {
                Goto::Node(id) => bumped |= self.trigger(id.index(), next),
                Goto::Send(packet) => self.sends.push(packet),
                // Saved gotos are loaded by node id; an end goes nowhere.
                Goto::Named(_) | Goto::End => {}
            }
        }
        if bumped {
            self.max_version = next;
        }
        Ok(())
    }

    /// Writes node `n`'s branch channel (a goto to it) at version `next`; returns whether it
    /// changed.
    fn trigger(&mut self, n: usize, next: u64) -> bool {
        let control = &mut self.controls[n];
        if !control.update(1, &[]) {
            return false;
        }
        let id = self.g.control_id(n);
        self.versions[id as usize] = next;
        if control.is_available() {
            self.updated.push(id);
            if !self.live.contains(&(n as u32)) {
                self.live.push(n as u32);
            }
        }
        true
    }
}
