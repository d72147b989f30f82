//! `#[entrypoint]`: the function becomes one returning its `weir::func::Entrypoint` (compile it,
//! with a checkpointer, to run it). Its one input is its first argument; `previous` (an
//! `Option` of the value the last call on the thread saved) and a `Context` or `&Context` are
//! injected wherever they stand.

use super::sig::{args, is_context, returns};
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(super) fn expand(cx: &Ctxt, attr: TokenStream, func: syn::ItemFn) -> TokenStream {
    if !attr.is_empty() {
        cx.error_spanned_by(
            &attr,
            "`#[entrypoint]` takes no options: give the checkpointer and store to the `Entrypoint` it returns",
        );
    }
    let args = args(cx, &func.sig, "entrypoint");
    let mut input = None;
    let mut second_input = false;
    let mut call_args = Vec::new();
    for a in &args {
        if a.name == "previous" {
            call_args.push(quote!(__weir_previous));
        } else if let Some(by_ref) = is_context(a.ty) {
            call_args.push(if by_ref {
                quote!(&__weir_ctx)
            } else {
                quote!(__weir_ctx.clone())
            });
        } else if input.is_none() {
            input = Some(a.ty);
            call_args.push(quote!(__weir_input));
        } else {
            // An entrypoint has one input (LangGraph's `@entrypoint` takes a one-argument function).
            second_input = true;
            cx.error_spanned_by(
                &a.name,
                format!(
                    "an entrypoint takes one input, and `{}` is a second: pass several values as one struct or tuple \
                     (besides it, only `previous` and a `Context` may be taken)",
                    a.name
                ),
            );
        }
    }
    let Some(input) = input else {
        cx.error_spanned_by(&func.sig, "an entrypoint takes one input: add an argument for it");
        return TokenStream::new();
    };
    let ret = returns(&func.sig.output);
    let value = &ret.value;
    let fn_name = &func.sig.ident;
    let name = fn_name.to_string();
    let inner = format_ident!("__weir_entry_{}", fn_name);
    let mut body_fn = func.clone();
    body_fn.sig.ident = inner.clone();
    body_fn.vis = syn::Visibility::Inherited;
    body_fn.attrs.retain(|a| !a.path().is_ident("doc"));
    let call = if func.sig.asyncness.is_some() {
        quote!(#inner(#(#call_args),*).await)
    } else {
        quote!(#inner(#(#call_args),*))
    };
    let result = if ret.fallible {
        quote!(::weir::__private::func::task_result(#call))
    } else {
        quote!(::core::result::Result::<_, ::weir::__private::BoxError>::Ok(#call))
    };
    let vis = &func.vis;
    if second_input {
        // The expected shape only, so that the one mistake gives one error.
        return quote! {
            #vis fn #fn_name() -> ::weir::__private::func::Entrypoint<#input, #value> {
                ::core::unreachable!()
            }
        };
    }
    let input_assert = quote_spanned!(input.span()=> const _: () = ::weir::__private::func::assert_saved::<#input>(););
    let attrs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    quote! {
        #(#attrs)*
        #vis fn #fn_name() -> ::weir::__private::func::Entrypoint<#input, #value> {
            #input_assert
            #[allow(clippy::all, clippy::pedantic)]
            #body_fn
            ::weir::__private::func::Entrypoint::new(
                #name,
                |__weir_input: #input, __weir_previous, __weir_ctx: ::weir::__private::Context| async move {
                    #result
                },
            )
        }
    }
}
