//! The code `#[derive(State)]` generates: the update type and its builder, the channel table,
//! the `State` and `Update` impls, the field-index consts. After an error, [`fallback`] emits the
//! same items with stub bodies, so that one mistake gives one error (thiserror's `fallback.rs`).
//!
//! Generated code names only `#krate::__private::…` and `::core::…`.

use super::ast::{Field, Input};
use super::attr::{Kind, Reducer};
use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::DeriveInput;

/// The names the expansion shares: the crate path and the generated types.
struct Names<'a> {
    node: &'a DeriveInput,
    /// `#krate::__private`.
    private: TokenStream,
    update: syn::Ident,
    channels: syn::Ident,
    /// The struct's type and const parameters.
    params: Vec<syn::Ident>,
}

impl<'a> Names<'a> {
    fn new(node: &'a DeriveInput, input: Option<&Input<'_>>) -> Self {
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
    fn is_generic(&self, tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tt| match tt {
            TokenTree::Ident(i) => self.params.contains(&i),
            TokenTree::Group(g) => self.is_generic(g.stream()),
            _ => false,
        })
    }

    /// Bounds that make the generated impls hold for a generic struct (none for a plain one).
    fn static_params(&self) -> Vec<TokenStream> {
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
fn where_clause(node: &DeriveInput, extra: &[TokenStream]) -> TokenStream {
    let own = node.generics.where_clause.as_ref().map(|w| &w.predicates);
    let own = own.into_iter().flat_map(|p| p.iter());
    quote!(where #(#own,)* #(#extra,)*)
}

fn index(i: usize) -> Literal {
    Literal::usize_unsuffixed(i)
}

/// What one field generates.
struct Plan<'a> {
    field: &'a Field<'a>,
    /// The field's name without `r#`.
    name: String,
    kind: TokenStream,
    channel_ty: TokenStream,
    channel_new: TokenStream,
    /// The type a task writes: `T`, or `ReducerWrite<U, T>` for a reducer.
    write_ty: TokenStream,
    /// The type the builder method takes: `T`, or `U` for a `with` reducer with `update = U`.
    arg_ty: TokenStream,
    reducer: bool,
    /// `#[reducer(append)]`: checkpoints may store only the items appended since the last one.
    append: bool,
    /// The run's input writes the field as an overwrite (a reducer whose write type is not `T`).
    input_overwrite: bool,
    generic: bool,
    /// The extra bounds a generic field needs.
    bounds: Vec<TokenStream>,
}

impl<'a> Plan<'a> {
    fn new(names: &Names<'_>, field: &'a Field<'a>) -> Self {
        let p = &names.private;
        let ty = field.ty;
        let span = ty.span();
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
            Some(Kind::Reducer(reducer)) => {
                // The reducer is called through a check trait, at the user's tokens: a field type
                // the reducer does not fit is reported there, with the trait's message.
                let (check, reduce) = match reducer {
                    Reducer::Append => (Some(quote!(AppendField)), None),
                    Reducer::Add => (Some(quote!(AddField)), None),
                    Reducer::Merge => (Some(quote!(MergeField)), None),
                    Reducer::With(path) => (None, Some(path)),
                };
                let u = arg_ty.clone();
                let fold = match (&check, reduce) {
                    (Some(check), _) => quote_spanned! {span=>
                        |__weir_acc: &mut #ty, __weir_write: #ty| <#ty as #p::#check>::reduce(__weir_acc, __weir_write)
                    },
                    (None, Some(path)) => quote_spanned! {path.span()=>
                        |__weir_acc: &mut #ty, __weir_write: #u| {
                            <_ as #p::ReducerFn<#ty, #u>>::reduce(&#path, __weir_acc, __weir_write)
                        }
                    },
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
                    channel_new: quote!(#p::BinaryOperatorAggregate::<#ty, #u>::new(#fold)),
                    write_ty: quote!(#p::ReducerWrite<#u, #ty>),
                    arg_ty,
                    reducer: true,
                    // Only a plain `Vec<E>` field stores deltas: for another type `append` is an
                    // error reported at the field, and a generic element type would need bounds
                    // the user did not write (such a field is saved whole each time).
                    append: matches!(reducer, Reducer::Append) && !generic && is_vec(ty),
                    input_overwrite,
                    generic,
                    bounds,
                }
            }
        }
    }

    /// `value` as one write of the field.
    fn wrap(&self, p: &TokenStream, value: TokenStream, overwrite: bool) -> TokenStream {
        match (self.reducer, overwrite) {
            (false, _) => value,
            (true, false) => quote!(#p::ReducerWrite::Reduce(#value)),
            (true, true) => quote!(#p::ReducerWrite::Overwrite(#value)),
        }
    }

    /// Predicates of the `State` and `Update` impls for this field. For a field whose type names
    /// a parameter, what the impls need of it; for any field, `Default` and the channel's fit,
    /// spanned at the field's type, so that a type that fails them is reported there.
    fn predicates(&self, p: &TokenStream) -> Vec<TokenStream> {
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

/// `tokens` with every span set to `span`, so that an error about them points at the user's token.
/// Whether `ty` is written `Vec<..>` (the last segment of its path).
fn is_vec(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
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

/// The full expansion of a valid input.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let names = Names::new(input.original, Some(input));
    let plans: Vec<Plan<'_>> = input.fields.iter().map(|f| Plan::new(&names, f)).collect();
    let node = input.original;
    let p = &names.private;
    let (name, vis) = (&node.ident, &node.vis);
    let (update, channels) = (&names.update, &names.channels);
    let generics = &node.generics;
    let own_where = &generics.where_clause;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();

    let mut predicates = names.static_params();
    for plan in &plans {
        predicates.extend(plan.predicates(p));
    }
    let state_where = where_clause(node, &predicates);

    let idents: Vec<&syn::Ident> = plans.iter().map(|f| f.field.ident).collect();
    let tys: Vec<&syn::Type> = plans.iter().map(|f| f.field.ty).collect();
    let indices: Vec<Literal> = (0..plans.len()).map(index).collect();
    let fresh_idents: Vec<syn::Ident> = (0..plans.len()).map(|i| format_ident!("__weir_fresh_{}", i)).collect();
    let name_strs: Vec<&str> = plans.iter().map(|f| f.name.as_str()).collect();
    let kinds = plans.iter().map(|f| &f.kind);
    let channel_tys: Vec<&TokenStream> = plans.iter().map(|f| &f.channel_ty).collect();
    let channel_news = plans.iter().map(|f| &f.channel_new);
    let write_tys: Vec<&TokenStream> = plans.iter().map(|f| &f.write_ty).collect();
    let inputs = plans.iter().map(|f| {
        let ident = f.field.ident;
        f.wrap(p, quote!(self.#ident), f.input_overwrite)
    });
    let defaults = plans.iter().map(|f| {
        let ty = f.field.ty;
        quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default())
    });

    // The update type.
    let update_doc = format!(
        "A partial update of [`{name}`]: the writes of one node, one slot per field, made with \
         the builder methods.\n\nGenerated by `#[derive(State)]`."
    );
    let generic_writes: Vec<&TokenStream> = plans.iter().filter(|f| f.generic).map(|f| &f.write_ty).collect();
    let bounded =
        |bound: TokenStream| -> Vec<TokenStream> { generic_writes.iter().map(|w| quote!(#w: #bound)).collect() };
    let clone_where = where_clause(node, &bounded(quote!(::core::clone::Clone)));
    let debug_where = where_clause(node, &bounded(quote!(::core::fmt::Debug)));
    let update_name = update.to_string();
    let methods = plans.iter().map(|f| builder_methods(p, vis, f));

    // The channel table.
    let marker_ty = (!names.params.is_empty())
        .then(|| quote!(__weir_marker: ::core::marker::PhantomData<fn() -> #name #ty_generics>,));
    let marker_init = (!names.params.is_empty()).then(|| quote!(__weir_marker: ::core::marker::PhantomData,));
    let channels_name = format!("{name}Channels");

    let into_update = if plans.is_empty() {
        quote!(::core::default::Default::default())
    } else {
        quote! {
            let mut __weir_update: Self::Update = ::core::default::Default::default();
            #( __weir_update.#idents.push(#inputs); )*
            __weir_update
        }
    };

    let consts = field_consts(node, &input.fields);

    let serde_crate = format!("{}::serde", p.to_string().replace(' ', ""));
    // The update's serde bounds: the write types of the generic fields.
    let serde_bound = |tr: &str| {
        generic_writes
            .iter()
            .map(|w| format!("{w}: {p}::serde::{tr}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (ser_bound, de_bound) = (serde_bound("Serialize"), serde_bound("de::DeserializeOwned"));
    let save_arms = plans.iter().zip(&indices).map(|(f, i)| {
        let (ident, name) = (f.field.ident, &f.name);
        quote!(#i => #p::state::save_field(#name, &self.#ident, &__weir_channels.#ident),)
    });
    let load_arms = plans.iter().zip(&indices).map(|(f, i)| {
        let (ident, name) = (f.field.ident, &f.name);
        let load = if f.append {
            quote!(load_append_field)
        } else {
            quote!(load_field)
        };
        quote!(#i => #p::state::#load(#name, &mut self.#ident, &mut __weir_channels.#ident, __weir_chain),)
    });
    let appends: Vec<&Plan<'_>> = plans.iter().filter(|f| f.append).collect();
    let append_marks = appends.iter().map(|f| {
        let i = index(plans.iter().position(|g| std::ptr::eq(*f, g)).expect("a field"));
        let ident = f.field.ident;
        quote!(#i => ::core::option::Option::Some(#p::state::append_mark(&self.#ident, &__weir_channels.#ident)),)
    });
    let save_items = appends.iter().map(|f| {
        let i = index(plans.iter().position(|g| std::ptr::eq(*f, g)).expect("a field"));
        let (ident, name) = (f.field.ident, &f.name);
        quote!(#i => #p::state::save_items(#name, &self.#ident, __weir_from),)
    });
    let codec_methods = quote! {
        fn save_field(
            &self,
            __weir_channels: &Self::Channels,
            __weir_index: usize,
        ) -> ::core::result::Result<::core::option::Option<::std::vec::Vec<u8>>, #p::CodecError> {
            let _ = __weir_channels;
            match __weir_index {
                #( #save_arms )*
                _ => ::core::result::Result::Ok(::core::option::Option::None),
            }
        }

        fn load_field(
            &mut self,
            __weir_channels: &mut Self::Channels,
            __weir_index: usize,
            __weir_chain: &[::std::vec::Vec<u8>],
        ) -> ::core::result::Result<(), #p::CodecError> {
            let _ = (&__weir_channels, __weir_chain);
            match __weir_index {
                #( #load_arms )*
                _ => ::core::result::Result::Ok(()),
            }
        }

        fn append_mark(&self, __weir_channels: &Self::Channels, __weir_index: usize) -> ::core::option::Option<#p::AppendMark> {
            let _ = __weir_channels;
            match __weir_index {
                #( #append_marks )*
                _ => ::core::option::Option::None,
            }
        }

        fn save_items(&self, __weir_index: usize, __weir_from: usize) -> ::core::result::Result<::std::vec::Vec<u8>, #p::CodecError> {
            let _ = __weir_from;
            match __weir_index {
                #( #save_items )*
                _ => ::core::result::Result::Err(#p::CodecError::new("?", "the field is not append-only")),
            }
        }
    };

    quote! {
        #[doc = #update_doc]
        #[derive(#p::serde::Serialize, #p::serde::Deserialize)]
        #[serde(crate = #serde_crate, bound(serialize = #ser_bound, deserialize = #de_bound))]
        #vis struct #update #generics #own_where {
            #( #idents: #p::Writes<#write_tys>, )*
        }

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #channels #generics #own_where {
            #( #idents: #channel_tys, )*
            #marker_ty
        }

        const _: () = {
            #[automatically_derived]
            impl #impl_generics ::core::default::Default for #update #ty_generics #own_where {
                fn default() -> Self {
                    Self { #( #idents: ::core::default::Default::default(), )* }
                }
            }

            #[automatically_derived]
            impl #impl_generics ::core::clone::Clone for #update #ty_generics #clone_where {
                fn clone(&self) -> Self {
                    Self { #( #idents: ::core::clone::Clone::clone(&self.#idents), )* }
                }
            }

            #[automatically_derived]
            impl #impl_generics ::core::fmt::Debug for #update #ty_generics #debug_where {
                fn fmt(&self, __weir_f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    let mut __weir_d = ::core::fmt::Formatter::debug_struct(__weir_f, #update_name);
                    #(
                        if self.#idents.is_some() {
                            __weir_d.field(#name_strs, &self.#idents);
                        }
                    )*
                    __weir_d.finish()
                }
            }

            #[automatically_derived]
            impl #impl_generics #update #ty_generics #own_where {
                #( #methods )*
            }

            #[automatically_derived]
            impl #impl_generics ::core::clone::Clone for #channels #ty_generics #own_where {
                fn clone(&self) -> Self {
                    Self {
                        #( #idents: ::core::clone::Clone::clone(&self.#idents), )*
                        #marker_init
                    }
                }
            }

            #[automatically_derived]
            impl #impl_generics ::core::fmt::Debug for #channels #ty_generics #own_where {
                fn fmt(&self, __weir_f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    ::core::fmt::Formatter::debug_struct(__weir_f, #channels_name)
                        #( .field(#name_strs, &self.#idents) )*
                        .finish()
                }
            }

            #[automatically_derived]
            impl #impl_generics #p::Update for #update #ty_generics #state_where {
                type State = #name #ty_generics;

                fn is_written(&self, __weir_index: usize) -> bool {
                    match __weir_index {
                        #( #indices => self.#idents.is_some(), )*
                        _ => false,
                    }
                }

                fn merge(&mut self, __weir_later: Self) {
                    #( self.#idents.extend(__weir_later.#idents); )*
                    let _ = __weir_later;
                }
            }

            #[automatically_derived]
            impl #impl_generics #p::State for #name #ty_generics #state_where {
                type Update = #update #ty_generics;
                type Channels = #channels #ty_generics;
                const FIELDS: &'static [#p::FieldInfo] = &[
                    #( #p::FieldInfo::new(#name_strs, #kinds), )*
                ];

                fn empty() -> (Self, Self::Channels) {
                    (
                        Self { #( #idents: #defaults, )* },
                        #channels { #( #idents: #channel_news, )* #marker_init },
                    )
                }

                fn into_update(self) -> Self::Update {
                    #into_update
                }

                fn is_available(&self, __weir_channels: &Self::Channels, __weir_index: usize) -> bool {
                    let _ = __weir_channels;
                    match __weir_index {
                        #(
                            #indices => <#channel_tys as #p::Channel<#tys>>::is_available(
                                &__weir_channels.#idents,
                                &self.#idents,
                            ),
                        )*
                        _ => false,
                    }
                }

                fn apply(
                    &mut self,
                    __weir_channels: &mut Self::Channels,
                    __weir_updates: &mut [Self::Update],
                    __weir_bump: bool,
                    __weir_changed: &mut [bool],
                ) -> ::core::result::Result<(), #p::FieldError> {
                    #(
                        __weir_changed[#indices] = #p::apply_field(
                            #indices,
                            &mut self.#idents,
                            &mut __weir_channels.#idents,
                            __weir_updates,
                            |__weir_update: &mut Self::Update| __weir_update.#idents.take(),
                            __weir_bump,
                        )?;
                    )*
                    let _ = (__weir_channels, __weir_updates, __weir_bump, __weir_changed);
                    ::core::result::Result::Ok(())
                }

                fn read_fresh<__WeirR>(
                    &mut self,
                    __weir_channels: &Self::Channels,
                    __weir_update: &Self::Update,
                    __weir_read: impl ::core::ops::FnOnce(&Self) -> __WeirR,
                ) -> ::core::result::Result<__WeirR, #p::FieldError> {
                    // Only the fields the update writes are copied, on copies of their channels;
                    // the others are read in place.
                    let mut __weir_own = ::core::clone::Clone::clone(__weir_update);
                    #(
                        let mut #fresh_idents = if #p::Update::is_written(__weir_update, #indices) {
                            let mut __weir_value = ::core::clone::Clone::clone(&self.#idents);
                            let mut __weir_channel = ::core::clone::Clone::clone(&__weir_channels.#idents);
                            #p::apply_field(
                                #indices,
                                &mut __weir_value,
                                &mut __weir_channel,
                                ::core::slice::from_mut(&mut __weir_own),
                                |__weir_u: &mut Self::Update| __weir_u.#idents.take(),
                                false,
                            )?;
                            ::core::option::Option::Some(__weir_value)
                        } else {
                            ::core::option::Option::None
                        };
                    )*
                    #(
                        if let ::core::option::Option::Some(__weir_v) = &mut #fresh_idents {
                            ::core::mem::swap(&mut self.#idents, __weir_v);
                        }
                    )*
                    let __weir_out = __weir_read(self);
                    // Back as it was: the fresh values swapped out again.
                    #(
                        if let ::core::option::Option::Some(__weir_v) = &mut #fresh_idents {
                            ::core::mem::swap(&mut self.#idents, __weir_v);
                        }
                    )*
                    let _ = (&mut __weir_own, __weir_channels);
                    ::core::result::Result::Ok(__weir_out)
                }

                fn consume(&mut self, __weir_channels: &mut Self::Channels, __weir_index: usize) -> bool {
                    let _ = &__weir_channels;
                    match __weir_index {
                        #(
                            #indices => <#channel_tys as #p::Channel<#tys>>::consume(
                                &mut __weir_channels.#idents,
                                &mut self.#idents,
                            ),
                        )*
                        _ => false,
                    }
                }

                fn finish(&mut self, __weir_channels: &mut Self::Channels, __weir_changed: &mut [bool]) {
                    #(
                        __weir_changed[#indices] = <#channel_tys as #p::Channel<#tys>>::finish(
                            &mut __weir_channels.#idents,
                            &mut self.#idents,
                        );
                    )*
                    let _ = (__weir_channels, __weir_changed);
                }

                #codec_methods
            }

