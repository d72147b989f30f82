//! Printing the expansion, for whoever debugs the macro.

use proc_macro2::TokenStream;
use syn::DeriveInput;

/// `WEIR_MACROS_DEBUG=<StructName>` prints the expansion to stderr.
pub(crate) fn debug_print(node: &DeriveInput, tokens: &TokenStream) {
    if std::env::var("WEIR_MACROS_DEBUG").is_ok_and(|v| node.ident == v) {
        eprintln!("#[derive(State)] for `{}`:\n{tokens}", node.ident);
    }
}
