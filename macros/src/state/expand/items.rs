//! The full expansion of a valid input, assembled from its parts: the update type and its
//! builder (`update.rs`), the channel table and the `State` impl (`table.rs`), its checkpoint
//! codec (`codec.rs`), and the field-index consts (here: the fallback emits them too).

use super::super::ast::{Field, Input};
use super::names::{index, where_clause, Names};
use super::plan::Plan;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::DeriveInput;

/// The full expansion of a valid input.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let names = Names::new(input.original, Some(input));
    let plans: Vec<Plan<'_>> = input.fields.iter().map(|f| Plan::new(&names, f)).collect();
    let parts = Parts {
        input,
        node: input.original,
        names: &names,
        plans: &plans,
    };
    let update_struct = parts.update_struct();
    let channels_struct = parts.channels_struct();
    let update_impls = parts.update_impls();
    let channels_impls = parts.channels_impls();
    let update_trait = parts.update_trait();
    let state_impl = parts.state_impl();
    let consts = field_consts(input.original, &input.fields);
    quote! {
        #update_struct
        #channels_struct
        const _: () = {
            #update_impls
            #channels_impls
            #update_trait
            #state_impl
            #consts
        };
    }
}

/// What every part of the expansion reads: the input, the names it shares, each field's plan.
pub(super) struct Parts<'a> {
    pub(super) input: &'a Input<'a>,
    pub(super) node: &'a DeriveInput,
    pub(super) names: &'a Names<'a>,
    pub(super) plans: &'a [Plan<'a>],
}

impl<'a> Parts<'a> {
    /// `#krate::__private`.
    pub(super) fn p(&self) -> &'a TokenStream {
        &self.names.private
    }

    /// The fields' identifiers, in order.
    pub(super) fn idents(&self) -> Vec<&'a syn::Ident> {
        self.plans.iter().map(|f| f.field.ident).collect()
    }

    /// The fields' types, in order.
    pub(super) fn tys(&self) -> Vec<&'a syn::Type> {
        self.plans.iter().map(|f| f.field.ty).collect()
    }

    /// The fields' indices as literals, in order.
    pub(super) fn indices(&self) -> Vec<Literal> {
        (0..self.plans.len()).map(index).collect()
    }

    /// The fields' names (without `r#`), in order.
    pub(super) fn name_strs(&self) -> Vec<&'a str> {
        self.plans.iter().map(|f| f.name.as_str()).collect()
    }

    /// The fields' channel types, in order.
    pub(super) fn channel_tys(&self) -> Vec<&'a TokenStream> {
        self.plans.iter().map(|f| &f.channel_ty).collect()
    }

    /// The write types of the fields that name a type or const parameter.
    pub(super) fn generic_writes(&self) -> Vec<&'a TokenStream> {
        self.plans.iter().filter(|f| f.generic).map(|f| &f.write_ty).collect()
    }

    /// The `where` clause of the `State` and `Update` impls: the struct's own predicates, the
    /// bounds of a generic struct, and each field's.
    pub(super) fn state_where(&self) -> TokenStream {
        let mut predicates = self.names.static_params();
        for plan in self.plans {
            predicates.extend(plan.predicates(self.p()));
        }
        where_clause(self.node, &predicates)
    }

    /// The channel table's marker of a generic struct: its field, and its value.
    pub(super) fn marker(&self) -> (Option<TokenStream>, Option<TokenStream>) {
        let name = &self.node.ident;
        let (_, ty_generics, _) = self.node.generics.split_for_impl();
        let generic = !self.names.params.is_empty();
        (
            generic.then(|| quote!(__weir_marker: ::core::marker::PhantomData<fn() -> #name #ty_generics>,)),
            generic.then(|| quote!(__weir_marker: ::core::marker::PhantomData,)),
        )
    }
}

/// `const __WEIR_FIELD_<field>: usize` on the state type, one per field: `graph!` turns a field
/// named in `writes(..)` into `<State>::__WEIR_FIELD_<field>`, so a misspelt field is a compile
/// error at the user's token.
pub(super) fn field_consts(node: &DeriveInput, fields: &[Field<'_>]) -> TokenStream {
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
