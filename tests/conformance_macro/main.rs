//! The state-graph conformance scenarios of `tests/conformance/`, written with `graph!`: the same
//! graphs, declared instead of built, over derived states, give the same results.

#[path = "../common/mod.rs"]
mod common;

mod graphs;
