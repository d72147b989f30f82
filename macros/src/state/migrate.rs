//! `#[migrate(from = N, ..)]` on a versioned state: the steps that bring a checkpoint of an
//! older version to the next one, parsed (each operation keeping the tokens it came from) and
//! checked against the version and the fields; `expand/migrate.rs` writes the code.
//!
//! ```text
//! #[state(version = 3)]
//! #[migrate(from = 1, rename(from = notes, to = messages), add(tags))]
//! #[migrate(from = 2, retype(count, with = count_from_text), drop(scratch))]
//! ```

use super::ast::Input;
use super::attr::path_name;
use crate::ctxt::Ctxt;
use std::collections::{BTreeMap, BTreeSet};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;

pub(crate) const MIGRATE: &str = "migrate";

const OPS_EXPECTED: &str =
    "expected `rename(from = old, to = new)`, `add(field)`, `add(field, default = path::to::fn)`, `drop(field)` or `retype(field, with = path::to::fn)`";

/// One `#[migrate(from = N, ..)]`: how a checkpoint of version `from` becomes `from + 1`.
pub(crate) struct Step {
    pub(crate) from: u32,
    pub(crate) from_lit: syn::LitInt,
    pub(crate) ops: Vec<Op>,
}

/// One operation of a step, applied in the order written.
pub(crate) enum Op {
    /// The field `from` is called `to` from this version on.
    Rename { from: syn::Ident, to: syn::Ident },
    /// The field is new; it starts empty, or from `default()`.
    Add {
        field: syn::Ident,
        default: Option<syn::ExprPath>,
    },
    /// The field is gone.
    Drop { field: syn::Ident },
    /// The field's type changed: `with` maps its value (and writes of its value), `writes` a
    /// reducer's folded writes when they are not of the field's type.
    Retype {
        field: syn::Ident,
        with: syn::ExprPath,
        writes: Option<syn::ExprPath>,
    },
}

impl Op {
    /// The field the operation leaves in the next version, if any.
    fn result(&self) -> Option<&syn::Ident> {
        match self {
            Op::Rename { to, .. } => Some(to),
            Op::Add { field, .. } | Op::Retype { field, .. } => Some(field),
            Op::Drop { .. } => None,
        }
    }
}

