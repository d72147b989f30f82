//! The names the expansion shares: the crate path, the generated types, `where` clauses.

use super::super::ast::Input;
use proc_macro2::{Literal, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::DeriveInput;

/// The names the expansion shares: the crate path and the generated types.
pub(super) struct Names<'a> {
    pub(super) node: &'a DeriveInput,
    /// `#krate::__private`.
    pub(super) private: TokenStream,
    pub(super) update: syn::Ident,
    pub(super) channels: syn::Ident,
    /// The struct's type and const parameters.
    pub(super) params: Vec<syn::Ident>,
}

impl<'a> Names<'a> {
    pub(super) fn new(node: &'a DeriveInput, input: Option<&Input<'_>>) -> Self {
        let name = &node.ident;
        let attrs = input.map(|i| &i.attrs);
        let krate = attrs
            .and_then(|a| a.krate.as_ref())
            .map_or_else(|| quote!(::weir), ToTokens::to_token_stream);
        let update = attrs
            .and_then(|a| a.update.clone())
            .unwrap_or_else(|| format_ident!("{}Update", name, span = name.span()));
        let generics = &node.generics;
        let params = generics
            .type_params()
            .map(|p| p.ident.clone())
            .chain(generics.const_params().map(|p| p.ident.clone()))
            .collect();
        Self {
            node,
            private: quote!(#krate::__private),
            update,
            channels: format_ident!("__Weir{}Channels", name),
            params,
        }
    }

    /// Whether `tokens` name one of the struct's type or const parameters.
    pub(super) fn is_generic(&self, tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tt| match tt {
            TokenTree::Ident(i) => self.params.contains(&i),
            TokenTree::Group(g) => self.is_generic(g.stream()),
            _ => false,
        })
    }

    /// Bounds that make the generated impls hold for a generic struct (none for a plain one).
    pub(super) fn static_params(&self) -> Vec<TokenStream> {
        let name = &self.node.ident;
        let (_, ty_generics, _) = self.node.generics.split_for_impl();
        let mut out = Vec::new();
        if !self.params.is_empty() {
            out.push(quote! {
                #name #ty_generics: ::core::clone::Clone + ::core::fmt::Debug + ::core::marker::Send
                    + ::core::marker::Sync + 'static
            });
        }
        for p in self.node.generics.type_params() {
            let ident = &p.ident;
            out.push(quote!(#ident: 'static));
        }
        out
    }
}

/// A `where` clause: the struct's own predicates, then `extra`.
pub(super) fn where_clause(node: &DeriveInput, extra: &[TokenStream]) -> TokenStream {
    let own = node.generics.where_clause.as_ref().map(|w| &w.predicates);
    let own = own.into_iter().flat_map(|p| p.iter());
    quote!(where #(#own,)* #(#extra,)*)
}

pub(super) fn index(i: usize) -> Literal {
    Literal::usize_unsuffixed(i)
}
