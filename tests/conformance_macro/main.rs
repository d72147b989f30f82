//! The state-graph conformance scenarios of `tests/conformance/`, written with `graph!`: the same
//! graphs, declared instead of built, over derived states, give the same results.

// Field names follow LangGraph's scenarios (`foo`, `bar`), so the tests read side by side.
#![allow(clippy::disallowed_names)]

#[path = "../common/mod.rs"]
mod common;

mod graphs;
