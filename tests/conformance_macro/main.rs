//! The state-graph conformance scenarios of `tests/conformance/`, written with `graph!`: the same
//! graphs, declared instead of built, give the same results.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod graphs;
