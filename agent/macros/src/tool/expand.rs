//! The items `#[tool]` generates: the fn unchanged, a unit struct named after it, and (inside
//! `const _`) its `Tool` impl, which reads each argument with a helper bounded on `ToolArg`, at
//! the argument's tokens, so a type that cannot be an argument gets one clear error.

use super::ast::{Done, Param};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::ItemFn;

/// The fn, its unit struct, and the struct's `Tool` impl.
pub(crate) fn tool(d: &Done<'_>) -> TokenStream {
    let func = d.f.func;
    let (fn_name, ty) = (&func.sig.ident, &d.type_name);
    let (name, description) = (&d.name, &d.description);
    let mut specs = Vec::new();
    let mut unpack = Vec::new();
    let mut call_args = Vec::new();
    let mut whole = None;
    for p in &d.f.params {
        match p {
            Param::Named(ident, t) => {
                let key = ident.to_string().trim_start_matches("r#").to_owned();
                specs.push(quote_spanned!(t.span()=> (#key, __weir::arg_schema::<#t> as __weir::ArgSchema)));
                unpack.push(quote_spanned!(t.span()=> let #ident: #t = __weir::take::<#t>(&mut __weir_args, #key)?;));
                call_args.push(ident.to_token_stream());
            }
            Param::Whole(_, t) => {
                unpack.push(quote_spanned!(t.span()=> let __weir_whole: #t = __weir::parse::<#t>(__weir_args)?;));
                call_args.push(quote!(__weir_whole));
                whole = Some(*t);
            }
            Param::Context => call_args.push(quote!(__weir_ctx)),
        }
    }
    let spec = match whole {
        Some(t) => quote_spanned!(t.span()=> __weir::spec::<#t>(#name, #description)),
        None => quote!(__weir::args_spec(#name, #description, &[#(#specs),*])),
    };
    let awaited = func.sig.asyncness.map(|_| quote!(.await));
    let out_span = match &func.sig.output {
        syn::ReturnType::Type(_, t) => t.span(),
        syn::ReturnType::Default => fn_name.span(),
    };
    let finish = if d.f.returns_result {
        quote_spanned!(out_span=> __weir::output(__weir_out.map_err(__weir::failed)?))
    } else {
        quote_spanned!(out_span=> __weir::output(__weir_out))
    };
    let doc = format!(
        "The tool `{name}`, made by `#[tool]` from [`{fn_name}`]: `{ty}::tool()` for a tool list, or use it \
         as a [`Tool`](::weir_agent::tool::Tool)."
    );
    let vis = &func.vis;
    quote! {
        #func

        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #ty;

        #[allow(non_camel_case_types, non_snake_case, clippy::all)]
        const _: () = {
            use ::weir_agent::__private as __weir;

            #[automatically_derived]
            impl #ty {
                /// This tool, shared, for a tool list: `react_agent(model, [Tool::tool()])`.
                #vis fn tool() -> __weir::Arc<dyn __weir::Tool> {
                    __weir::Arc::new(#ty)
                }
            }

            #[automatically_derived]
            impl __weir::Tool for #ty {
                fn spec(&self) -> &__weir::ToolSpec {
                    static __WEIR_SPEC: __weir::OnceLock<__weir::ToolSpec> = __weir::OnceLock::new();
                    __WEIR_SPEC.get_or_init(|| #spec)
                }

                fn call<'__weir>(
                    &'__weir self,
                    mut __weir_args: __weir::Map,
                    __weir_ctx: &'__weir __weir::Context,
                ) -> __weir::BoxFuture<'__weir, ::core::result::Result<__weir::Content, __weir::ToolError>> {
                    __weir::Box::pin(async move {
                        let _ = (__weir_ctx, &mut __weir_args);
                        #(#unpack)*
                        let __weir_out = #fn_name(#(#call_args),*) #awaited;
                        #finish
                    })
                }
            }
        };
    }
}

/// After an error: the fn unchanged and the errors, plus the unit struct with a stub impl when
/// the fn could have one, so uses of the tool do not add errors of their own.
pub(crate) fn fallback(func: &ItemFn, e: &syn::Error) -> TokenStream {
    let mut out = e.to_compile_error();
    func.to_tokens(&mut out);
    let free = !func.sig.inputs.iter().any(|i| matches!(i, syn::FnArg::Receiver(_)));
    if free {
        let ty = format_ident!(
            "{}",
            super::ast::camel_case(&func.sig.ident.to_string()),
            span = func.sig.ident.span()
        );
        let vis = &func.vis;
        out.extend(quote! {
            #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
            #vis struct #ty;
            #[allow(clippy::all)]
            const _: () = {
                use ::weir_agent::__private as __weir;
                impl #ty {
                    #vis fn tool() -> __weir::Arc<dyn __weir::Tool> {
                        ::core::unreachable!()
                    }
                }
            };
        });
    }
    out
}
