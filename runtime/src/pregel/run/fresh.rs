//! A task's fresh read: its routers (in a step of several tasks) and its node's `then_fresh`
//! run on the state with the task's own writes applied and nobody else's, an overlay of the
//! fields it wrote ([`State::read_fresh`]), never a copy of the state; and the routers' checks of
//! each destination against their declared targets.

use super::super::executor::panic_message;
use super::super::task::Finished;
use super::{field_error, Loop};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::{Command, ErasedContext, Goto};
use crate::state::{State, Update};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl<S: State> Loop<S> {
    /// Runs a task's routers on the state with its own writes applied, and nobody else's: an
    /// overlay of the fields it wrote on the step's state, not a copy of the state.
    pub(crate) fn route_fresh(&mut self, d: &mut Finished<S>) -> Result<(), Error> {
        d.routed = true;
        if d.handled || self.g.nodes[d.node as usize].routers.is_empty() {
            return Ok(());
        }
        let (g, step, node, context) = (&self.g, self.step, d.node, self.context.as_ref());
        // The step's tasks are done: nobody else holds the state, and `make_mut` copies nothing.
        let state = Arc::make_mut(&mut self.state);
        let Command { update, goto, .. } = &mut d.command;
        state
            .read_fresh(&self.channels, update, |fresh| {
                route(g, step, node, fresh, context, goto)
            })
            .map_err(|e| field_error(e, &[node], g, step))?
    }

    /// Runs `node`'s [`then_fresh`](crate::GraphBuilder::then_fresh) on the state with the
    /// task's own writes applied, and adds what it returns to the task's command.
    pub(super) fn then_fresh(&mut self, mut d: Finished<S>) -> Result<Finished<S>, Error> {
        let Some(f) = self.g.nodes[d.node as usize].fresh.clone() else {
            return Ok(d);
        };
        let (g, step, node, context) = (&self.g, self.step, d.node, self.context.as_ref());
        let name = &g.names[node as usize];
        let state = Arc::make_mut(&mut self.state);
        let out = state
            .read_fresh(&self.channels, &d.command.update, |fresh| {
                // User code: its panic fails the task, naming the node.
                std::panic::catch_unwind(AssertUnwindSafe(|| f(fresh, context)))
            })
            .map_err(|e| field_error(e, &[node], g, step))?;
        let command = match out {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(Error::node(name, step, format!("its fresh read failed: {e}").into())),
            Err(p) => {
                let message = format!("its fresh read panicked: {}", panic_message(p));
                return Err(Error::panic(name, step, message));
            }
        };
        if let Some(p) = command.parent {
            return Err(Error::to_parent(name, p));
        }
        if let Some(f) = g.undeclared_write(node, &command.update) {
            return Err(Error::undeclared_write(name, g.fields[f].name.clone(), step));
        }
        d.command.update.merge(command.update);
        d.command.goto.extend(command.goto);
        Ok(d)
    }

    /// Runs the routers of `task` on `state` (the state with the task's own writes applied).
    pub(super) fn route(&self, node: u32, state: &S, out: &mut Vec<Goto<S>>) -> Result<(), Error> {
        route(&self.g, self.step, node, state, self.context.as_ref(), out)
    }
}

/// Runs the routers of `node` on `state` (the state with its task's own writes applied) into
/// `out`, checking each destination against the router's declared targets. A router reading
/// the run's `context` reads it in place.
fn route<S: State>(
    g: &GraphInner<S>,
    step: i64,
    node: u32,
    state: &S,
    context: Option<&ErasedContext>,
    out: &mut Vec<Goto<S>>,
) -> Result<(), Error> {
    for router in &g.nodes[node as usize].routers {
        let from = out.len();
        // A router is user code: its panic fails the run, naming the node it follows.
        std::panic::catch_unwind(AssertUnwindSafe(|| (router.func)(state, context, out)))
            .map_err(|p| {
                let name = &g.names[node as usize];
                Error::panic(name, step, format!("its router panicked: {}", panic_message(p)))
            })?
            // Only a router reading a context of another type than the run's fails.
            .map_err(|e| Error::node(&g.names[node as usize], step, e))?;
        for goto in &out[from..] {
            let target = match goto {
                Goto::Node(id) => Some(id.0),
                Goto::End => None,
                Goto::Send(_) | Goto::Named(_) => continue,
            };
            if !router.targets.contains(&target) {
                let what = target.map_or_else(|| "END".to_owned(), |t| g.node_name(t));
                return Err(Error::unknown_target(&g.names[node as usize], what, step));
            }
        }
    }
    Ok(())
}
