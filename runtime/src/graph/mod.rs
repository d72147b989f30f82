//! Building a graph by hand: nodes, edges, joins, routers and `Send`s.
//!
//! This builder is public API: graphs assembled from configuration use it, the JSON front end is
//! built on it, and `graph!` expands into calls to it.

mod builder;
mod node;

pub use crate::signal::ParentCommand;
pub use builder::{GraphBuilder, NodeRef, END, START};
pub use node::{
    AsyncCtxMarker, AsyncFn1, AsyncFn2, AsyncMarker, Command, Goto, IntoGotos, IntoNode, NodeError, NodeFn, NodeHandle,
    NodeId, NodeOutput, Packet, SyncCtxMarker, SyncMarker,
};
pub(crate) use node::{HandlerFn, PacketDecoder, RouterFn};
