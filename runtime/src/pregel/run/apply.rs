//! The end of a superstep (LangGraph's `apply_writes` and `after_tick`): versions seen,
//! triggers consumed, every field's writes applied in task order, internal channels written,
//! versions bumped.

use super::super::task::Finished;
use super::{field_error, Loop};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::{Goto, Packet};
use crate::state::State;
use std::sync::Arc;

impl<S: State> Loop<S> {
    /// LangGraph's `apply_writes` and `after_tick`: the end of a superstep.
    pub(crate) fn after_tick(&mut self, mut done: Vec<Finished<S>>) -> Result<(), Error> {
        let g = self.g.clone();
        let routed_alone = done.len() == 1 && !done[0].routed && !done[0].handled;
        if done.iter().any(|d| Some(d.node) == g.start) {
            // The start node ran: the input is in the fields now.
            self.input = None;
        }
        // Versions seen: each pull task has now seen its triggers.
        for d in done.iter().filter(|d| d.pull) {
            self.mark_seen(d.node);
        }
        let next = self.next_version();
        let mut bumped = false;

        // Consume the triggers of the tasks that ran (a join barrier starts over).
        for d in done.iter().filter(|d| d.pull) {
            bumped |= self.consume_triggers(d.node, next);
        }

        // Apply the fields' writes, in task order.
        bumped |= self.apply_fields(&g, &mut done, next)?;
        if routed_alone && !g.nodes[done[0].node as usize].routers.is_empty() {
            done[0].routed = true;
            if done[0].command.goto.is_empty() {
                // No allocation per routed step: the buffer comes back below, drained.
                std::mem::swap(&mut done[0].command.goto, &mut self.gotos);
            }
            // One task: the state after the step is the state with its own writes applied.
            self.route(done[0].node, &self.state, &mut done[0].command.goto)?;
        }

        // Apply the internal channels' writes: edges, joins, gotos and sends.
        self.sends = self.write_controls(&g, &mut done)?;
        if routed_alone && self.gotos.capacity() == 0 {
            self.gotos = std::mem::take(&mut done[0].command.goto);
        }
        bumped |= self.update_controls(g.n_fields(), next);

        // Nothing will wake a node: finish the channels (deferred nodes wake up).
        if !self.updated.iter().any(|c| !g.trigger_to_nodes[*c as usize].is_empty()) {
            bumped |= self.finish_channels(g.n_fields(), next);
        }
        if bumped {
            self.max_version = next;
        }
        self.step += 1;
        done.clear();
        self.done = done;
        Ok(())
    }

    /// Applies the fields' writes of `done`, in task order; returns whether a field changed.
    fn apply_fields(&mut self, g: &GraphInner<S>, done: &mut [Finished<S>], next: u64) -> Result<bool, Error> {
        let state = Arc::make_mut(&mut self.state);
        self.updated.clear();
        self.changed.fill(false);
        self.updates.clear();
        self.updates
            .extend(done.iter_mut().map(|d| std::mem::take(&mut d.command.update)));
        let step = self.step;
        state
            .apply(&mut self.channels, &mut self.updates, true, &mut self.changed)
            .map_err(|e| field_error(e, &done.iter().map(|d| d.node).collect::<Vec<_>>(), g, step))?;
        Ok(self.record_changed_fields(next))
    }

    /// Writes the internal channels the finished tasks write: their node's edges and joins
    /// (unless an error handler stood in for the node), and their gotos. Returns their `Send`s.
    fn write_controls(&mut self, g: &GraphInner<S>, done: &mut [Finished<S>]) -> Result<Vec<Packet<S>>, Error> {
        let mut sends = Vec::new();
        for d in done {
            let node = &g.nodes[d.node as usize];
            if !d.handled {
                for &e in &node.edges {
                    self.write_branch(e as usize);
                }
                for &j in &node.joins {
                    if self.join_writes[j as usize].is_empty() {
                        self.touched.push(j);
                    }
                    self.join_writes[j as usize].push(d.node);
                }
            }
            for goto in d.command.goto.drain(..) {
                match goto {
                    Goto::Node(id) => self.write_branch(id.index()),
                    Goto::Named(name) => match g.node_ids.get(&name) {
                        Some(&id) if (id as usize) < g.n_user => self.write_branch(id as usize),
                        _ => return Err(Error::unknown_target(&g.names[d.node as usize], name, self.step)),
                    },
                    Goto::End => {}
                    Goto::Send(p) => sends.push(p),
                }
            }
        }
        Ok(sends)
    }

