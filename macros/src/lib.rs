//! Procedural macros of weir: `#[derive(State)]`, `graph!`, and the functional API's `#[task]`
//! and `#[entrypoint]`.
//!
//! Use them through the `weir` crate, which documents them and re-exports everything the
//! generated code names. Each macro here is a thin function; the work is in one module per macro,
//! split by phase (`state/{attr,ast,valid,expand}.rs`, `graph/{parse,model,check,expand}.rs`),
//! with a shared error context (`ctxt.rs`).

#![forbid(unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub)]

mod ctxt;
mod func;
mod graph;
mod state;

use proc_macro::TokenStream;
use syn::parse_macro_input;

/// Derives `weir::State` for a struct with named fields; see the `weir` crate for the attributes.
#[proc_macro_derive(State, attributes(state, reducer, channel, migrate))]
pub fn derive_state(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as syn::DeriveInput);
    state::derive(&input).into()
}

/// Declares a graph over a state, checks its wiring at compile time and expands into
/// `GraphBuilder` calls; see the `weir` crate for the syntax.
#[proc_macro]
pub fn graph(input: TokenStream) -> TokenStream {
    graph::graph(input.into()).into()
}

/// Makes a function a task of the functional API: calling it inside an entrypoint returns a
/// future of its result, which is checkpointed; see the `weir` crate.
#[proc_macro_attribute]
pub fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    func::task(args.into(), item.into()).into()
}

/// Makes a one-input async function an entrypoint of the functional API; see the `weir` crate.
#[proc_macro_attribute]
pub fn entrypoint(args: TokenStream, item: TokenStream) -> TokenStream {
    func::entrypoint(args.into(), item.into()).into()
}
