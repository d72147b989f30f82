//! Conformance scenarios of `../shared/langgraph/SEMANTICS.md` §6, on hand-built graphs over
//! hand-written states, with LangGraph 1.2.9's expected values (`run_anchor.py`, beside
//! SEMANTICS.md, reproduces them on LangGraph itself). Where weir deliberately differs, the test
//! says so and checks weir's behaviour.

// Field and node names follow LangGraph's scenarios (`foo`, `bar`), so the tests read side by side.
#![allow(clippy::disallowed_names)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod graphs;
mod pregel;
mod production;
