//! The checkpoint codec of a derived state: each field saved and loaded through serde, and a
//! list field's items saved from a mark on (its new items only, while its reducer reports appends).

use super::items::Parts;
use super::names::index;
use super::plan::Plan;
use proc_macro2::TokenStream;
use quote::quote;

impl Parts<'_> {
    /// `save_field`, `load_field`, `append_mark`, `extend_field` and `save_items`, matching on the
    /// field index.
    pub(super) fn codec_methods(&self) -> TokenStream {
        let (p, plans) = (self.p(), self.plans);
        let indices = self.indices();
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
        let position = |f: &Plan<'_>| index(plans.iter().position(|g| std::ptr::eq(f, g)).expect("a field"));
        let append_marks = appends.iter().map(|f| {
            let (i, ident) = (position(f), f.field.ident);
            quote!(#i => ::core::option::Option::Some(#p::state::append_mark(&self.#ident, &__weir_channels.#ident)),)
        });
        let extend_items = appends.iter().map(|f| {
            let (i, ident, name) = (position(f), f.field.ident, &f.name);
            quote!(#i => #p::state::extend_items(#name, &mut self.#ident, __weir_links),)
        });
        let save_items = appends.iter().map(|f| {
            let (i, ident, name) = (position(f), f.field.ident, &f.name);
            quote!(#i => #p::state::save_items(#name, &self.#ident, __weir_from),)
        });
        quote! {
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

            fn extend_field(&mut self, __weir_index: usize, __weir_links: &[::std::vec::Vec<u8>]) -> ::core::result::Result<(), #p::CodecError> {
                let _ = __weir_links;
                match __weir_index {
                    #( #extend_items )*
                    _ => ::core::result::Result::Err(#p::CodecError::new("?", "the field is not a list saved as deltas")),
                }
            }

            fn save_items(&self, __weir_index: usize, __weir_from: usize) -> ::core::result::Result<::std::vec::Vec<u8>, #p::CodecError> {
                let _ = __weir_from;
                match __weir_index {
                    #( #save_items )*
                    _ => ::core::result::Result::Err(#p::CodecError::new("?", "the field is not append-only")),
                }
            }
        }
    }
}
