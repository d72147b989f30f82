//! The channel table a derived state gets (one channel per field, its `Clone` and `Debug`), and
//! the `State` impl over it: the field table, the empty state, and the step's work on each
//! field (availability, applying writes, the fresh read, consuming, finishing).

use super::items::Parts;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

impl Parts<'_> {
    /// The channel table's struct: one channel per field (and a marker for a generic struct).
    pub(super) fn channels_struct(&self) -> TokenStream {
        let node = self.node;
        let (vis, channels) = (&node.vis, &self.names.channels);
        let (generics, own_where) = (&node.generics, &node.generics.where_clause);
        let (idents, channel_tys) = (self.idents(), self.channel_tys());
        let (marker_ty, _) = self.marker();
        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            #vis struct #channels #generics #own_where {
                #( #idents: #channel_tys, )*
                #marker_ty
            }
        }
    }

    /// The channel table's `Clone` and `Debug`.
    pub(super) fn channels_impls(&self) -> TokenStream {
        let node = self.node;
        let channels = &self.names.channels;
        let own_where = &node.generics.where_clause;
        let (impl_generics, ty_generics, _) = node.generics.split_for_impl();
        let (idents, name_strs) = (self.idents(), self.name_strs());
        let (_, marker_init) = self.marker();
        let channels_name = format!("{}Channels", node.ident);
        quote! {
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
        }
    }

    /// The `State` impl: its types, the field table, the empty state, the input as an update,
    /// and the methods of the parts below.
    pub(super) fn state_impl(&self) -> TokenStream {
        let (p, node) = (self.p(), self.node);
        let (name, update, channels) = (&node.ident, &self.names.update, &self.names.channels);
        let (impl_generics, ty_generics, _) = node.generics.split_for_impl();
        let state_where = self.state_where();
        let (idents, name_strs) = (self.idents(), self.name_strs());
        let kinds = self.plans.iter().map(|f| &f.kind);
        let channel_news = self.plans.iter().map(|f| &f.channel_new);
        let defaults = self.plans.iter().map(|f| {
            let ty = f.field.ty;
            quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default())
        });
        let (_, marker_init) = self.marker();
        let into_update = self.input_update();
        let (step, fresh, settle, codec) = (
            self.step_methods(),
            self.read_fresh(),
            self.settle_methods(),
            self.codec_methods(),
        );
        let migrate = self.migrate_methods(self.input);
        quote! {
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

                #step
                #fresh
                #settle
                #codec
                #migrate
            }
        }
    }

    /// The body of `into_update`: each field written as the run's input writes it.
    fn input_update(&self) -> TokenStream {
        if self.plans.is_empty() {
            return quote!(::core::default::Default::default());
        }
        let p = self.p();
        let idents = self.idents();
        let inputs = self.plans.iter().map(|f| {
            let ident = f.field.ident;
            f.wrap(p, quote!(self.#ident), f.input_overwrite)
        });
        quote! {
            let mut __weir_update: Self::Update = ::core::default::Default::default();
            #( __weir_update.#idents.push(#inputs); )*
            __weir_update
        }
    }

    /// `is_available` and `apply`: whether a field can be read, and a step's writes applied
    /// field by field through each channel.
    fn step_methods(&self) -> TokenStream {
        let p = self.p();
        let (idents, tys, indices, channel_tys) = (self.idents(), self.tys(), self.indices(), self.channel_tys());
        quote! {
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
        }
    }

    /// `read_fresh`: the state with one update applied to copies of the fields it writes,
    /// swapped in for the read and out again.
    fn read_fresh(&self) -> TokenStream {
        let p = self.p();
        let (idents, indices) = (self.idents(), self.indices());
        let fresh_idents: Vec<syn::Ident> = (0..self.plans.len())
            .map(|i| format_ident!("__weir_fresh_{}", i))
            .collect();
        quote! {
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
        }
    }

    /// `consume` and `finish`: each field's channel consumed (one field) or finished (every field).
    fn settle_methods(&self) -> TokenStream {
        let p = self.p();
        let (idents, tys, indices, channel_tys) = (self.idents(), self.tys(), self.indices(), self.channel_tys());
        quote! {
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
        }
    }
}