/// Reads every `#[migrate(..)]` of the struct, reporting what it cannot read.
pub(crate) fn parse_steps(cx: &Ctxt, attrs: &[syn::Attribute]) -> Vec<Step> {
    let mut steps = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident(MIGRATE)) {
        let mut from: Option<(u32, syn::LitInt)> = None;
        let mut ops = Vec::new();
        let result = attr.parse_nested_meta(|meta| {
            let word = path_name(&meta.path);
            match word.as_str() {
                "from" => {
                    let lit: syn::LitInt = meta.value()?.parse()?;
                    from = Some((lit.base10_parse()?, lit));
                }
                "rename" => ops.push(parse_rename(&meta)?),
                "add" | "drop" | "retype" => ops.push(parse_field_op(&meta, &word)?),
                _ => return Err(meta.error(format!("unknown `#[migrate(..)]` operation `{word}`; {OPS_EXPECTED}"))),
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.syn_error(e);
            continue;
        }
        match from {
            Some((from, from_lit)) => steps.push(Step { from, from_lit, ops }),
            None => cx.error_spanned_by(
                attr,
                "`#[migrate(..)]` starts with the version it migrates from: `#[migrate(from = 1, ..)]`",
            ),
        }
    }
    steps
}

/// `rename(from = old, to = new)`.
fn parse_rename(meta: &ParseNestedMeta<'_>) -> syn::Result<Op> {
    let (mut from, mut to) = (None, None);
    meta.parse_nested_meta(|inner| {
        let slot = if inner.path.is_ident("from") {
            &mut from
        } else if inner.path.is_ident("to") {
            &mut to
        } else {
            return Err(inner.error("`rename` takes `from = old_field, to = new_field`"));
        };
        *slot = Some(inner.value()?.parse::<syn::Ident>()?);
        Ok(())
    })?;
    match (from, to) {
        (Some(from), Some(to)) => Ok(Op::Rename { from, to }),
        _ => Err(meta.error("`rename` takes `from = old_field, to = new_field`")),
    }
}

/// `add(field)`, `add(field, default = f)`, `drop(field)`, `retype(field, with = f)` and
/// `retype(field, with = f, writes = g)`.
fn parse_field_op(meta: &ParseNestedMeta<'_>, word: &str) -> syn::Result<Op> {
    let mut field: Option<syn::Ident> = None;
    let mut paths: BTreeMap<String, syn::ExprPath> = BTreeMap::new();
    let keys: &[&str] = match word {
        "add" => &["default"],
        "retype" => &["with", "writes"],
        _ => &[],
    };
    meta.parse_nested_meta(|inner| {
        if inner.input.peek(syn::Token![=]) {
            let key = path_name(&inner.path);
            if !keys.contains(&key.as_str()) {
                let expected = match word {
                    "add" => "`add` takes the field and optionally `default = path::to::fn`",
                    "retype" => {
                        "`retype` takes the field, `with = path::to::fn` and optionally `writes = path::to::fn`"
                    }
                    _ => "`drop` takes the field only",
                };
                return Err(inner.error(format!("unknown key `{key}`: {expected}")));
            }
            paths.insert(key, inner.value()?.parse()?);
        } else if field.is_none() {
            field = Some(inner.path.require_ident()?.clone());
        } else {
            return Err(inner.error(format!("`{word}` takes one field; write one `{word}(..)` per field")));
        }
        Ok(())
    })?;
    let Some(field) = field else {
        return Err(meta.error(format!("`{word}` names the field first: `{word}(field, ..)`")));
    };
    Ok(match word {
        "add" => Op::Add {
            field,
            default: paths.remove("default"),
        },
        "drop" => Op::Drop { field },
        _ => Op::Retype {
            field,
            with: paths.remove("with").ok_or_else(|| {
                meta.error("`retype` needs the function that converts the old value: `with = path::to::fn`")
            })?,
            writes: paths.remove("writes"),
        },
    })
}

/// Per `(step, op)` of an `add` or a `retype`: the index of the struct's field it becomes
/// (through later renames), when no later step retypes or drops it.
pub(crate) type Finals = BTreeMap<(usize, usize), usize>;

impl Input<'_> {
    /// The rules of versions and steps.
    pub(crate) fn check_migrations(&self, cx: &Ctxt) {
        let version = self.attrs.version.as_ref();
        let name = &self.original.ident;
        // Rule: steps need the version they lead to.
        let Some((version, lit)) = version else {
            if let Some(step) = self.steps.first() {
                cx.error_spanned_by(
                    &step.from_lit,
                    format!("`#[migrate(..)]` needs the state's version: `#[state(version = N)]` on `{name}`"),
                );
            }
            return;
        };
        let mut seen = BTreeSet::new();
        for step in &self.steps {
            // Rule: a step leads from an older version; one step per version.
            if step.from == 0 || step.from >= *version {
                cx.error_spanned_by(
                    &step.from_lit,
                    format!(
                        "`from = {}` is not an older version of `{name}`, which is at version {version}: steps go from versions 1 to {}",
                        step.from,
                        version.saturating_sub(1)
                    ),
                );
            } else if !seen.insert(step.from) {
                cx.error_spanned_by(
                    &step.from_lit,
                    format!("a second `#[migrate(from = {}, ..)]`", step.from),
                );
            }
        }
        // Rule: every older version has its step, so any saved checkpoint can be read.
        let missing: Vec<String> = (1..*version)
            .filter(|v| !seen.contains(v))
            .map(|v| v.to_string())
            .collect();
        if !missing.is_empty() {
            let first = &missing[0];
            cx.error_spanned_by(
                lit,
                format!(
                    "`{name}` is at version {version} but says nothing of how a checkpoint of version {} becomes the next: add `#[migrate(from = {first}, ..)]`{} (an empty `#[migrate(from = {first})]` when only the version changed)",
                    missing.join(", "),
                    if missing.len() > 1 { " and the others" } else { "" },
                ),
            );
            return;
        }
        // Rule: each operation names fields that exist on its side of the step. The fields of
        // each version are found backwards from the struct's.
        let mut names: BTreeSet<String> = self.fields.iter().map(|f| f.ident.unraw().to_string()).collect();
        let mut order: Vec<usize> = (0..self.steps.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.steps[i].from));
        for &s in &order {
            let step = &self.steps[s];
            let next = step.from + 1;
            for op in step.ops.iter().rev() {
                let has = |names: &BTreeSet<String>, i: &syn::Ident| names.contains(&i.unraw().to_string());
                match op {
                    Op::Rename { from, to } => {
                        if !has(&names, to) {
                            cx.error_spanned_by(to, format!("`{name}` has no field `{to}` at version {next}"));
                        }
                        names.remove(&to.unraw().to_string());
                        names.insert(from.unraw().to_string());
                    }
                    Op::Add { field, .. } => {
                        if !has(&names, field) {
                            cx.error_spanned_by(field, format!("`{name}` has no field `{field}` at version {next}"));
                        }
                        names.remove(&field.unraw().to_string());
                    }
                    Op::Retype { field, .. } => {
                        if !has(&names, field) {
                            cx.error_spanned_by(field, format!("`{name}` has no field `{field}` at version {next}"));
                        }
                    }
                    Op::Drop { field } => {
                        if has(&names, field) {
                            cx.error_spanned_by(
                                field,
                                format!("`{name}` still has a field `{field}` at version {next}: it cannot be dropped"),
                            );
                        }
                        names.insert(field.unraw().to_string());
                    }
                }
            }
        }
        self.check_finals(cx, &self.finals());
    }

    /// Each added or retyped field, by `(step, op)`, followed to the struct's field it becomes.
    pub(crate) fn finals(&self) -> Finals {
        let mut finals = Finals::new();
        for (s, step) in self.steps.iter().enumerate() {
            for (o, op) in step.ops.iter().enumerate() {
                if let Some(field) = op.result().filter(|_| matches!(op, Op::Add { .. } | Op::Retype { .. })) {
                    if let Some(end) = self.follow(s, o, &field.unraw().to_string()) {
                        finals.insert((s, o), end);
                    }
                }
            }
        }
        finals
    }

    /// The index of the struct field `field` (as left by operation `o` of step `s`) becomes,
    /// when no later operation retypes or drops it.
    fn follow(&self, s: usize, o: usize, field: &str) -> Option<usize> {
        let mut name = field.to_owned();
        let from = self.steps[s].from;
        let later_steps = self.steps.iter().filter(|t| t.from > from).collect::<Vec<_>>();
        let mut later_ops: Vec<(u32, &Op)> = self.steps[s].ops[o + 1..].iter().map(|op| (from, op)).collect();
        for t in later_steps {
            later_ops.extend(t.ops.iter().map(|op| (t.from, op)));
        }
        later_ops.sort_by_key(|(from, _)| *from);
        for (_, op) in later_ops {
            match op {
                Op::Rename { from, to } if from.unraw() == name => name = to.unraw().to_string(),
                Op::Retype { field, .. } | Op::Drop { field } if field.unraw() == name => return None,
                _ => {}
            }
        }
        self.fields.iter().position(|f| f.ident.unraw() == name)
    }

    /// Rule: a default is given in the field's type as the struct has it; a reducer taking
    /// writes of another type than its field's has its writes retyped by their own function.
    fn check_finals(&self, cx: &Ctxt, finals: &Finals) {
        for (s, step) in self.steps.iter().enumerate() {
            for (o, op) in step.ops.iter().enumerate() {
                let end = finals.get(&(s, o)).map(|&i| &self.fields[i]);
                match op {
                    Op::Add {
                        field,
                        default: Some(default),
                    } if end.is_none() => cx.error_spanned_by(
                        default,
                        format!(
                            "a default is given in the type `{field}` has in the struct, but a later step retypes or drops `{field}`: give it there instead"
                        ),
                    ),
                    Op::Retype {
                        field, writes: None, ..
                    } => {
                        if let Some(update) = end.and_then(|f| f.attrs.update.as_ref()) {
                            let update = quote::ToTokens::to_token_stream(update).to_string().replace(' ', "");
                            cx.error_spanned_by(
                                field,
                                format!(
                                    "the reducer of `{field}` takes writes of type `{update}`, not the field's type: say how a saved write becomes one with `writes = path::to::fn` in `retype({field}, ..)`"
                                ),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}
