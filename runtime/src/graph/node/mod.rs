//! Nodes, routers and what they return.

mod command;
mod func;
mod handle;
mod send;
mod typed;

pub use command::{Command, Goto, IntoGotos, NodeId, NodeOutput};
pub use func::{
    AsyncCtxMarker, AsyncFn1, AsyncFn2, AsyncMarker, IntoNode, NodeError, NodeFn, SyncCtxMarker, SyncMarker,
};
pub(crate) use func::{FreshFn, HandlerFn, RouterFn};
pub use handle::NodeHandle;
pub use send::Packet;
pub(crate) use send::{encode_json, packet, EncodeFn, PacketDecoder};
pub use typed::{AsyncFn3, ContextFor, ContextRouter, WithContext};
