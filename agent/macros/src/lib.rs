//! Procedural macros of weir-agent: `#[tool]`, which makes a typed Rust fn into a tool a model
//! can call.
//!
//! Use it through `weir_agent::tool` (re-exported there with its documentation); the generated
//! code names only `::weir_agent::__private::…` and `::core::…` paths. The work is in `tool/`,
//! split by phase: `attr.rs` (the attribute's options), `ast.rs` (the fn read into a model, every
//! rule checked), `expand.rs` (the generated items).

#![forbid(unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub)]

mod tool;

use proc_macro::TokenStream;

/// Makes a fn into a tool; see `weir_agent::tool` for the rules and the generated items.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}