    /// Updates the internal channels written this step, and those still available from the
    /// last one (an ephemeral branch clears itself), in channel order. Returns whether one
    /// changed.
    fn update_controls(&mut self, n_fields: usize, next: u64) -> bool {
        let mut bumped = false;
        let mut visit = std::mem::take(&mut self.touched);
        visit.append(&mut self.live);
        visit.sort_unstable();
        visit.dedup();
        for &c in &visit {
            let c = c as usize;
            let control = &mut self.controls[c];
            let count = std::mem::take(&mut self.branch_writes[c]);
            let written = count > 0 || !self.join_writes[c].is_empty();
            let changed = if written {
                control.update(count, &self.join_writes[c])
            } else if control.is_available() {
                // An available channel not written this step gets `update([])`.
                control.update(0, &[])
            } else {
                false
            };
            self.join_writes[c].clear();
            if changed {
                self.versions[n_fields + c] = next;
                bumped = true;
                if control.is_available() {
                    self.updated.push((n_fields + c) as u32);
                }
            }
            if control.is_available() {
                self.live.push(c as u32);
            }
        }
        self.touched = visit;
        self.touched.clear();
        bumped
    }

    /// Finishes every channel (nothing else will wake a node: deferred nodes wake up). Returns
    /// whether one changed.
    fn finish_channels(&mut self, n_fields: usize, next: u64) -> bool {
        let state = Arc::make_mut(&mut self.state);
        self.changed.fill(false);
        state.finish(&mut self.channels, &mut self.changed);
        let mut bumped = self.record_changed_fields(next);
        for (c, control) in self.controls.iter_mut().enumerate() {
            if control.finish() {
                let id = n_fields + c;
                self.versions[id] = next;
                bumped = true;
                if control.is_available() {
                    self.updated.push(id as u32);
                    if !self.live.contains(&(c as u32)) {
                        self.live.push(c as u32);
                    }
                }
            }
        }
        bumped
    }

    /// Node `n` has seen the current version of each of its triggers.
    pub(super) fn mark_seen(&mut self, n: u32) {
        for (k, &t) in self.g.nodes[n as usize].triggers.iter().enumerate() {
            let v = self.versions[t as usize];
            if v > 0 {
                self.seen[n as usize][k] = v;
            }
        }
    }

    /// Consumes node `n`'s triggers (a join barrier starts over); those that change take version
    /// `next`. Returns whether any did.
    pub(super) fn consume_triggers(&mut self, n: u32, next: u64) -> bool {
        let n_fields = self.g.n_fields();
        let state = Arc::make_mut(&mut self.state);
        let mut bumped = false;
        for &t in &self.g.nodes[n as usize].triggers {
            let t = t as usize;
            let consumed = if t < n_fields {
                state.consume(&mut self.channels, t)
            } else {
                self.controls[t - n_fields].consume()
            };
            if consumed {
                self.versions[t] = next;
                bumped = true;
            }
        }
        bumped
    }

    /// Gives version `next` to every field `changed` marks, and lists the available ones as
    /// updated. Returns whether any field changed.
    pub(super) fn record_changed_fields(&mut self, next: u64) -> bool {
        let mut bumped = false;
        for f in 0..self.g.n_fields() {
            if self.changed[f] {
                self.versions[f] = next;
                bumped = true;
                if self.state.is_available(&self.channels, f) {
                    self.updated.push(f as u32);
                }
            }
        }
        bumped
    }

    /// Writes the branch channel of node `c` (an edge or a goto to it).
    fn write_branch(&mut self, c: usize) {
        if self.branch_writes[c] == 0 {
            self.touched.push(c as u32);
        }
        self.branch_writes[c] += 1;
    }
}
