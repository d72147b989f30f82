//! The `version` and `migrate` methods of a versioned state: one match arm per step, each
//! operation a call on the runtime's `Migration`. A function that converts to the type the
//! struct's field has now is coerced to a function pointer of that type first, at the user's
//! path, so a wrong return type is reported there.

use super::super::ast::Input;
use super::super::migrate::Op;
use super::items::Parts;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

impl Parts<'_> {
    /// `version` and `migrate`, or nothing for a state at version 1 without steps.
    pub(super) fn migrate_methods(&self, input: &Input<'_>) -> TokenStream {
        let Some((version, _)) = &input.attrs.version else {
            return TokenStream::new();
        };
        let p = self.p();
        let finals = input.finals();
        let arms = input.steps.iter().enumerate().map(|(s, step)| {
            let from = Literal::u32_unsuffixed(step.from);
            let ops = step.ops.iter().enumerate().map(|(o, op)| {
                let end = finals.get(&(s, o)).map(|&i| &self.plans[i]);
                self.op(op, end)
            });
            quote!(#from => { #( #ops )* ::core::result::Result::Ok(()) })
        });
        let version = Literal::u32_unsuffixed(*version);
        quote! {
            fn version(&self) -> u32 {
                #version
            }

            fn migrate(
                &self,
                __weir_from: u32,
                __weir_saved: &mut #p::state::Migration,
            ) -> ::core::result::Result<(), #p::state::MigrateError> {
                let _ = &__weir_saved;
                match __weir_from {
                    #( #arms )*
                    _ => ::core::result::Result::Err(#p::state::MigrateError::new(
                        "",
                        ::core::format_args!("the state has no step from version {}", __weir_from),
                    )),
                }
            }
        }
    }

    /// One operation; `end` is the plan of the struct field it becomes, if it stays as it is.
    fn op(&self, op: &Op, end: Option<&super::plan::Plan<'_>>) -> TokenStream {
        let p = self.p();
        let name = |i: &syn::Ident| i.unraw().to_string();
        match op {
            Op::Rename { from, to } => {
                let (from, to) = (name(from), name(to));
                quote!(__weir_saved.rename(#from, #to)?;)
            }
            Op::Drop { field } => {
                let field = name(field);
                quote!(__weir_saved.drop_field(#field);)
            }
            Op::Add { field, default: None } => {
                let field = name(field);
                quote!(__weir_saved.add(#field)?;)
            }
            Op::Add {
                field,
                default: Some(default),
            } => {
                let plan = end.expect("checked: a default's field is the struct's");
                let (field_name, ident, ty) = (name(field), plan.field.ident, plan.field.ty);
                let index =
                    Literal::usize_unsuffixed(self.plans.iter().position(|q| std::ptr::eq(q, plan)).expect("a plan"));
                let method = if plan.reducer {
                    format_ident!("overwrite_{}", ident.unraw())
                } else {
                    ident.clone()
                };
                let n = Literal::usize_unsuffixed(self.plans.len());
                let call =
                    quote_spanned!(default.span()=> { let __weir_default: fn() -> #ty = #default; __weir_default() });
                quote! {{
                    let __weir_bad = |__weir_e: &dyn ::core::fmt::Display| {
                        #p::state::MigrateError::new(#field_name, ::core::format_args!("its default: {}", __weir_e))
                    };
                    let (mut __weir_state, mut __weir_channels) = <Self as #p::State>::empty();
                    let mut __weir_update = [<<Self as #p::State>::Update as ::core::default::Default>::default().#method(#call)];
                    let mut __weir_changed = [false; #n];
                    #p::State::apply(&mut __weir_state, &mut __weir_channels, &mut __weir_update, false, &mut __weir_changed)
                        .map_err(|e| __weir_bad(&e.error))?;
                    let __weir_blob = #p::State::save_field(&__weir_state, &__weir_channels, #index)
                        .map_err(|e| __weir_bad(&e))?;
                    __weir_saved.add_value(#field_name, __weir_blob)?;
                }}
            }
            Op::Retype { field, with, writes } => {
                let field_name = name(field);
                let Some(plan) = end else {
                    // A type the struct no longer has: the function's own types say what it
                    // converts, and a reducer's folded writes go through `writes` if given.
                    let reduced = writes
                        .as_ref()
                        .map(|g| quote!(__weir_saved.retype_reduced(#field_name, #g)?;));
                    return quote! {
                        __weir_saved.retype(#field_name, #p::state::WriteKind::Value, #with)?;
                        #reduced
                    };
                };
                let ty = plan.field.ty;
                let with = quote_spanned!(with.span()=> { let __weir_with: fn(_) -> #ty = #with; __weir_with });
                if !plan.reducer {
                    return quote!(__weir_saved.retype(#field_name, #p::state::WriteKind::Value, #with)?;);
                }
                let arg_ty = &plan.arg_ty;
                let reduced = match writes {
                    Some(g) => quote_spanned!(g.span()=> { let __weir_writes: fn(_) -> #arg_ty = #g; __weir_writes }),
                    None => with.clone(),
                };
                quote! {
                    __weir_saved.retype(#field_name, #p::state::WriteKind::Reducer, #with)?;
                    __weir_saved.retype_reduced(#field_name, #reduced)?;
                }
            }
        }
    }
}
