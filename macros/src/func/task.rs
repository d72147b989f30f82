//! `#[task]`: the function keeps its name and arguments and returns a `TaskFuture` of its value.
//! Its body moves into an inner function; the outer one saves the arguments' JSON and hands
//! `call_task` a closure that decodes them for each attempt and runs the body.

use super::attr::TaskAttr;
use super::sig::{args, returns};
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(super) fn expand(cx: &Ctxt, attr: TokenStream, func: syn::ItemFn) -> TokenStream {
    let attr = TaskAttr::parse(cx, attr);
    let args = args(cx, &func.sig, "task");
    let ret = returns(&func.sig.output);
    let fn_name = &func.sig.ident;
    let name = attr
        .name
        .as_ref()
        .map_or_else(|| fn_name.to_string(), syn::LitStr::value);
    let options = attr.options(&name);
    let names: Vec<_> = args.iter().map(|a| &a.name).collect();
    let types: Vec<_> = args.iter().map(|a| a.ty).collect();
    let asserts = types
        .iter()
        .map(|t| quote_spanned!(t.span()=> const _: () = ::weir::__private::func::assert_saved::<#t>();));
    let value = &ret.value;
    let value_assert = match &func.sig.output {
        syn::ReturnType::Type(_, t) => {
            quote_spanned!(t.span()=> const _: () = ::weir::__private::func::assert_saved::<#value>();)
        }
        syn::ReturnType::Default => TokenStream::new(),
    };
    let inner = format_ident!("__weir_task_{}", fn_name);
    let mut body_fn = func.clone();
    body_fn.sig.ident = inner.clone();
    body_fn.vis = syn::Visibility::Inherited;
    body_fn.attrs.retain(|a| !a.path().is_ident("doc"));
    let call = if func.sig.asyncness.is_some() {
        quote!(#inner(#(#names),*).await)
    } else {
        quote!(#inner(#(#names),*))
    };
    let result = if ret.fallible {
        quote!(::weir::__private::func::task_result(#call))
    } else {
        quote!(::core::result::Result::Ok(#call))
    };
    let vis = &func.vis;
    let attrs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    quote! {
        #(#attrs)*
        #vis fn #fn_name(#(#names: #types),*) -> ::weir::__private::func::TaskFuture<#value> {
            #(#asserts)*
            #value_assert
            #[allow(clippy::all, clippy::pedantic)]
            #body_fn
            let __weir_args = ::weir::__private::func::task_args(&(#(&#names,)*));
            ::weir::__private::func::call_task(#options, __weir_args, |__weir_args| async move {
                let (#(#names,)*): (#(#types,)*) = ::weir::__private::func::decode_args(#name, __weir_args)?;
                #result
            })
        }
    }
}
