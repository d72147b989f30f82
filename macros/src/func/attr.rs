//! A task's options: `#[task(name = "..", retry(..), timeout(..), cache)]`, `retry` and
//! `timeout` as a node's in `graph!`, `cache` or `cache(<time to live>)`.

use crate::ctxt::Ctxt;
use crate::graph::expand::{duration, retry_policy};
use crate::graph::parse::options::{parse_duration, parse_option};
use crate::graph::parse::{Duration, NodeOptions};
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;

const NAME: &str = "name";
const RETRY: &str = "retry";
const TIMEOUT: &str = "timeout";
const CACHE: &str = "cache";

/// What `#[task(..)]` says.
#[derive(Default)]
pub(super) struct TaskAttr {
    pub(super) name: Option<syn::LitStr>,
    node: NodeOptions,
    /// `cache`, with its time to live when given.
    cache: Option<Option<Duration>>,
}

impl TaskAttr {
    pub(super) fn parse(cx: &Ctxt, args: TokenStream) -> Self {
        let mut attr = Self::default();
        if args.is_empty() {
            return attr;
        }
        let parser = syn::meta::parser(|meta| {
            let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            match key.as_str() {
                NAME => {
                    let lit: syn::LitStr = meta.value()?.parse()?;
                    if attr.name.is_some() {
                        cx.error_at(meta.path.span(), "`name` is given twice for this task");
                    }
                    attr.name = Some(lit);
                    Ok(())
                }
                RETRY | TIMEOUT => parse_option(cx, &mut attr.node, meta),
                CACHE => {
                    let ttl = if meta.input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in meta.input);
                        let ttl = parse_duration(&content)?;
                        if !content.is_empty() {
                            return Err(content.error("`cache(..)` takes one time to live, such as `cache(10min)`"));
                        }
                        Some(ttl)
                    } else {
                        None
                    };
                    if attr.cache.is_some() {
                        cx.error_at(meta.path.span(), "`cache` is given twice for this task");
                    }
                    attr.cache = Some(ttl);
                    Ok(())
                }
                _ => Err(meta.error(format!(
                    "unknown task option `{key}`; the options are `{NAME} = \"..\"`, `{RETRY}(..)`, `{TIMEOUT}(..)`, \
                     `{CACHE}` or `{CACHE}(<time to live>)`"
                ))),
            }
        });
        if let Err(e) = syn::parse::Parser::parse2(parser, args) {
            cx.syn_error(e);
        }
        attr
    }

    /// The `TaskOptions` expression for the task `name`.
    pub(super) fn options(&self, name: &str) -> TokenStream {
        let mut options = quote!(::weir::__private::func::TaskOptions::new(#name));
        if let Some((_, r)) = &self.node.retry {
            let policy = retry_policy(r);
            options = quote!(#options.retry(#policy));
        }
        if let Some((_, d)) = self.node.timeout {
            let d = duration(d);
            options = quote!(#options.timeout(#d));
        }
        match self.cache {
            Some(Some(ttl)) => {
                let ttl = duration(ttl);
                options = quote!(#options.cache(::core::option::Option::Some(#ttl)));
            }
            Some(None) => options = quote!(#options.cache(::core::option::Option::None)),
            None => {}
        }
        options
    }
}
