//! The generated code: `GraphBuilder` calls with static node indices, spanned assertions at the
//! user's tokens, and the Mermaid drawing.
//!
//! Generated code names only `::weir::__private::…` and `::core::…`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::LitStr;

use super::check::Checked;
use super::model::{Graph, RouteKind};
use super::parse::{Duration, Func, Ref, Retry};

/// The expansion: an expression of type `GraphBuilder<S>`, or, for `struct Name;`, the type
/// `Name` with `MERMAID`, `NODES`, `builder()` and `compile()`.
pub(crate) fn expand(g: &Graph, checked: &Checked) -> TokenStream {
    let s = &g.state;
    let c = context_type(g);
    let body = builder_body(g, checked);
    let build = quote! {
        {
            #[allow(unused_mut, unused_variables, clippy::all, clippy::pedantic)]
            let __weir_graph = #body;
            __weir_graph
        }
    };
    let Some(super::parse::Item { attrs, vis, name }) = &g.item else {
        return build;
    };
    let mermaid = weir_topology::mermaid(&checked.topology);
    let names = g.nodes.iter().map(|n| n.name.to_string());
    let doc = format!(
        "The graph over `{}` declared with `graph!`. `{name}::compile()` builds it; \
         `{name}::MERMAID` draws it.",
        tokens_to_string(s)
    );
    let doc = if attrs.iter().any(|a| a.path().is_ident("doc")) {
        quote!()
    } else {
        quote!(#[doc = #doc])
    };
    quote! {
        #(#attrs)*
        #doc
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #name;

        #[automatically_derived]
        #[allow(dead_code)]
        impl #name {
            /// The graph as a Mermaid flowchart; conditional edges are dashed and labelled.
            #vis const MERMAID: &'static str = #mermaid;
            /// The node names, in the order of their ids.
            #vis const NODES: &'static [&'static str] = &[#(#names),*];

            /// The graph's builder, with every node, edge and router added.
            #vis fn builder() -> ::weir::__private::GraphBuilder<#s, #c> #build

            /// Builds and compiles the graph.
            ///
            /// # Errors
            /// The runtime's own build errors (the wiring was already checked by `graph!`).
            #vis fn compile() -> ::core::result::Result<
                ::weir::__private::CompiledGraph<#s, #c>,
                ::weir::__private::BuildError,
            > {
                Self::builder().compile()
            }
        }
    }
}

