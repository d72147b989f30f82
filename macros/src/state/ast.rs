//! The model of a `#[derive(State)]` input: the struct and its fields, each keeping the syn node
//! it came from so that every error can point at the user's tokens (thiserror's `ast.rs`).

use super::attr::{FieldAttrs, StateAttrs};
use super::migrate::{parse_steps, Step};
use crate::ctxt::Ctxt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

/// A struct with named fields.
pub(crate) struct Input<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: StateAttrs,
    /// The `#[migrate(..)]` steps, as written.
    pub(crate) steps: Vec<Step>,
    pub(crate) fields: Vec<Field<'a>>,
}

/// One field of the struct: one channel of the state.
pub(crate) struct Field<'a> {
    pub(crate) original: &'a syn::Field,
    pub(crate) ident: &'a syn::Ident,
    pub(crate) ty: &'a syn::Type,
    pub(crate) attrs: FieldAttrs,
    /// Position in declaration order: the field's index in `State::FIELDS`.
    pub(crate) index: usize,
}

impl<'a> Input<'a> {
    /// Reads `node`, reporting into `cx` what it cannot model. `None` when the input is not a
    /// struct with named fields (the expansion then only emits stubs).
    pub(crate) fn from_syn(cx: &Ctxt, node: &'a DeriveInput) -> Option<Self> {
        let attrs = StateAttrs::from_syn(cx, &node.attrs);
        let steps = parse_steps(cx, &node.attrs);
        // Rule: a state is a struct with named fields, one channel per field.
        let fields = match &node.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => &named.named,
                Fields::Unnamed(unnamed) => {
                    cx.error_spanned_by(
                        unnamed,
                        "`#[derive(State)]` needs a struct with named fields, not a tuple struct: each field is a channel named after it",
                    );
                    return None;
                }
                Fields::Unit => {
                    cx.error_at(
                        data.struct_token.span(),
                        "`#[derive(State)]` needs a struct with named fields, not a unit struct: each field is a channel named after it",
                    );
                    return None;
                }
            },
            Data::Enum(data) => {
                cx.error_at(
                    data.enum_token.span(),
                    "`#[derive(State)]` needs a struct with named fields, not an enum",
                );
                return None;
            }
            Data::Union(data) => {
                cx.error_at(
                    data.union_token.span(),
                    "`#[derive(State)]` needs a struct with named fields, not a union",
                );
                return None;
            }
        };
        let fields = fields
            .iter()
            .enumerate()
            .map(|(index, field)| Field {
                original: field,
                ident: field.ident.as_ref().expect("named field"),
                ty: &field.ty,
                attrs: FieldAttrs::from_syn(cx, field),
                index,
            })
            .collect();
        Some(Self {
            original: node,
            attrs,
            steps,
            fields,
        })
    }
}
