//! The runtime of weir: typed channels, LangGraph's Pregel superstep loop, and the hand-built
//! graph API that `graph!` and the JSON front end expand into.
//!
//! Most users reach it through the `weir` facade crate and its macros.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

#[cfg(feature = "sqlite")]
mod blocking;
pub mod cache;
pub mod channel;
// The doc examples' state (`__doc_state!`) names this crate as its users do.
#[cfg(test)]
extern crate self as weir_runtime;
pub mod checkpoint;
mod error;
pub mod func;
pub mod graph;
#[cfg(feature = "postgres")]
pub mod postgres;
mod pregel;
mod signal;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod state;
pub mod store;

#[doc(hidden)]
pub mod doc_support;
#[doc(hidden)]
pub use serde as __serde;

pub use cache::CachePolicy;
pub use error::{BoxError, BuildError, Error};
pub use graph::policy::RetryPolicy;
pub use graph::{
    Command, CompiledGraph, Context, ContextRouter, ContextValue, Durability, Goto, GraphBuilder, NodeError,
    NodeHandle, NodeId, NodeRef, ParentCommand, RunContext, SubgraphEvent, END, START,
};
pub use pregel::{
    subgraph, writes_json, Answer, DrainHandle, Event, IntoInput, MessageMeta, Outcome, RunCommand, RunConfig,
    RunInput, RunStream, StateEdit, StateSnapshot, StreamMode, TaskSnapshot, AS_COPY, AS_END, AS_INPUT,
};
pub use signal::{Interrupt, PauseKind, Paused};
pub use state::{AppendMark, ChannelKind, CodecError, FieldInfo, State, Update, Writes};
