//! `graph!`: a graph over a state, declared as edges, checked at compile time, expanded into
//! `GraphBuilder` calls with static node indices.
//!
//! Phases: [`parse`] (syntax, with spans) → [`model`] (nodes resolved to indices) → [`check`]
//! (the wiring rules of `weir_topology`, each problem at its token) → [`expand`].

mod check;
// `#[task]` takes a node's `retry(..)` and `timeout(..)` (`crate::func`).
pub(crate) mod expand;
mod model;
pub(crate) mod parse;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

/// Expands one `graph! { .. }`.
pub(crate) fn graph(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let mut out = TokenStream::new();
    let mut name = "graph".to_owned();
    if let Some(input) = parse::parse(&cx, input) {
        if let Some(g) = model::Graph::from_input(&cx, input) {
            name = g.name();
            let checked = check::check(&cx, &g);
            // Expanded even after an error, so that rustc's own checks (node signatures, route
            // exhaustiveness, payload types) are reported in the same compile.
            out = expand::expand(&g, &checked);
        }
    }
    if let Err(e) = cx.check() {
        let errors = e.to_compile_error();
        out = if out.is_empty() {
            errors
        } else {
            quote::quote!({ #errors #out })
        };
    }
    if std::env::var("WEIR_MACROS_DEBUG").is_ok_and(|v| v == name || v == "*") {
        eprintln!("graph! `{name}` expands to:\n{out}");
    }
    out
}
