//! The surface syntax of `graph!`, parsed into a tree that keeps every token's span.
//!
//! ```text
//! graph {
//!     [pub] struct ResearchGraph;                  // optional: a named graph (item form)
//!     state: Research,                             // `,` or `;`
//!     context: User,                               // optional: the runs' context type
//!     nodes: [                                     // optional: without it, the nodes are the
//!         plan,                                    // names the edges mention, in order
//!         web = tools::search_web,                 // alias: node `web` runs `tools::search_web`
//!         write(writes(notes, llm_calls), defer),  // options
//!         review_step = (|s: &Research| ...),      // any expression, in parentheses
//!     ],
//!     START -> plan -> [web, docs];                // edges, chains, fan-out
//!     [web, docs] -> write;                        // join
//!     write -> review ? { Verdict::More => plan, Verdict::Done => END };  // one target
//!     pick -> choose ? [ Go::X => x, Go::Y => y ];                       // a set of targets
//!     plan -> fan_out ?> worker;                                         // one Send per payload
//!     plan -> by_plan(context) ? { Plan::Paid => web, Plan::Free => END }; // reads the context
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{braced, bracketed, parenthesized, token, Expr, Ident, LitInt, Pat, Path, Token, Type, Visibility};

use crate::ctxt::Ctxt;

pub(crate) mod options;
use options::parse_option;

mod kw {
    syn::custom_keyword!(state);
    syn::custom_keyword!(nodes);
    syn::custom_keyword!(context);
    syn::custom_keyword!(START);
    syn::custom_keyword!(END);
}

/// The whole input.
pub(crate) struct Input {
    /// `[vis] struct Name;`, for the item form.
    pub(crate) item: Option<Item>,
    pub(crate) state: Option<Type>,
    /// `context: Type`: the type of the runs' context, when the graph declares one.
    pub(crate) context: Option<Type>,
    /// `None` when there is no `nodes:` list.
    pub(crate) nodes: Option<Vec<NodeDecl>>,
    pub(crate) stmts: Vec<Stmt>,
}

/// `#[attrs] vis struct Name;`: the graph as a named type.
pub(crate) struct Item {
    pub(crate) attrs: Vec<syn::Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) name: Ident,
}

/// One entry of `nodes: [...]`.
pub(crate) struct NodeDecl {
    pub(crate) name: Ident,
    /// What runs: the name itself unless aliased.
    pub(crate) func: Func,
    pub(crate) options: NodeOptions,
}

/// A node or router function: a path, or any expression in parentheses.
#[derive(Clone)]
pub(crate) enum Func {
    Path(Path),
    Expr(Box<Expr>, Span),
}

impl Func {
    pub(crate) fn span(&self) -> Span {
        match self {
            Func::Path(p) => p.segments.last().map_or_else(|| p.span(), |s| s.ident.span()),
            Func::Expr(_, span) => *span,
        }
    }
}

impl quote::ToTokens for Func {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Func::Path(p) => p.to_tokens(tokens),
            Func::Expr(e, span) => {
                // Invisible delimiters: the expression stays one operand, without parentheses
                // that would trip `unused_parens` in argument position.
                let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote::quote!(#e));
                group.set_span(*span);
                tokens.extend([proc_macro2::TokenTree::Group(group)]);
            }
        }
    }
}

/// The options of one node, each with the span of its keyword.
#[derive(Default)]
pub(crate) struct NodeOptions {
    pub(crate) defer: Option<Span>,
    pub(crate) writes: Option<(Span, Vec<Ident>)>,
    pub(crate) retry: Option<(Span, Retry)>,
    pub(crate) timeout: Option<(Span, Duration)>,
    pub(crate) interrupt_before: Option<Span>,
    pub(crate) interrupt_after: Option<Span>,
    /// `goto(a, b, END)`: where the node's `Command`s may send the run.
    pub(crate) goto: Option<(Span, Vec<Ref>)>,
}

/// `retry(max_attempts = 3, initial_interval = 500ms, backoff_factor = 2.0, max_interval = 10s, jitter = false)`.
#[derive(Default)]
pub(crate) struct Retry {
    pub(crate) max_attempts: Option<LitInt>,
    pub(crate) initial_interval: Option<Duration>,
    pub(crate) backoff_factor: Option<syn::Lit>,
    pub(crate) max_interval: Option<Duration>,
    pub(crate) jitter: Option<syn::LitBool>,
}

/// A duration written as an integer with a unit suffix: `500ms`, `2s`, `1min`.
#[derive(Clone, Copy)]
pub(crate) struct Duration {
    pub(crate) millis: u64,
}

/// One `;`-terminated statement: a chain of edges, optionally ending in a route.
pub(crate) struct Stmt {
    /// At least two terms when there is no route, at least one otherwise.
    pub(crate) terms: Vec<Term>,
    pub(crate) route: Option<Route>,
}

