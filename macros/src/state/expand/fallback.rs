//! The expansion after an error: the same items with stub bodies.

use super::super::ast::{Field, Input};
use super::items::field_consts;
use super::names::{where_clause, Names};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::ext::IdentExt;
use syn::DeriveInput;

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
    let fields = input.map_or(&[][..], |i| &i.fields[..]);
    let methods = fields.iter().map(|f| stub_methods(vis, f));
    let consts = input.map(|i| field_consts(node, &i.fields));
    // The trait stubs need a type that can be a state: a struct (the error may be in its fields'
    // shape) without lifetimes. Stubs for an enum or a union would only add errors of their own
    // (a union cannot derive `Debug`), so those get the update type alone.
    let is_struct = matches!(node.data, syn::Data::Struct(_));
    let traits = (is_struct && node.generics.lifetimes().next().is_none()).then(|| trait_stubs(&names));
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
                fn default() -> Self {
                    ::core::unreachable!()
                }
            }
            impl #impl_generics ::core::clone::Clone for #update #ty_generics #own_where {
                fn clone(&self) -> Self {
                    ::core::unreachable!()
                }
            }
            impl #impl_generics ::core::fmt::Debug for #update #ty_generics #own_where {
                fn fmt(&self, _: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    ::core::unreachable!()
                }
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

/// A field's builder method stub, and its `overwrite_<field>` stub when it is (or was meant to
/// be) a reducer field.
fn stub_methods(vis: &syn::Visibility, f: &Field<'_>) -> TokenStream {
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
}

/// The `Update` and `State` impls with stub bodies, over a unit channel table.
fn trait_stubs(names: &Names<'_>) -> TokenStream {
    let (node, p, update) = (names.node, &names.private, &names.update);
    let name = &node.ident;
    let (impl_generics, ty_generics, _) = node.generics.split_for_impl();
    let state_where = where_clause(node, &names.static_params());
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
}
