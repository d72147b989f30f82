//! `graph!`: a graph over a state, declared as edges, checked at compile time, expanded into
//! `GraphBuilder` calls with static node indices.
//!
//! Phases: [`parse`] (syntax, with spans) → [`model`] (nodes resolved to indices) → [`check`]
//! (the wiring rules of `weir_topology`, each problem at its token) → [`expand`].

mod check;
mod ctxt;
mod expand;
mod model;
mod parse;

use proc_macro2::TokenStream;

use ctxt::Ctxt;

/// Expands one `graph! { .. }`.
pub(crate) fn graph(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let mut out = TokenStream::new();
    let mut name = "graph".to_owned();
    if let Some(input) = parse::parse(&cx, input) {
        if let Some(g) = model::Graph::from_input(&cx, input) {
            name = g.name();
            check_policies(&cx, &g);
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

// Rule: `retry`, `timeout`, `interrupt_before` and `interrupt_after` need the runtime's policies,
// which are not on main yet.
fn check_policies(cx: &Ctxt, g: &model::Graph) {
    if expand::RUNTIME_HAS_POLICIES {
        return;
    }
    for node in &g.nodes {
        let o = &node.options;
        let spans = [
            (o.retry.as_ref().map(|r| r.0), parse::RETRY),
            (o.timeout.as_ref().map(|t| t.0), parse::TIMEOUT),
            (o.interrupt_before, parse::INTERRUPT_BEFORE),
            (o.interrupt_after, parse::INTERRUPT_AFTER),
        ];
        for (span, what) in spans {
            if let Some(span) = span {
                cx.error_at(
                    span,
                    format!(
                        "`{what}` is not supported yet: this runtime has no `GraphBuilder::{what}`"
                    ),
                );
            }
        }
    }
}
