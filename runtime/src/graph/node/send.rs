//! `Send`s: a packet running a node on an input of its own, and how it is saved.

use super::command::{Command, NodeId};
use super::func::NodeFn;
use crate::error::BoxError;
use crate::graph::Context;
use crate::state::State;
use futures::future::BoxFuture;
use std::fmt;
use std::sync::Arc;

/// Serializes a `Send`'s payload.
pub(crate) type EncodeFn<I> = fn(&I) -> Result<serde_json::Value, String>;

/// Rebuilds a saved `Send` for a node: its payload, as JSON, into a packet.
pub(crate) type PacketDecoder<S> = Arc<dyn Fn(serde_json::Value) -> Result<Packet<S>, String> + Send + Sync>;

/// What a packet runs: a node's function on its own input (one allocation per `Send`).
pub(crate) trait PacketJob<S: State>: Send + Sync {
    /// Runs the node on the packet's input (again, for a retry).
    fn run(self: Arc<Self>, ctx: Context) -> BoxFuture<'static, Result<Command<S>, BoxError>>;
    /// The input as JSON for a checkpoint; `None` when it cannot be saved.
    fn encode(&self) -> Option<Result<serde_json::Value, String>>;
}

struct SendJob<I, S: State> {
    func: NodeFn<I, S>,
    input: I,
    encode: Option<EncodeFn<I>>,
}

impl<I: Send + Sync + 'static, S: State> PacketJob<S> for SendJob<I, S> {
    fn run(self: Arc<Self>, ctx: Context) -> BoxFuture<'static, Result<Command<S>, BoxError>> {
        Box::pin(async move { self.func.call(&self.input, &ctx).await })
    }
    fn encode(&self) -> Option<Result<serde_json::Value, String>> {
        self.encode.map(|e| e(&self.input))
    }
}

/// One `Send`: a node to run in the next step, with the input it runs on.
pub struct Packet<S: State> {
    pub(crate) node: NodeId,
    pub(crate) job: Arc<dyn PacketJob<S>>,
}

impl<S: State> Packet<S> {
    /// The node the packet runs.
    pub fn node(&self) -> NodeId {
        self.node
    }
}

impl<S: State> fmt::Debug for Packet<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packet")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// A packet running `func` on `input`; saved through `encode` when given.
pub(crate) fn packet<S: State, I: Send + Sync + 'static>(
    node: NodeId,
    func: NodeFn<I, S>,
    encode: Option<EncodeFn<I>>,
    input: I,
) -> Packet<S> {
    Packet {
        node,
        job: Arc::new(SendJob { func, input, encode }),
    }
}

/// The JSON encoding of a payload.
pub(crate) fn encode_json<I: serde::Serialize>(input: &I) -> Result<serde_json::Value, String> {
    serde_json::to_value(input).map_err(|e| e.to_string())
}
