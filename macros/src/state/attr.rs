//! The attributes of `#[derive(State)]`: `#[state(..)]` on the struct, `#[reducer(..)]` and
//! `#[channel(..)]` on fields. Parsing only: each attribute becomes a value that keeps the span
//! of the word that chose it; rules that look at more than one attribute live in `valid.rs`.

use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;

// Attribute names.
pub(crate) const STATE: &str = "state";
pub(crate) const REDUCER: &str = "reducer";
pub(crate) const CHANNEL: &str = "channel";

// `#[state(..)]` keys.
const CRATE: &str = "crate";
const UPDATE: &str = "update";
const VERSION: &str = "version";

// `#[reducer(..)]` words.
const APPEND: &str = "append";
const ADD: &str = "add";
const MERGE: &str = "merge";
const WITH: &str = "with";

// `#[channel(..)]` words.
const LAST_VALUE: &str = "last_value";
const EPHEMERAL: &str = "ephemeral";
const TOPIC: &str = "topic";
const ANY: &str = "any";
const UNTRACKED: &str = "untracked";
const AFTER_FINISH: &str = "after_finish";
const ACCUMULATE: &str = "accumulate";
const UNGUARDED: &str = "unguarded";

const REDUCERS_EXPECTED: &str = "expected `append`, `add`, `merge` or `with = path::to::fn`";
const CHANNELS_EXPECTED: &str = "expected `last_value`, `ephemeral`, `topic`, `any`, `untracked` or `after_finish`";

/// `#[state(..)]` on the struct.
#[derive(Default)]
pub(crate) struct StateAttrs {
    /// `crate = path`: where the `weir` crate is (default `::weir`).
    pub(crate) krate: Option<syn::Path>,
    /// `update = Name`: the name of the update type (default `<Struct>Update`).
    pub(crate) update: Option<syn::Ident>,
    /// `version = N`: the version of the state's shape, with the literal (default 1).
    pub(crate) version: Option<(u32, syn::LitInt)>,
}

/// A reducer: how a reducer field folds a write into its value.
pub(crate) enum Reducer {
    Append,
    Add,
    Merge,
    /// `with = path`: a user's `fn(&mut T, U)`.
    With(syn::ExprPath),
}

/// The channel of a field, as chosen by its attribute.
pub(crate) enum Kind {
    LastValue,
    Any,
    Ephemeral { guard: bool },
    Untracked { guard: bool },
    Topic { accumulate: bool },
    AfterFinish,
    Reducer(Reducer),
}

impl Kind {
    pub(crate) fn is_reducer(&self) -> bool {
        matches!(self, Self::Reducer(_))
    }
}

/// The attributes of one field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// The channel and the span of the word that chose it (`append` in `#[reducer(append)]`);
    /// `None` for a field without attribute (a last value).
    pub(crate) kind: Option<(Kind, Span)>,
    /// `update = U` of a `with` reducer: the type of a write, when not the field's type.
    pub(crate) update: Option<syn::Type>,
    /// Set when an attribute of the field was not understood: the field gets a stub.
    pub(crate) broken: bool,
}

impl StateAttrs {
    pub(crate) fn from_syn(cx: &Ctxt, attrs: &[syn::Attribute]) -> Self {
        let mut out = Self::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident(STATE)) {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(CRATE) {
                    let path = parse_path_or_str(&meta)?;
                    // A key given twice is reported at its second occurrence.
                    if out.krate.is_some() {
                        cx.error_spanned_by(&meta.path, "duplicate `crate` in `#[state(..)]`");
                    }
                    out.krate = Some(path);
                } else if meta.path.is_ident(UPDATE) {
                    let ident: syn::Ident = meta.value()?.parse()?;
                    if out.update.is_some() {
                        cx.error_spanned_by(&meta.path, "duplicate `update` in `#[state(..)]`");
                    }
                    out.update = Some(ident);
                } else if meta.path.is_ident(VERSION) {
                    let lit: syn::LitInt = meta.value()?.parse()?;
                    let version: u32 = lit.base10_parse()?;
                    // Rule: versions count from 1, the version of a state that says none.
                    if version == 0 {
                        cx.error_spanned_by(
                            &lit,
                            "a state's versions start at 1 (a state that says none is version 1)",
                        );
                    }
                    if out.version.is_some() {
                        cx.error_spanned_by(&meta.path, "duplicate `version` in `#[state(..)]`");
                    }
                    out.version = Some((version, lit));
                } else {
                    let key = path_name(&meta.path);
                    return Err(meta.error(format!(
                        "unknown `#[state(..)]` key `{key}`; expected `crate = path`, `update = Name` or `version = N`"
                    )));
                }
                Ok(())
            });
            if let Err(e) = result {
                cx.syn_error(e);
            }
        }
        out
    }
}

impl FieldAttrs {
    pub(crate) fn from_syn(cx: &Ctxt, field: &syn::Field) -> Self {
        let mut out = Self::default();
        let name = field.ident.as_ref().map_or_else(String::new, |i| format!("`{i}` "));
        for attr in &field.attrs {
            let is_reducer = attr.path().is_ident(REDUCER);
            if !is_reducer && !attr.path().is_ident(CHANNEL) {
                continue;
            }
            let mut chose = false;
            let result = attr.parse_nested_meta(|meta| {
                if is_reducer {
                    parse_reducer_item(cx, &mut out, &name, &mut chose, &meta)
                } else {
                    parse_channel_item(cx, &mut out, &name, &mut chose, &meta)
                }
            });
            if let Err(e) = result {
                cx.syn_error(e);
                out.broken = true;
            } else if !chose {
                let expected = if is_reducer {
                    REDUCERS_EXPECTED
                } else {
                    CHANNELS_EXPECTED
                };
                let word = if is_reducer { REDUCER } else { CHANNEL };
                cx.error_spanned_by(attr, format!("empty `#[{word}(..)]`: {expected}"));
                out.broken = true;
            }
        }
        out
    }
}

