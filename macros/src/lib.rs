//! Procedural macros of weir.

mod graph;

/// Declares a graph over a state, checks its wiring at compile time and expands into
/// `GraphBuilder` calls. See the `weir` crate for the syntax.
#[proc_macro]
pub fn graph(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    graph::graph(input.into()).into()
}