            #consts
        };
    }
}

/// The builder method of a field, and `overwrite_<field>` for a reducer field.
fn builder_methods(p: &TokenStream, vis: &syn::Visibility, f: &Plan<'_>) -> TokenStream {
    let ident = f.field.ident;
    let name = &f.name;
    let arg_ty = &f.arg_ty;
    // The parameter is named after the field (it reads well in the docs); a parameter is a
    // pattern, so a fixed name such as `value` would turn into a constant pattern next to a
    // user's `const value`, whatever its span.
    let value = ident;
    let write = f.wrap(p, quote!(#value), false);
    let what = match f.field.attrs.kind.as_ref().map(|(k, _)| k) {
        None | Some(Kind::LastValue) => "a last value: one write per step".to_owned(),
        Some(Kind::Any) => "the last of the step's writes wins; a step that does not write it clears it".to_owned(),
        Some(Kind::Ephemeral { .. }) => "ephemeral: readable in the next step only".to_owned(),
        Some(Kind::Untracked { .. }) => "untracked: kept across steps, never checkpointed".to_owned(),
        Some(Kind::Topic { accumulate: false }) => {
            "a topic: the step's writes are concatenated and replace the last step's".to_owned()
        }
        Some(Kind::Topic { accumulate: true }) => "an accumulating topic: the writes are appended".to_owned(),
        Some(Kind::AfterFinish) => "readable once the run is finishing".to_owned(),
        Some(Kind::Reducer(Reducer::Append)) => "appended by its reducer, in task order".to_owned(),
        Some(Kind::Reducer(Reducer::Add)) => "added to the value by its reducer".to_owned(),
        Some(Kind::Reducer(Reducer::Merge)) => "merged into the map by its reducer; later keys win".to_owned(),
        Some(Kind::Reducer(Reducer::With(path))) => {
            let path = path.to_token_stream().to_string().replace(' ', "");
            format!("folded in by its reducer `{path}`")
        }
    };
    let doc = format!("Writes `{name}` ({what}).");
    let field_docs = f.field.original.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let field_docs: Vec<&syn::Attribute> = field_docs.collect();
    let separator = (!field_docs.is_empty()).then(|| quote!(#[doc = ""]));
    let mut out = quote! {
        #[doc = #doc]
        #separator
        #( #field_docs )*
        #[inline]
        #vis fn #ident(mut self, #value: #arg_ty) -> Self {
            self.#ident.push(#write);
            self
        }
    };
    if f.reducer {
        let overwrite = format_ident!("overwrite_{}", ident.unraw(), span = ident.span());
        let ty = f.field.ty;
        let write = f.wrap(p, quote!(#value), true);
        let doc = format!(
            "Replaces `{name}`, bypassing its reducer (LangGraph's `Overwrite`): the \
             writes to `{name}` after it in the same step are ignored, and a second overwrite in \
             the same step fails the run."
        );
        out.extend(quote! {
            #[doc = #doc]
            #[inline]
            #vis fn #overwrite(mut self, #value: #ty) -> Self {
                self.#ident.push(#write);
                self
            }
        });
    }
    out
}

/// `const __WEIR_FIELD_<field>: usize` on the state type, one per field: `graph!` turns a field
/// named in `writes(..)` into `<State>::__WEIR_FIELD_<field>`, so a misspelt field is a compile
/// error at the user's token.
fn field_consts(node: &DeriveInput, fields: &[Field<'_>]) -> TokenStream {
    let (name, vis) = (&node.ident, &node.vis);
    let (impl_generics, ty_generics, where_clause) = node.generics.split_for_impl();
    let consts = fields.iter().map(|f| {
        let c = format_ident!("__WEIR_FIELD_{}", f.ident.unraw(), span = f.ident.span());
        let i = index(f.index);
        quote! {
            #[doc(hidden)]
            #[allow(non_upper_case_globals)]
            #vis const #c: usize = #i;
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #name #ty_generics #where_clause {
            #( #consts )*
        }
    }
}

/// The items of the expansion with stub bodies, emitted after an error so that the code using
/// them does not add errors of its own.
pub(crate) fn fallback(node: &DeriveInput, input: Option<&Input<'_>>) -> TokenStream {
    let names = Names::new(node, input);
    let p = &names.private;
    let (name, vis) = (&node.ident, &node.vis);
    let update = &names.update;
    let generics = &node.generics;
    let own_where = &generics.where_clause;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let state_where = where_clause(node, &names.static_params());
    let fields = input.map_or(&[][..], |i| &i.fields[..]);
    let methods = fields.iter().map(|f| {
        let ident = f.ident;
        let ty = f.ty;
        let arg_ty = f
            .attrs
            .update
            .as_ref()
            .map_or_else(|| ty.to_token_stream(), ToTokens::to_token_stream);
        let reducer = f.attrs.broken || f.attrs.kind.as_ref().is_some_and(|(k, _)| k.is_reducer());
        let overwrite = reducer.then(|| {
            let overwrite = format_ident!("overwrite_{}", ident.unraw(), span = ident.span());
            quote!(#vis fn #overwrite(self, _: #ty) -> Self { ::core::unreachable!() })
        });
        quote! {
            #vis fn #ident(self, _: #arg_ty) -> Self { ::core::unreachable!() }
            #overwrite
        }
    });
    let consts = input.map(|i| field_consts(node, &i.fields));
    // The trait stubs need a type that can be a state: a struct (the error may be in its fields'
    // shape) without lifetimes. Stubs for an enum or a union would only add errors of their own
    // (a union cannot derive `Debug`), so those get the update type alone.
    let is_struct = matches!(node.data, syn::Data::Struct(_));
    let traits = (is_struct && node.generics.lifetimes().next().is_none()).then(|| {
        quote! {
            impl #impl_generics #p::Update for #update #ty_generics #state_where {
                type State = #name #ty_generics;
                fn is_written(&self, _: usize) -> bool { ::core::unreachable!() }
                fn merge(&mut self, _: Self) { ::core::unreachable!() }
            }
            impl #impl_generics #p::State for #name #ty_generics #state_where {
                type Update = #update #ty_generics;
                type Channels = ();
                const FIELDS: &'static [#p::FieldInfo] = &[];
                fn empty() -> (Self, ()) { ::core::unreachable!() }
                fn into_update(self) -> Self::Update { ::core::unreachable!() }
                fn is_available(&self, _: &(), _: usize) -> bool { ::core::unreachable!() }
                fn apply(
                    &mut self,
                    _: &mut (),
                    _: &mut [Self::Update],
                    _: bool,
                    _: &mut [bool],
                ) -> ::core::result::Result<(), #p::FieldError> {
                    ::core::unreachable!()
                }
                fn consume(&mut self, _: &mut (), _: usize) -> bool { ::core::unreachable!() }
                fn finish(&mut self, _: &mut (), _: &mut [bool]) { ::core::unreachable!() }
                fn save_field(
                    &self,
                    _: &(),
                    _: usize,
                ) -> ::core::result::Result<::core::option::Option<::std::vec::Vec<u8>>, #p::CodecError> {
                    ::core::unreachable!()
                }
                fn load_field(
                    &mut self,
                    _: &mut (),
                    _: usize,
                    _: &[::std::vec::Vec<u8>],
                ) -> ::core::result::Result<(), #p::CodecError> {
                    ::core::unreachable!()
                }
            }
        }
    });
    let serde_crate = format!("{}::serde", p.to_string().replace(' ', ""));
    quote! {
        #[doc(hidden)]
        #[derive(#p::serde::Serialize, #p::serde::Deserialize)]
        #[serde(crate = #serde_crate, bound = "")]
        #vis struct #update #generics #own_where {
            __weir_stub: ::core::marker::PhantomData<fn() -> #name #ty_generics>,
        }

        const _: () = {
            impl #impl_generics ::core::default::Default for #update #ty_generics #own_where {
                fn default() -> Self { ::core::unreachable!() }
            }
            impl #impl_generics ::core::clone::Clone for #update #ty_generics #own_where {
                fn clone(&self) -> Self { ::core::unreachable!() }
            }
            impl #impl_generics ::core::fmt::Debug for #update #ty_generics #own_where {
                fn fmt(&self, _: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result { ::core::unreachable!() }
            }
            #[allow(missing_docs)]
            impl #impl_generics #update #ty_generics #own_where {
                #( #methods )*
            }
            #traits
            #consts
        };
    }
}

/// `WEIR_MACROS_DEBUG=<StructName>` prints the expansion to stderr.
pub(crate) fn debug_print(node: &DeriveInput, tokens: &TokenStream) {
    if std::env::var("WEIR_MACROS_DEBUG").is_ok_and(|v| node.ident == v) {
        eprintln!("#[derive(State)] for `{}`:\n{tokens}", node.ident);
    }
}