/// One side of an arrow.
pub(crate) enum Term {
    One(Ref),
    /// `[a, b, ...]`, with the span of the brackets.
    Many(Vec<Ref>, Span),
}

/// A node named in an edge.
#[derive(Clone)]
pub(crate) enum Ref {
    Start(Span),
    End(Span),
    Node(Ident),
}

impl Ref {
    pub(crate) fn span(&self) -> Span {
        match self {
            Ref::Start(s) | Ref::End(s) => *s,
            Ref::Node(i) => i.span(),
        }
    }
}

/// `router ? {..}`, `router ? [..]` or `router ?> node`, after the chain's last arrow.
pub(crate) struct Route {
    pub(crate) router: Func,
    /// `router(context)`, or a closure of two arguments: the router also takes the run's
    /// context, `&C`. The span of `context` or of the closure.
    pub(crate) reads_context: Option<Span>,
    pub(crate) kind: RouteKind,
    /// The span of `{..}`, `[..]` or the send's target.
    pub(crate) span: Span,
}

pub(crate) enum RouteKind {
    /// The router returns one value; each arm maps a pattern to a target.
    One(Vec<Arm>),
    /// The router returns several values (`Vec<E>`, any iterator); each is mapped by the arms.
    Many(Vec<Arm>),
    /// The router returns payloads; each starts one task of the node.
    Send(Ref),
}

/// `Pattern => target`.
pub(crate) struct Arm {
    pub(crate) pat: Pat,
    pub(crate) to: Ref,
}

/// Parses the input, reporting syntax errors to `cx`; `None` when nothing sensible was parsed.
pub(crate) fn parse(cx: &Ctxt, tokens: TokenStream) -> Option<Input> {
    let parser = |input: ParseStream| parse_input(cx, input);
    match syn::parse::Parser::parse2(parser, tokens) {
        Ok(input) => Some(input),
        Err(e) => {
            cx.syn_error(e);
            None
        }
    }
}

fn parse_input(cx: &Ctxt, input: ParseStream) -> syn::Result<Input> {
    let mut item = None;
    let attrs = input.call(syn::Attribute::parse_outer)?;
    if !attrs.is_empty() || input.peek(Token![pub]) || input.peek(Token![struct]) {
        let vis: Visibility = input.parse()?;
        input.parse::<Token![struct]>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![;]>()?;
        item = Some(Item { attrs, vis, name });
    }
    let mut state = None;
    let mut context = None;
    let mut nodes = None;
    loop {
        if input.peek(kw::state) && input.peek2(Token![:]) {
            let key: kw::state = input.parse()?;
            input.parse::<Token![:]>()?;
            let ty: Type = input.parse()?;
            if state.is_some() {
                cx.error_at(key.span, "`state` is given twice; a graph runs over one state");
            }
            state = Some(ty);
        } else if input.peek(kw::context) && input.peek2(Token![:]) {
            let key: kw::context = input.parse()?;
            input.parse::<Token![:]>()?;
            let ty: Type = input.parse()?;
            if context.is_some() {
                cx.error_at(key.span, "`context` is given twice; a graph's runs carry one context");
            }
            context = Some(ty);
        } else if input.peek(kw::nodes) && input.peek2(Token![:]) {
            let key: kw::nodes = input.parse()?;
            input.parse::<Token![:]>()?;
            let content;
            bracketed!(content in input);
            let mut list = Vec::new();
            while !content.is_empty() {
                list.push(parse_node(cx, &content)?);
                if content.is_empty() {
                    break;
                }
                content.parse::<Token![,]>()?;
            }
            if nodes.is_some() {
                cx.error_at(key.span, "`nodes` is given twice; list every node in one `nodes: [..]`");
            }
            nodes = Some(list);
        } else {
            break;
        }
        if !input.is_empty() && !input.peek(Token![,]) && !input.peek(Token![;]) {
            return Err(input.error("expected `,` or `;`"));
        }
        if !input.is_empty() {
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else {
                input.parse::<Token![;]>()?;
            }
        }
    }
    let mut stmts = Vec::new();
    while !input.is_empty() {
        stmts.push(parse_stmt(input)?);
    }
    Ok(Input {
        item,
        state,
        context,
        nodes,
        stmts,
    })
}

fn parse_node(cx: &Ctxt, input: ParseStream) -> syn::Result<NodeDecl> {
    let name: Ident = input.parse()?;
    let func = if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        parse_func(input)?
    } else {
        Func::Path(Path::from(name.clone()))
    };
    let mut options = NodeOptions::default();
    if input.peek(token::Paren) {
        let content;
        parenthesized!(content in input);
        let parser = syn::meta::parser(|meta| parse_option(cx, &mut options, meta));
        syn::parse::Parser::parse2(parser, content.parse::<TokenStream>()?)?;
    }
    Ok(NodeDecl { name, func, options })
}