/// `{ let mut __weir_g = GraphBuilder::new(); ...; __weir_g }`.
fn builder_body(g: &Graph, checked: &Checked) -> TokenStream {
    let s = &g.state;
    let mut new = quote_spanned!(type_span(s)=> ::weir::__private::GraphBuilder::<#s>::new());
    if let Some(c) = &g.context {
        new = quote_spanned!(type_span(c)=> #new.context::<#c>());
    }
    let mut out = TokenStream::new();
    for (i, node) in g.nodes.iter().enumerate() {
        out.extend(add_node(g, i));
        out.extend(node_options(g, i, &node.options));
    }
    for (from, to) in &g.edges {
        let (from, to) = (node_ref(g, from), node_ref(g, to));
        out.extend(quote!(__weir_g.add_edge(#from, #to);));
    }
    for j in &g.joins {
        let from = j.from.iter().map(|r| node_ref(g, r));
        let to = node_ref(g, &j.to);
        out.extend(quote!(__weir_g.add_join([#(#from),*], #to);));
    }
    for r in &g.routes {
        out.extend(route(g, r));
    }
    for c in &checked.conflicts {
        let field = LitStr::new(&c.field, c.span);
        let message = LitStr::new(&c.message.replace('{', "{{").replace('}', "}}"), c.span);
        out.extend(quote_spanned! {c.span=>
            const _: () = ::core::assert!(
                !::weir::__private::field_takes_one_write::<#s>(#field),
                #message
            );
        });
    }
    quote! {
        {
            let mut __weir_g = #new;
            #out
            __weir_g
        }
    }
}

/// The graph's context type: the declared one, or `()`.
fn context_type(g: &Graph) -> TokenStream {
    g.context.as_ref().map_or_else(|| quote!(()), ToTokens::to_token_stream)
}

/// The local holding node `i`'s handle.
fn handle(i: usize) -> syn::Ident {
    format_ident!("__weir_node_{}", i)
}

/// `let __weir_node_i = NodeFunction::add_to(f, &mut g, "name");`, spanned at the function so a
/// function that does not fit the state is reported there.
fn add_node(g: &Graph, i: usize) -> TokenStream {
    let s = &g.state;
    let c = context_type(g);
    let node = &g.nodes[i];
    let (h, func, name) = (handle(i), &node.func, node.name.to_string());
    let span = node.func.span();
    if node.send_only {
        quote_spanned! {span=>
            let #h = ::weir::__private::SendNodeFunction::<#s, #c, _, _>::add_to(#func, &mut __weir_g, #name);
        }
    } else {
        quote_spanned! {span=>
            let #h = ::weir::__private::NodeFunction::<#s, #c, _>::add_to(#func, &mut __weir_g, #name);
        }
    }
}

/// `defer`, `writes(..)` and the policies of node `i`.
fn node_options(g: &Graph, i: usize, o: &super::parse::NodeOptions) -> TokenStream {
    let s = &g.state;
    let id = quote!(::weir::__private::NodeId::from_index(#i));
    let mut out = TokenStream::new();
    if o.defer.is_some() {
        out.extend(quote!(__weir_g.defer(#id);));
    }
    if let Some((_, targets)) = &o.goto {
        let targets = targets.iter().map(|t| node_ref(g, t));
        out.extend(quote!(__weir_g.declare_destinations(#id, [#(#targets),*]);));
    }
    if let Some((_, fields)) = &o.writes {
        let state = tokens_to_string(s);
        let consts = fields.iter().enumerate().map(|(k, f)| {
            let c = format_ident!("__WEIR_FIELD_{}_{}", i, k, span = f.span());
            let name = LitStr::new(&f.to_string(), f.span());
            let message = LitStr::new(
                &format!("`{f}` is not a field of `{state}`; `writes(..)` lists fields of the state"),
                f.span(),
            );
            quote_spanned! {f.span()=>
                const #c: usize = match ::weir::__private::field_index::<#s>(#name) {
                    ::core::option::Option::Some(i) => i,
                    ::core::option::Option::None => ::core::panic!(#message),
                };
            }
        });
        let names = fields
            .iter()
            .enumerate()
            .map(|(k, f)| format_ident!("__WEIR_FIELD_{}_{}", i, k, span = f.span()));
        out.extend(quote! {
            #(#consts)*
            __weir_g.declare_writes(#id, [#(#names),*]);
        });
    }
    if let Some((_, r)) = &o.retry {
        let policy = retry_policy(r);
        out.extend(quote!(__weir_g.retry(#id, #policy);));
    }
    if let Some((_, d)) = o.timeout {
        let d = duration(d);
        out.extend(quote!(__weir_g.timeout(#id, #d);));
    }
    if o.interrupt_before.is_some() {
        out.extend(quote!(__weir_g.interrupt_before(#id);));
    }
    if o.interrupt_after.is_some() {
        out.extend(quote!(__weir_g.interrupt_after(#id);));
    }
    out
}

/// The `RetryPolicy` a `retry(..)` option describes.
pub(crate) fn retry_policy(r: &Retry) -> TokenStream {
    let attempts = r
        .max_attempts
        .as_ref()
        .map_or_else(|| quote!(3), ToTokens::to_token_stream);
    let mut policy = quote!(::weir::__private::RetryPolicy::new(#attempts));
    if let Some(d) = r.initial_interval {
        let d = duration(d);
        policy = quote!(#policy.initial_interval(#d));
    }
    if let Some(f) = &r.backoff_factor {
        policy = quote!(#policy.backoff_factor(#f as f64));
    }
    if let Some(d) = r.max_interval {
        let d = duration(d);
        policy = quote!(#policy.max_interval(#d));
    }
    if let Some(b) = &r.jitter {
        policy = quote!(#policy.jitter(#b));
    }
    policy
}

pub(crate) fn duration(d: Duration) -> TokenStream {
    let ms = d.millis;
    quote!(::core::time::Duration::from_millis(#ms))
}

/// A `NodeRef`. A name that is not a node was reported already; it stands in as `END`.
fn node_ref(g: &Graph, r: &Ref) -> TokenStream {
    match (r, g.index(r)) {
        (Ref::Start(_), _) => quote!(::weir::__private::NodeRef::Start),
        (_, Some(i)) => {
            quote!(::weir::__private::NodeRef::Id(::weir::__private::NodeId::from_index(#i)))
        }
        _ => quote!(::weir::__private::NodeRef::End),
    }
}

/// A `Goto`: where an arm of a route leads.
fn goto(g: &Graph, r: &Ref) -> TokenStream {
    let s = &g.state;
    match g.index(r) {
        Some(i) => {
            quote_spanned!(r.span()=> ::weir::__private::Goto::<#s>::Node(::weir::__private::NodeId::from_index(#i)))
        }
        None => quote_spanned!(r.span()=> ::weir::__private::Goto::<#s>::End),
    }
}

/// A router: a `match` over what the router returns, spanned at the router so that rustc's
/// exhaustiveness check reports an unmapped variant there; or one `Send` per payload.
fn route(g: &Graph, r: &super::model::Route) -> TokenStream {
    let s = &g.state;
    let c = context_type(g);
    let from = node_ref(g, &r.from);
    let span = r.router.span();
    let router = &r.router;
    if r.reads_context.is_some() && g.context.is_none() {
        // Reported by the checks; the router stays used, so that one mistake is one error.
        return quote!(let _ = &#router;);
    }
    // A router reading the context takes it as a second argument, `&C`; a path is called
    // through `ContextRouter`, whose failure says the context type is not the graph's.
    let (call, add, params) = match (router, r.reads_context) {
        (Func::Path(_), None) => (
            quote_spanned!(span=> #router(__weir_s)),
            quote!(add_router),
            quote!(__weir_s: &#s),
        ),
        (Func::Expr(..), None) => (
            quote_spanned!(span=> (#router)(__weir_s)),
            quote!(add_router),
            quote!(__weir_s: &#s),
        ),
        (Func::Path(_), Some(_)) => (
            quote_spanned!(span=> ::weir::__private::ContextRouter::<#s, #c, _>::call(&#router, __weir_s, __weir_c)),
            quote!(add_router_with_context),
            quote!(__weir_s: &#s, __weir_c: &#c),
        ),
        (Func::Expr(..), Some(_)) => (
            quote_spanned!(span=> (#router)(__weir_s, __weir_c)),
            quote!(add_router_with_context),
            quote!(__weir_s: &#s, __weir_c: &#c),
        ),
    };
    let targets = r.targets().into_iter().map(|t| node_ref(g, t));
    let targets = quote!([#(#targets),*]);
    match &r.kind {
        RouteKind::One(arms) => {
            let arms = arms.iter().map(|a| {
                let (pat, to) = (&a.pat, goto(g, &a.to));
                quote!(#pat => #to,)
            });
            let scrutinee = quote_spanned!(span=> #call);
            quote! {
                __weir_g.#add(
                    #from,
                    move |#params| -> ::weir::__private::Goto<#s> {
                        match #scrutinee { #(#arms)* }
                    },
                    #targets,
                );
            }
        }
        RouteKind::Many(arms) => {
            let arms = arms.iter().map(|a| {
                let (pat, to) = (&a.pat, goto(g, &a.to));
                quote!(#pat => #to,)
            });
            let v = quote_spanned!(span=> __weir_v);
            quote! {
                __weir_g.#add(
                    #from,
                    move |#params| -> ::weir::__private::Vec<::weir::__private::Goto<#s>> {
                        ::core::iter::Iterator::collect(::core::iter::Iterator::map(
                            ::core::iter::IntoIterator::into_iter(#call),
                            |__weir_v| match #v { #(#arms)* },
                        ))
                    },
                    #targets,
                );
            }
        }
        RouteKind::Send(to) => {
            let Some(i) = g.index(to) else {
                return TokenStream::new();
            };
            let h = handle(i);
            let send = quote_spanned!(to.span()=> ::weir::__private::send_to(&__weir_h, #call));
            quote! {
                {
                    let __weir_h = ::core::clone::Clone::clone(&#h);
                    __weir_g.#add(
                        #from,
                        move |#params| -> ::weir::__private::Vec<::weir::__private::Goto<#s>> { #send },
                        #targets,
                    );
                }
            }
        }
    }
}

fn type_span(ty: &syn::Type) -> Span {
    syn::spanned::Spanned::span(ty)
}

/// `crate::Research` rather than `crate :: Research`.
pub(crate) fn tokens_to_string(t: &impl ToTokens) -> String {
    t.to_token_stream()
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" >", ">")
}
