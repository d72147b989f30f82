//! `#[tool]`: a fn read into a [`ast::ToolFn`] (every rule checked, all errors reported at once),
//! then expanded into a unit struct implementing `weir_agent::tool::Tool`.

mod ast;
mod attr;
mod expand;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// The expansion of `#[tool(args)] item`: the item unchanged, plus the tool, or the errors.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let item: syn::Item = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let syn::Item::Fn(func) = item else {
        let (span, what) = item_kind(&item);
        let msg = format!(
            "`#[tool]` goes on a fn, not on {what}; to make a type a tool, implement \
             `weir_agent::tool::Tool` for it"
        );
        let mut out = syn::Error::new(span, msg).to_compile_error();
        item.to_tokens(&mut out);
        return out;
    };
    let attr = attr::parse(args);
    match (attr, ast::ToolFn::read(&func)) {
        (Ok(attr), Ok(model)) => match model.finish(&attr) {
            Ok(done) => expand::tool(&done),
            Err(e) => expand::fallback(&func, &e),
        },
        (Err(mut a), Err(b)) => {
            a.combine(b);
            expand::fallback(&func, &a)
        }
        (Err(e), _) | (_, Err(e)) => expand::fallback(&func, &e),
    }
}

/// Where a non-fn item starts, and what to call it in the error.
fn item_kind(item: &syn::Item) -> (Span, &'static str) {
    use syn::spanned::Spanned;
    match item {
        syn::Item::Struct(s) => (s.struct_token.span, "a struct"),
        syn::Item::Enum(e) => (e.enum_token.span, "an enum"),
        syn::Item::Impl(i) => (i.impl_token.span, "an impl block"),
        syn::Item::Trait(t) => (t.trait_token.span, "a trait"),
        syn::Item::Mod(m) => (m.mod_token.span, "a module"),
        syn::Item::Const(c) => (c.const_token.span, "a const"),
        syn::Item::Static(s) => (s.static_token.span, "a static"),
        syn::Item::Type(t) => (t.type_token.span, "a type alias"),
        other => (other.span(), "this item"),
    }
}
