//! The rules that look at the whole input rather than one attribute (thiserror's `valid.rs`).
//! Each rule is a small function under a comment stating it.

use super::ast::Input;
use crate::ctxt::Ctxt;
use syn::ext::IdentExt;

impl Input<'_> {
    pub(crate) fn validate(&self, cx: &Ctxt) {
        check_no_lifetimes(cx, self);
        check_method_names(cx, self);
        self.check_migrations(cx);
    }
}

/// Rule: a state is `'static` (it is shared between tasks and kept across steps), so the struct
/// takes no lifetime parameter.
fn check_no_lifetimes(cx: &Ctxt, input: &Input<'_>) {
    for lt in input.original.generics.lifetimes() {
        cx.error_spanned_by(
            &lt.lifetime,
            "`#[derive(State)]` does not take lifetime parameters: a state is `'static`; own the data instead",
        );
    }
}

/// Rule: the generated builder methods do not collide: a field named `overwrite_x` next to a
/// reducer field `x` would get two methods `overwrite_x`.
fn check_method_names(cx: &Ctxt, input: &Input<'_>) {
    for field in &input.fields {
        let Some(base) = field
            .ident
            .unraw()
            .to_string()
            .strip_prefix("overwrite_")
            .map(str::to_owned)
        else {
            continue;
        };
        let clash = input.fields.iter().find(|other| {
            other.ident.unraw() == base && other.attrs.kind.as_ref().is_some_and(|(k, _)| k.is_reducer())
        });
        if let Some(other) = clash {
            cx.error_spanned_by(
                field.ident,
                format!(
                    "field `{}` clashes with the `{}` method generated for the reducer field `{}`; rename one of them",
                    field.ident.unraw(),
                    field.ident.unraw(),
                    other.ident.unraw()
                ),
            );
        }
    }
}