/// Records the channel chosen by `word`, unless the field already has one.
///
/// Rule: a field takes one `#[reducer(..)]` or `#[channel(..)]` word; a second is reported at the
/// second word, and the first is kept.
fn choose(cx: &Ctxt, out: &mut FieldAttrs, name: &str, kind: Kind, word: &syn::Path) {
    if let Some((first, _)) = &out.kind {
        let first = describe(first);
        cx.error_spanned_by(
            word,
            format!(
                "field {name}already has a channel (`{first}`); a field takes one `#[reducer(..)]` or `#[channel(..)]`"
            ),
        );
        out.broken = true;
        return;
    }
    out.kind = Some((kind, word.span()));
}

/// How an attribute word is written, for messages.
fn describe(kind: &Kind) -> &'static str {
    match kind {
        Kind::LastValue => LAST_VALUE,
        Kind::Any => ANY,
        Kind::Ephemeral { .. } => EPHEMERAL,
        Kind::Untracked { .. } => UNTRACKED,
        Kind::Topic { .. } => TOPIC,
        Kind::AfterFinish => AFTER_FINISH,
        Kind::Reducer(Reducer::Append) => APPEND,
        Kind::Reducer(Reducer::Add) => ADD,
        Kind::Reducer(Reducer::Merge) => MERGE,
        Kind::Reducer(Reducer::With(_)) => WITH,
    }
}

/// One item of `#[reducer(..)]`: a reducer word, `with = path` or `update = Type`.
fn parse_reducer_item(
    cx: &Ctxt,
    out: &mut FieldAttrs,
    name: &str,
    chose: &mut bool,
    meta: &ParseNestedMeta<'_>,
) -> syn::Result<()> {
    let word = path_name(&meta.path);
    let reducer = match word.as_str() {
        APPEND => Reducer::Append,
        ADD => Reducer::Add,
        MERGE => Reducer::Merge,
        WITH => Reducer::With(meta.value()?.parse()?),
        UPDATE => {
            let ty: syn::Type = meta.value()?.parse()?;
            // Rule: `update = U` names the write type of a `with` reducer, and only that.
            match &out.kind {
                Some((Kind::Reducer(Reducer::With(_)), _)) if out.update.is_some() => {
                    cx.error_spanned_by(&meta.path, "duplicate `update` in `#[reducer(..)]`");
                }
                Some((Kind::Reducer(Reducer::With(_)), _)) => out.update = Some(ty),
                Some((kind, _)) => {
                    let kind = describe(kind);
                    cx.error_spanned_by(
                        &meta.path,
                        format!("`update = ..` names the write type of a `with` reducer; `{kind}` takes writes of the field's type"),
                    );
                    out.broken = true;
                }
                None => {
                    cx.error_spanned_by(
                        &meta.path,
                        "`update = ..` comes after the reducer: `#[reducer(with = path::to::fn, update = U)]`",
                    );
                    out.broken = true;
                }
            }
            return Ok(());
        }
        _ => {
            return Err(meta.error(format!("unknown reducer `{word}`; {REDUCERS_EXPECTED}")));
        }
    };
    *chose = true;
    choose(cx, out, name, Kind::Reducer(reducer), &meta.path);
    Ok(())
}

/// One item of `#[channel(..)]`: a channel word, or an option of the word before it.
fn parse_channel_item(
    cx: &Ctxt,
    out: &mut FieldAttrs,
    name: &str,
    chose: &mut bool,
    meta: &ParseNestedMeta<'_>,
) -> syn::Result<()> {
    let word = path_name(&meta.path);
    let kind =
        match word.as_str() {
            LAST_VALUE => Kind::LastValue,
            EPHEMERAL => Kind::Ephemeral { guard: true },
            TOPIC => Kind::Topic { accumulate: false },
            ANY => Kind::Any,
            UNTRACKED => Kind::Untracked { guard: true },
            AFTER_FINISH => Kind::AfterFinish,
            ACCUMULATE | UNGUARDED => {
                // Rule: an option follows the word it modifies, in the same attribute.
                let current = if *chose {
                    out.kind.as_mut().map(|(k, _)| k)
                } else {
                    None
                };
                match (word.as_str(), current) {
                    (ACCUMULATE, Some(Kind::Topic { accumulate })) => *accumulate = true,
                    (UNGUARDED, Some(Kind::Ephemeral { guard } | Kind::Untracked { guard })) => *guard = false,
                    (ACCUMULATE, _) => {
                        return Err(meta.error("`accumulate` is an option of `topic`: `#[channel(topic, accumulate)]`"))
                    }
                    _ => return Err(meta.error(
                        "`unguarded` is an option of `ephemeral` and `untracked`: `#[channel(ephemeral, unguarded)]`",
                    )),
                }
                return Ok(());
            }
            _ => return Err(meta.error(format!("unknown channel `{word}`; {CHANNELS_EXPECTED}"))),
        };
    *chose = true;
    choose(cx, out, name, kind, &meta.path);
    Ok(())
}

/// `crate = path` or `crate = "path"` (serde's spelling).
fn parse_path_or_str(meta: &ParseNestedMeta<'_>) -> syn::Result<syn::Path> {
    let value = meta.value()?;
    if value.peek(syn::LitStr) {
        let lit: syn::LitStr = value.parse()?;
        return lit.parse_with(syn::Path::parse_mod_style);
    }
    syn::Path::parse_mod_style(value)
}

/// A path as written, for messages.
pub(crate) fn path_name(path: &syn::Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.join("::")
}
