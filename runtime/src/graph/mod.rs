//! Building a graph by hand: nodes, edges, joins, routers and `Send`s.
//!
//! This builder is public API: graphs assembled from configuration use it, the JSON front end is
//! built on it, and `graph!` expands into calls to it. Below the loop: the node API (`Command`,
//! `Goto`, node functions, the [`Context`] a node sees) and the compiled tables the loop runs on;
//! nothing here knows the loop (`pregel`).

mod builder;
pub(crate) mod compile;
mod compiled;
mod context;
mod forward;
pub(crate) mod interrupt;
mod node;
pub(crate) mod policy;
mod run_context;
pub(crate) mod task_key;
mod wiring;

pub use crate::signal::ParentCommand;
pub use builder::{GraphBuilder, NodeRef, END, START};
pub use compiled::CompiledGraph;
pub use context::{Context, Durability};
pub(crate) use context::{Emitter, RunInfo, Streams};
pub use forward::SubgraphEvent;
pub(crate) use forward::{Forward, ForwardFn};
pub use node::{
    AsyncCtxMarker, AsyncFn1, AsyncFn2, AsyncFn3, AsyncMarker, Command, ContextFor, ContextRouter, Goto, IntoGotos,
    IntoNode, NodeError, NodeFn, NodeHandle, NodeId, NodeOutput, Packet, SyncCtxMarker, SyncMarker, WithContext,
};
pub(crate) use node::{FreshFn, HandlerFn, PacketDecoder, RouterFn};
pub(crate) use run_context::ErasedContext;
pub use run_context::{ContextValue, RunContext};
