//! A handle on a node of a graph being built: its id, and `Send`s to it.

use super::command::{Goto, NodeId};
use super::func::NodeFn;
use super::send::{packet, EncodeFn};
use crate::state::State;
use std::fmt;

/// A handle on a node of a graph being built: its id, and `Send`s to it.
pub struct NodeHandle<S: State, I = S> {
    pub(crate) id: NodeId,
    pub(crate) func: NodeFn<I, S>,
    pub(crate) encode: Option<EncodeFn<I>>,
}

impl<S: State, I> Clone for NodeHandle<S, I> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            func: self.func.clone(),
            encode: self.encode,
        }
    }
}

impl<S: State, I> fmt::Debug for NodeHandle<S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeHandle").field("id", &self.id).finish()
    }
}

impl<S: State, I: Send + Sync + 'static> NodeHandle<S, I> {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// A `Send` that runs this node once in the next step, on `input`.
    pub fn send(&self, input: I) -> Goto<S> {
        Goto::Send(packet(self.id, self.func.clone(), self.encode, input))
    }
}

impl<S: State, I> From<&NodeHandle<S, I>> for NodeId {
    fn from(h: &NodeHandle<S, I>) -> NodeId {
        h.id
    }
}

impl<S: State, I> From<&NodeHandle<S, I>> for Goto<S> {
    fn from(h: &NodeHandle<S, I>) -> Goto<S> {
        Goto::Node(h.id)
    }
}
