//! What the functional macros read of a signature: its arguments as `name: Type` pairs, and its
//! return type split into the value and whether it is a `Result`.

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, Pat, ReturnType, Type};

/// One argument: its name (without `mut`), its pattern as written, and its type.
pub(super) struct Arg<'a> {
    pub(super) name: syn::Ident,
    pub(super) ty: &'a Type,
}

/// The arguments of `sig`, each a plain `name: Type`; anything else is reported.
pub(super) fn args<'a>(cx: &Ctxt, sig: &'a syn::Signature, what: &str) -> Vec<Arg<'a>> {
    let mut out = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => cx.error_spanned_by(r, format!("a {what} is a free function, not a method")),
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => out.push(Arg {
                    name: p.ident.clone(),
                    ty: &t.ty,
                }),
                other => cx.error_spanned_by(other, format!("a {what}'s arguments are named: `name: Type`")),
            },
        }
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            format!("a {what} cannot be generic: its values are saved by type"),
        );
    }
    out
}

/// A function's return type: the value (`()` when none is written) and, for a `Result<T, E>`,
/// `T` (the value) with `fallible` set.
pub(super) struct Returns {
    pub(super) value: TokenStream,
    pub(super) fallible: bool,
}

pub(super) fn returns(output: &ReturnType) -> Returns {
    let ty = match output {
        ReturnType::Default => {
            return Returns {
                value: quote!(()),
                fallible: false,
            }
        }
        ReturnType::Type(_, ty) => ty,
    };
    if let Some(ok) = result_ok(ty) {
        return Returns {
            value: quote!(#ok),
            fallible: true,
        };
    }
    Returns {
        value: quote!(#ty),
        fallible: false,
    }
}

/// `T` of a type written `Result<T, ..>` (any path ending in `Result`).
fn result_ok(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    a.args.iter().find_map(|g| match g {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// Whether `ty` is `Context` or `&Context` (any path ending in `Context`).
pub(super) fn is_context(ty: &Type) -> Option<bool> {
    let (inner, by_ref) = match ty {
        Type::Reference(r) => (&*r.elem, true),
        t => (t, false),
    };
    let Type::Path(p) = inner else { return None };
    (p.path.segments.last()?.ident == "Context").then_some(by_ref)
}
