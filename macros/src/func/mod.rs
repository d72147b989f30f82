//! `#[task]` and `#[entrypoint]`: the functional API's front end. `attr.rs` reads a task's
//! options, `sig.rs` reads the signatures (a task's named serde arguments, an entrypoint's one
//! input and its injected `previous` and context), `task.rs` and `entry.rs` expand them into calls
//! of `weir::func`.

mod attr;
mod entry;
mod sig;
mod task;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;

/// Expands `#[task(..)]` on a function.
pub(crate) fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_with(args, item, "task", task::expand)
}

/// Expands `#[entrypoint]` on a function.
pub(crate) fn entrypoint(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_with(args, item, "entrypoint", entry::expand)
}

fn expand_with(
    args: TokenStream,
    item: TokenStream,
    what: &str,
    f: fn(&Ctxt, TokenStream, syn::ItemFn) -> TokenStream,
) -> TokenStream {
    let cx = Ctxt::new();
    let mut out = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => f(&cx, args, func),
        Err(e) => {
            cx.error_spanned_by(&item, format!("`#[{what}]` goes on a function: {e}"));
            TokenStream::new()
        }
    };
    if let Err(e) = cx.check() {
        let errors = e.to_compile_error();
        out = quote::quote!(#errors #out);
    }
    if std::env::var("WEIR_MACROS_DEBUG").is_ok_and(|v| v == what || v == "*") {
        eprintln!("#[{what}] expands to:\n{out}");
    }
    out
}
