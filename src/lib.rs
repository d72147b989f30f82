//! # weir
//!
//! LangGraph's stateful agent-graph model for Rust, with the wiring checked by the compiler.
//!
//! A state is a struct whose fields are typed channels (`#[derive(State)]`); a graph is a set of
//! nodes (plain functions, sync or async) joined by edges, joins, routers and `Send`s; a compiled
//! graph runs LangGraph's Pregel superstep loop: the nodes of a step run concurrently on tokio,
//! read the state as it was at the start of the step, and their writes are applied at the step
//! boundary through each field's reducer, in a deterministic order.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

pub use weir_runtime::{
    channel, graph, state, AppendMark, BoxError, BuildError, ChannelKind, CodecError, Command, CompiledGraph, Context,
    DrainHandle, Error, FieldInfo, Goto, GraphBuilder, IntoInput, NodeHandle, NodeId, NodeRef, RetryPolicy, RunConfig,
    State, Status, Update, Writes, END, START,
};

/// The items most programs need: `use weir::prelude::*;`.
pub mod prelude {
    pub use crate::{
        BoxError, BuildError, Command, CompiledGraph, Context, DrainHandle, Error, Goto, GraphBuilder, NodeId,
        RetryPolicy, RunConfig, State, Update, END, START,
    };
}

/// Not public API: the paths generated code uses. Not covered by semver.
#[doc(hidden)]
pub mod __private {
    pub use ::core;
    pub use ::serde;
    pub use ::serde_json;
    pub use weir_runtime::channel;
    pub use weir_runtime::state;
    pub use weir_runtime::*;
}
