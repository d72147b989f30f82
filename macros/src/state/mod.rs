//! `#[derive(State)]`, by phase: `attr` parses the attributes, `ast` builds the model, `valid`
//! checks the rules that span fields, `expand` writes the code (or the stubs after an error).

mod ast;
mod attr;
mod expand;
mod valid;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use syn::DeriveInput;

/// The expansion of `#[derive(State)]` on `node`: the code, or every error found plus stubs.
pub(crate) fn derive(node: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let input = ast::Input::from_syn(&cx, node);
    if let Some(input) = &input {
        input.validate(&cx);
    }
    let tokens = match cx.check() {
        Ok(()) => expand::expand(input.as_ref().expect("a valid input has a model")),
        Err(errors) => {
            let errors = errors.to_compile_error();
            let stubs = expand::fallback(node, input.as_ref());
            quote::quote!(#errors #stubs)
        }
    };
    expand::debug_print(node, &tokens);
    tokens
}
