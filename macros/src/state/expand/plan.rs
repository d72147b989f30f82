//! What one field generates: its channel kind and types, planned before any code is written.

use super::super::ast::Field;
use super::super::attr::{Kind, Reducer};
use super::names::Names;
use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

/// What one field generates.
pub(super) struct Plan<'a> {
    pub(super) field: &'a Field<'a>,
    /// The field's name without `r#`.
    pub(super) name: String,
    pub(super) kind: TokenStream,
    pub(super) channel_ty: TokenStream,
    pub(super) channel_new: TokenStream,
    /// The type a task writes: `T`, or `ReducerWrite<U, T>` for a reducer.
    pub(super) write_ty: TokenStream,
    /// The type the builder method takes: `T`, or `U` for a `with` reducer with `update = U`.
    pub(super) arg_ty: TokenStream,
    pub(super) reducer: bool,
    /// `#[reducer(append)]` or `with` on a `Vec`: checkpoints may store only the items appended
    /// since the last one, while the reducer reports only appends.
    pub(super) append: bool,
    /// The run's input writes the field as an overwrite (a reducer whose write type is not `T`).
    pub(super) input_overwrite: bool,
    pub(super) generic: bool,
    /// The extra bounds a generic field needs.
    pub(super) bounds: Vec<TokenStream>,
}

