//! Loading a flow file onto the runtime, as the seed's engine does: validate, instantiate the
//! nodes through the registry, connect START and END, compute each node's level, translate the
//! plain, condition and output edges, decide what each multi-input node waits for, compile.
//!
//! Where weir is stricter than the seed:
//! - an edge out of an `end` node is a load error (the seed ignores it): nothing runs after an
//!   end node, so the edge can only be a mistake;
//! - every branch of a `condition` needs an edge, `else` included (the seed lets a branch
//!   without one end the run quietly, before any end node);
//! - a run that stops before any end node while a join still waits fails, naming the join and
//!   what it waited for, instead of ending as done.
//!
//! Levels are the seed's (the longest simple path from the start, see
//! [`topology::levels`](weir_topology::levels)), so they, and the joins decided from them, do not
//! depend on the order of the file's edges.
//!
//! One file per phase: `loader.rs` holds what a load knows and runs the phases in order;
//! `nodes.rs` (the state section, ids, instantiation), `edges.rs`, `checks.rs` (start, ends,
//! branches, writes), `shape.rs` (the shared topology checks, levels and joins) and `build.rs`
//! (the runtime graph); `flow.rs` is what a load gives back.

mod build;
mod checks;
mod edges;
mod flow;
mod loader;
mod nodes;
mod shape;

pub use flow::{Flow, LoadOptions};
