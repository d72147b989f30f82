//! A node's options inside `name(...)` (`defer`, `writes(..)`, `goto(..)`, `retry(..)`,
//! `timeout(..)`, `interrupt_before`, `interrupt_after`) and the settings of `retry(..)`: each
//! given at most once (a repeat reported at its second occurrence), and every malformed one
//! reported in the same compile.

use super::{parse_ref, Duration, NodeOptions, Ref, Retry};
use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{parenthesized, token, Ident, LitInt, Token};

/// Option names inside `name(...)`.
const DEFER: &str = "defer";
const WRITES: &str = "writes";
const RETRY: &str = "retry";
const TIMEOUT: &str = "timeout";
const INTERRUPT_BEFORE: &str = "interrupt_before";
const GOTO: &str = "goto";
const INTERRUPT_AFTER: &str = "interrupt_after";
const OPTIONS: &str =
    "`defer`, `writes(..)`, `goto(..)`, `retry(..)`, `timeout(..)`, `interrupt_before`, `interrupt_after`";

/// Keys of `retry(...)`.
const MAX_ATTEMPTS: &str = "max_attempts";
const INITIAL_INTERVAL: &str = "initial_interval";
const BACKOFF_FACTOR: &str = "backoff_factor";
const MAX_INTERVAL: &str = "max_interval";
const JITTER: &str = "jitter";

/// Reports a repeated option at its second occurrence.
fn once<T>(cx: &Ctxt, slot: &mut Option<T>, span: Span, name: &str, value: T) {
    if slot.is_some() {
        cx.error_at(span, format!("`{name}` is given twice for this node"));
    } else {
        *slot = Some(value);
    }
}

/// Reports a malformed option or setting and skips to the next one, so that every mistake in an
/// option list is reported in one compile.
fn recover(cx: &Ctxt, input: ParseStream, result: syn::Result<()>) -> syn::Result<()> {
    if let Err(e) = result {
        cx.syn_error(e);
        while !input.is_empty() && !input.peek(Token![,]) {
            input.parse::<proc_macro2::TokenTree>()?;
        }
    }
    Ok(())
}

/// Parses `content` with `f`, then drops what it left after an error (reported by the caller).
fn all_of<T>(content: ParseStream, f: impl FnOnce(ParseStream) -> syn::Result<T>) -> syn::Result<T> {
    let result = f(content);
    if result.is_err() {
        content.parse::<TokenStream>()?;
    }
    result
}

pub(crate) fn parse_option(cx: &Ctxt, o: &mut NodeOptions, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    let result = option(cx, o, &meta);
    recover(cx, meta.input, result)
}

fn option(cx: &Ctxt, o: &mut NodeOptions, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    let span = meta.path.span();
    let key = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
    match key.as_str() {
        DEFER => once(cx, &mut o.defer, span, DEFER, span),
        INTERRUPT_BEFORE => once(cx, &mut o.interrupt_before, span, INTERRUPT_BEFORE, span),
        INTERRUPT_AFTER => once(cx, &mut o.interrupt_after, span, INTERRUPT_AFTER, span),
        WRITES => {
            let content;
            parenthesized!(content in meta.input);
            let fields = all_of(&content, Punctuated::<Ident, Token![,]>::parse_terminated)?;
            once(cx, &mut o.writes, span, WRITES, (span, fields.into_iter().collect()));
        }
        GOTO => {
            let content;
            parenthesized!(content in meta.input);
            let targets = all_of(&content, |c| {
                Punctuated::<Ref, Token![,]>::parse_terminated_with(c, parse_ref)
            })?;
            once(cx, &mut o.goto, span, GOTO, (span, targets.into_iter().collect()));
        }
        TIMEOUT => {
            let content;
            parenthesized!(content in meta.input);
            let d = all_of(&content, parse_duration)?;
            once(cx, &mut o.timeout, span, TIMEOUT, (span, d));
        }
        RETRY => {
            let mut r = Retry::default();
            if meta.input.peek(token::Paren) {
                meta.parse_nested_meta(|m| parse_retry(cx, &mut r, m))?;
            }
            once(cx, &mut o.retry, span, RETRY, (span, r));
        }
        _ => {
            return Err(meta.error(format!(
                "unknown node option `{}`; the options are {OPTIONS}",
                quote::ToTokens::to_token_stream(&meta.path)
                    .to_string()
                    .replace(' ', "")
            )))
        }
    }
    Ok(())
}

fn parse_retry(cx: &Ctxt, r: &mut Retry, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    let result = retry_setting(cx, r, &meta);
    recover(cx, meta.input, result)
}

fn retry_setting(cx: &Ctxt, r: &mut Retry, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    let span = meta.path.span();
    let key = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
    let value = meta.value()?;
    match key.as_str() {
        MAX_ATTEMPTS => {
            let n: LitInt = value.parse()?;
            n.base10_parse::<u32>()?;
            once(cx, &mut r.max_attempts, span, MAX_ATTEMPTS, n);
        }
        INITIAL_INTERVAL => {
            let d = parse_duration(value)?;
            once(cx, &mut r.initial_interval, span, INITIAL_INTERVAL, d);
        }
        MAX_INTERVAL => {
            let d = parse_duration(value)?;
            once(cx, &mut r.max_interval, span, MAX_INTERVAL, d);
        }
        BACKOFF_FACTOR => {
            let f: syn::Lit = value.parse()?;
            if !matches!(f, syn::Lit::Float(_) | syn::Lit::Int(_)) {
                return Err(syn::Error::new(f.span(), "`backoff_factor` is a number, like `2.0`"));
            }
            once(cx, &mut r.backoff_factor, span, BACKOFF_FACTOR, f);
        }
        JITTER => {
            let b: syn::LitBool = value.parse()?;
            once(cx, &mut r.jitter, span, JITTER, b);
        }
        _ => {
            return Err(syn::Error::new(
                span,
                format!(
                    "unknown retry setting `{key}`; the settings are `{MAX_ATTEMPTS}`, \
                     `{INITIAL_INTERVAL}`, `{BACKOFF_FACTOR}`, `{MAX_INTERVAL}`, `{JITTER}`"
                ),
            ))
        }
    }
    Ok(())
}

/// `500ms`, `2s`, `1min`.
pub(crate) fn parse_duration(input: ParseStream) -> syn::Result<Duration> {
    if !input.peek(LitInt) {
        return Err(input.error("a duration is a whole number with a unit: `500ms`, `2s` or `1min`"));
    }
    let lit: LitInt = input.parse()?;
    let n: u64 = lit.base10_parse()?;
    let per = match lit.suffix() {
        "ms" => 1,
        "s" => 1000,
        "min" => 60_000,
        _ => {
            return Err(syn::Error::new(
                lit.span(),
                "a duration is a whole number with a unit: `500ms`, `2s` or `1min`",
            ))
        }
    };
    Ok(Duration {
        millis: n.saturating_mul(per),
    })
}