impl<'a> Plan<'a> {
    pub(super) fn new(names: &Names<'_>, field: &'a Field<'a>) -> Self {
        let p = &names.private;
        let ty = field.ty;
        let update_ty = field.attrs.update.as_ref();
        let arg_ty = update_ty.map_or_else(|| ty.to_token_stream(), ToTokens::to_token_stream);
        let generic =
            names.is_generic(ty.to_token_stream()) || update_ty.is_some_and(|u| names.is_generic(u.to_token_stream()));
        let simple = |kind: TokenStream, channel_ty: TokenStream, channel_new: TokenStream| Plan {
            field,
            name: field.ident.unraw().to_string(),
            kind,
            channel_ty,
            channel_new,
            write_ty: ty.to_token_stream(),
            arg_ty: arg_ty.clone(),
            reducer: false,
            append: false,
            input_overwrite: false,
            generic,
            bounds: Vec::new(),
        };
        let kind = field.attrs.kind.as_ref().map(|(k, _)| k);
        match kind {
            None | Some(Kind::LastValue) => simple(
                quote!(#p::ChannelKind::LastValue),
                quote!(#p::LastValue),
                quote!(#p::LastValue::new()),
            ),
            Some(Kind::Any) => simple(
                quote!(#p::ChannelKind::AnyValue),
                quote!(#p::AnyValue),
                quote!(#p::AnyValue::new()),
            ),
            Some(Kind::Ephemeral { guard }) => {
                let new = if *guard { quote!(new) } else { quote!(unguarded) };
                simple(
                    quote!(#p::ChannelKind::Ephemeral),
                    quote!(#p::EphemeralValue),
                    quote!(#p::EphemeralValue::#new()),
                )
            }
            Some(Kind::Untracked { guard }) => {
                let new = if *guard { quote!(new) } else { quote!(unguarded) };
                simple(
                    quote!(#p::ChannelKind::Untracked),
                    quote!(#p::UntrackedValue),
                    quote!(#p::UntrackedValue::#new()),
                )
            }
            Some(Kind::Topic { accumulate }) => {
                let new = if *accumulate { quote!(accumulate) } else { quote!(new) };
                simple(
                    quote!(#p::ChannelKind::Topic { accumulate: #accumulate }),
                    quote!(#p::Topic),
                    quote!(#p::Topic::#new()),
                )
            }
            Some(Kind::AfterFinish) => simple(
                quote!(#p::ChannelKind::LastValueAfterFinish),
                quote!(#p::LastValueAfterFinish),
                quote!(#p::LastValueAfterFinish::new()),
            ),
            Some(Kind::Reducer(reducer)) => Self::reducer(p, field, reducer, arg_ty, generic),
        }
    }

    /// The plan of a reducer field: its channel folds each write into the value through the
    /// reducer, and the builder also has `overwrite_<field>`.
    fn reducer(p: &TokenStream, field: &'a Field<'a>, reducer: &Reducer, arg_ty: TokenStream, generic: bool) -> Self {
        let ty = field.ty;
        let span = ty.span();
        let update_ty = field.attrs.update.as_ref();
        // The reducer is called through a check trait, at the user's tokens: a field type
        // the reducer does not fit is reported there, with the trait's message.
        let (check, reduce) = match reducer {
            Reducer::Append => (Some(quote!(AppendField)), None),
            Reducer::Add => (Some(quote!(AddField)), None),
            Reducer::Merge => (Some(quote!(MergeField)), None),
            Reducer::With(path) => (None, Some(path)),
        };
        let u = arg_ty.clone();
        // `append` and `with` reducers report whether a write only appended (a `with` reducer
        // that says nothing reports a rewrite); `add` and `merge` do not.
        let (fold, new) = match (&check, reduce) {
            (Some(check), _) if matches!(reducer, Reducer::Append) => (
                quote_spanned! {span=>
                    |__weir_acc: &mut #ty, __weir_write: #ty| <#ty as #p::#check>::reduce(__weir_acc, __weir_write)
                },
                quote!(reporting),
            ),
            (Some(check), _) => (
                quote_spanned! {span=>
                    |__weir_acc: &mut #ty, __weir_write: #ty| <#ty as #p::#check>::reduce(__weir_acc, __weir_write)
                },
                quote!(new),
            ),
            (None, Some(path)) => (
                quote_spanned! {path.span()=>
                    |__weir_acc: &mut #ty, __weir_write: #u| {
                        <_ as #p::ReducerFn<#ty, #u, _>>::reduce(&#path, __weir_acc, __weir_write)
                    }
                },
                quote!(reporting),
            ),
            (None, None) => unreachable!("a reducer is built in or `with`"),
        };
        let mut bounds = Vec::new();
        if let (Some(check), true) = (&check, generic) {
            bounds.push(quote!(#ty: #p::#check));
        }
        if let (Some(u), true) = (update_ty, generic) {
            bounds.push(quote! {
                #u: ::core::clone::Clone + ::core::fmt::Debug + ::core::marker::Send
                    + ::core::marker::Sync + 'static
            });
        }
        // The input gives the field's value, a `T`: folded in when the reducer takes `T`s,
        // an overwrite otherwise.
        let input_overwrite =
            update_ty.is_some_and(|u| u.to_token_stream().to_string() != ty.to_token_stream().to_string());
        Plan {
            field,
            name: field.ident.unraw().to_string(),
            kind: quote!(#p::ChannelKind::Reducer),
            channel_ty: quote!(#p::BinaryOperatorAggregate<#ty, #u>),
            channel_new: quote!(#p::BinaryOperatorAggregate::<#ty, #u>::#new(#fold)),
            write_ty: quote!(#p::ReducerWrite<#u, #ty>),
            arg_ty,
            reducer: true,
            // Only a plain `Vec<E>` field stores deltas: for another type `append` is an
            // error reported at the field, and a generic element type would need bounds
            // the user did not write (such a field is saved whole each time). A `with`
            // reducer that does not report appends counts each write as a rewrite: its
            // field is saved whole each time too.
            append: matches!(reducer, Reducer::Append | Reducer::With(_)) && !generic && is_vec(ty),
            input_overwrite,
            generic,
            bounds,
        }
    }

    /// `value` as one write of the field.
    pub(super) fn wrap(&self, p: &TokenStream, value: TokenStream, overwrite: bool) -> TokenStream {
        match (self.reducer, overwrite) {
            (false, _) => value,
            (true, false) => quote!(#p::ReducerWrite::Reduce(#value)),
            (true, true) => quote!(#p::ReducerWrite::Overwrite(#value)),
        }
    }

    /// Predicates of the `State` and `Update` impls for this field. For a field whose type names
    /// a parameter, what the impls need of it; for any field, `Default` and the channel's fit,
    /// spanned at the field's type, so that a type that fails them is reported there.
    pub(super) fn predicates(&self, p: &TokenStream) -> Vec<TokenStream> {
        let ty = self.field.ty;
        let span = ty.span();
        let (channel_ty, write_ty) = (&self.channel_ty, &self.write_ty);
        let mut out = vec![
            quote_spanned!(span=> #ty: ::core::default::Default),
            respan(quote!(#channel_ty: #p::Channel<#ty, Write = #write_ty>), span),
        ];
        if self.generic {
            out.push(quote! {
                #ty: ::core::clone::Clone + ::core::fmt::Debug + ::core::marker::Send + ::core::marker::Sync + 'static
            });
            out.push(quote! {
                #ty: #p::serde::Serialize + #p::serde::de::DeserializeOwned
            });
            out.push(quote! {
                #write_ty: #p::serde::Serialize + #p::serde::de::DeserializeOwned
            });
            out.extend(self.bounds.iter().cloned());
        }
        out
    }
}

/// Whether `ty` is written `Vec<..>` (the last segment of its path).
pub(super) fn is_vec(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

/// `tokens` with every span set to `span`, so that an error about them points at the user's token.
pub(super) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}