/// A path, or an expression in parentheses.
fn parse_func(input: ParseStream) -> syn::Result<Func> {
    if input.peek(token::Paren) {
        let content;
        let paren = parenthesized!(content in input);
        let expr: Expr = content.parse()?;
        Ok(Func::Expr(Box::new(expr), paren.span.join()))
    } else {
        // Expression-style, so that `f(writes(..))` leaves the options alone and `f::<T>` works.
        let path: syn::ExprPath = input.parse()?;
        if path.qself.is_some() {
            let span = path.span();
            Ok(Func::Expr(Box::new(Expr::Path(path)), span))
        } else {
            Ok(Func::Path(path.path))
        }
    }
}

fn parse_stmt(input: ParseStream) -> syn::Result<Stmt> {
    let mut terms = vec![parse_term(input)?];
    let mut route = None;
    if !input.peek(Token![->]) {
        return Err(input.error("expected `->`; a statement reads `from -> to;`"));
    }
    while input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        // A router: a path or a parenthesized expression, optionally `(context)`, followed by `?`.
        let fork = input.fork();
        if fork.call(parse_func).is_ok() && (fork.peek(Token![?]) || fork.peek(token::Paren)) {
            let router = parse_func(input)?;
            let mut reads_context = if input.peek(token::Paren) {
                Some(parse_reads_context(input)?)
            } else {
                None
            };
            if let Func::Expr(e, span) = &router {
                if matches!(&**e, Expr::Closure(c) if c.inputs.len() == 2) {
                    reads_context.get_or_insert(*span);
                }
            }
            input.parse::<Token![?]>()?;
            let mut r = parse_route_body(router, input)?;
            r.reads_context = reads_context;
            route = Some(r);
            break;
        }
        terms.push(parse_term(input)?);
    }
    input.parse::<Token![;]>()?;
    Ok(Stmt { terms, route })
}

/// `(context)` after a router: the router also reads the run's context. Then `?` must follow.
fn parse_reads_context(input: ParseStream) -> syn::Result<Span> {
    let content;
    parenthesized!(content in input);
    if !content.peek(kw::context) {
        return Err(
            content.error("expected `context`; after a router, `(context)` says it also takes the run's context")
        );
    }
    let key: kw::context = content.parse()?;
    if !content.is_empty() {
        return Err(content.error("expected `)`; a router's only option is `(context)`"));
    }
    if !input.peek(Token![?]) {
        return Err(input.error("expected `?` after the router's `(context)`"));
    }
    Ok(key.span)
}

fn parse_route_body(router: Func, input: ParseStream) -> syn::Result<Route> {
    if input.peek(Token![>]) {
        input.parse::<Token![>]>()?;
        let to = parse_ref(input)?;
        let span = to.span();
        return Ok(Route {
            router,
            reads_context: None,
            kind: RouteKind::Send(to),
            span,
        });
    }
    let content;
    let (many, span) = if input.peek(token::Bracket) {
        (true, bracketed!(content in input).span.join())
    } else if input.peek(token::Brace) {
        (false, braced!(content in input).span.join())
    } else {
        return Err(input.error(
            "expected `{ Pattern => node, .. }` (one target), `[ Pattern => node, .. ]` (several) \
             or `> node` (a Send per payload) after `?`",
        ));
    };
    let arms = Punctuated::<Arm, Token![,]>::parse_terminated_with(&content, |i| {
        let pat = Pat::parse_multi_with_leading_vert(i)?;
        i.parse::<Token![=>]>()?;
        let to = parse_ref(i)?;
        Ok(Arm { pat, to })
    })?;
    let arms = arms.into_iter().collect();
    let kind = if many {
        RouteKind::Many(arms)
    } else {
        RouteKind::One(arms)
    };
    Ok(Route {
        router,
        reads_context: None,
        kind,
        span,
    })
}

fn parse_term(input: ParseStream) -> syn::Result<Term> {
    if input.peek(token::Bracket) {
        let content;
        let b = bracketed!(content in input);
        let refs = Punctuated::<Ref, Token![,]>::parse_terminated_with(&content, parse_ref)?;
        Ok(Term::Many(refs.into_iter().collect(), b.span.join()))
    } else {
        parse_ref(input).map(Term::One)
    }
}

fn parse_ref(input: ParseStream) -> syn::Result<Ref> {
    if input.peek(kw::START) {
        Ok(Ref::Start(input.parse::<kw::START>()?.span))
    } else if input.peek(kw::END) {
        Ok(Ref::End(input.parse::<kw::END>()?.span))
    } else if input.peek(Ident) {
        Ok(Ref::Node(input.parse()?))
    } else {
        Err(input.error("expected a node name, `START`, `END` or `[a, b, ..]`"))
    }
}

impl Parse for Ref {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        parse_ref(input)
    }
}
