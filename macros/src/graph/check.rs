//! The wiring rules, run at compile time: the graph is handed to `weir_topology::check` (the same
//! rules the JSON loader runs), and each problem becomes an error at the token it names. One rule
//! is the macro's own, as it is about Rust patterns: a route's arms map each value once.

use proc_macro2::Span;
use quote::ToTokens;
use weir_topology as topo;

use super::expand::tokens_to_string;
use super::model::{Graph, RouteKind};
use super::parse::{Arm, Ref};
use crate::ctxt::Ctxt;

/// What the checks leave for the expansion.
pub(crate) struct Checked {
    /// The graph's shape, for the Mermaid drawing.
    pub(crate) topology: topo::Topology,
    /// Writes that conflict if their field takes one value per step. The macro cannot see the
    /// state's fields, so the expansion asserts each in a const, where the field's kind is known.
    pub(crate) conflicts: Vec<Conflict>,
}

/// Two writes of one field by nodes that can run in the same step (or one node run by `Send`s).
pub(crate) struct Conflict {
    /// The later write's field token.
    pub(crate) span: Span,
    pub(crate) field: String,
    /// The message, should the field take one value per step.
    pub(crate) message: String,
}

/// Maps the topology's opaque sites to spans.
struct Sites(Vec<Span>);

impl Sites {
    fn at(&mut self, span: Span) -> topo::Site {
        self.0.push(span);
        self.0.len() - 1
    }

    fn of(&mut self, r: &Ref) -> topo::Ref {
        let site = self.at(r.span());
        match r {
            Ref::Start(_) => topo::Ref::Start(site),
            Ref::End(_) => topo::Ref::End(site),
            Ref::Node(name) => topo::Ref::Node(name.to_string(), site),
        }
    }
}

/// Runs every rule, reporting all problems to `cx`.
pub(crate) fn check(cx: &Ctxt, g: &Graph) -> Checked {
    let mut sites = Sites(vec![Span::call_site()]);
    let topology = topology(g, &mut sites);
    let mut conflicts = Vec::new();
    for problem in topo::check(&topology) {
        let span = sites.0[problem.site];
        match &problem.kind {
            // Rule: two nodes that can run in one step do not both write a single-value field,
            // and a node run by `Send`s does not write one. Which fields take one value is known
            // to rustc only: the expansion asserts it.
            topo::ProblemKind::WriteConflict { field, .. } | topo::ProblemKind::SendWriteConflict { field, .. } => {
                conflicts.push(Conflict {
                    span,
                    field: field.clone(),
                    message: problem.to_string(),
                })
            }
            // Every other rule of the topology: unknown, duplicate, unreachable node, no path
            // to END, START and END misused, a join naming a node twice, no entry.
            _ => cx.error_at(span, problem.to_string()),
        }
    }
    for r in &g.routes {
        if let RouteKind::One(arms) | RouteKind::Many(arms) = &r.kind {
            each_pattern_once(cx, arms);
        }
        context_is_declared(cx, g, r);
    }
    Checked { topology, conflicts }
}

// Rule: a router reads the run's context only in a graph that declares one (`context: C`):
// the context of a graph that declares none is `()`, which no router needs.
fn context_is_declared(cx: &Ctxt, g: &Graph, r: &super::model::Route) {
    if let (Some(span), None) = (r.reads_context, &g.context) {
        cx.error_at(
            span,
            "this router reads the run's context, but the graph declares none; add `context: Type` \
             after `state:`",
        );
    }
}

// Rule: a route maps each value once, in `? { .. }` and `? [ .. ]` alike. rustc only warns that
// a repeated arm is unreachable, and the first arm silently wins. Alternatives of `A | B` count
// one by one, `Verdict::More` and `More` are one value, and `_` is a catch-all that may follow
// explicit arms, but not another `_`.
fn each_pattern_once(cx: &Ctxt, arms: &[Arm]) {
    let mut seen: Vec<(Key<'_>, &Ref)> = Vec::new();
    for arm in arms {
        for alt in alternatives(&arm.pat) {
            let key = Key::of(alt);
            let Some((first, first_to)) = seen.iter().find(|(k, _)| k.same(&key)) else {
                seen.push((key, &arm.to));
                continue;
            };
            let name = tokens_to_string(alt);
            let (to, first_to) = (ref_name(&arm.to), ref_name(first_to));
            let targets = if to == first_to {
                format!("both times to `{to}`")
            } else {
                format!("to `{first_to}` and to `{to}`")
            };
            cx.error_spanned_by(
                alt,
                format!("`{name}` is mapped twice in this route, {targets}; only its first mapping is ever used, so remove one"),
            );
            cx.error_spanned_by(first.pat, format!("`{name}` is first mapped here, to `{first_to}`"));
        }
    }
}

/// The alternatives of an arm's pattern: `A | B` is `A` and `B`.
fn alternatives(pat: &syn::Pat) -> Vec<&syn::Pat> {
    match pat {
        syn::Pat::Or(or) => or.cases.iter().flat_map(alternatives).collect(),
        syn::Pat::Paren(p) => alternatives(&p.pat),
        _ => vec![pat],
    }
}

/// What one alternative matches, compared by token text: a path (`Verdict::More`, `More`) with
/// what follows it (`(_)`, `{ .. }`), or the whole pattern (`_`, `1..=3`).
struct Key<'a> {
    pat: &'a syn::Pat,
    path: Vec<String>,
    rest: String,
}

impl<'a> Key<'a> {
    fn of(pat: &'a syn::Pat) -> Self {
        let text = |t: &dyn ToTokens| t.to_token_stream().to_string();
        let segments = |p: &syn::Path| p.segments.iter().map(|s| text(s)).collect();
        let (path, rest) = match pat {
            syn::Pat::Path(p) if p.qself.is_none() => (segments(&p.path), String::new()),
            syn::Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() && p.mutability.is_none() => {
                (vec![p.ident.to_string()], String::new())
            }
            syn::Pat::TupleStruct(p) if p.qself.is_none() => (segments(&p.path), format!("({})", text(&p.elems))),
            syn::Pat::Struct(p) if p.qself.is_none() => {
                let (fields, dots) = (&p.fields, &p.rest);
                (
                    segments(&p.path),
                    format!("{{{}}}", text(&quote::quote!(#fields #dots))),
                )
            }
            _ => (Vec::new(), text(pat)),
        };
        Key { pat, path, rest }
    }

    /// Whether both match the same values: the same text, where one path may be a suffix of the
    /// other (`More` as imported, `Verdict::More` in full).
    fn same(&self, other: &Key<'_>) -> bool {
        self.rest == other.rest
            && self.path.is_empty() == other.path.is_empty()
            && (self.path.ends_with(&other.path) || other.path.ends_with(&self.path))
    }
}

fn ref_name(r: &Ref) -> String {
    match r {
        Ref::Start(_) => "START".to_owned(),
        Ref::End(_) => "END".to_owned(),
        Ref::Node(name) => name.to_string(),
    }
}

/// The graph's shape over names and sites. Every written field is passed as single-value: the
/// conflicts found are then filtered by the field's real kind, in a const.
fn topology(g: &Graph, sites: &mut Sites) -> topo::Topology {
    let mut t = topo::Topology::new().at(0);
    for node in &g.nodes {
        let mut decl = topo::NodeDecl::new(node.name.to_string(), sites.at(node.name.span()));
        if node.send_only {
            decl = decl.send_only();
        }
        if node.options.defer.is_some() {
            decl = decl.deferred();
        }
        if let Some((_, fields)) = &node.options.writes {
            let fields: Vec<_> = fields.iter().map(|f| (f.to_string(), sites.at(f.span()))).collect();
            for (f, _) in &fields {
                if !t.single_write_fields.contains(f) {
                    t.single_write_fields.push(f.clone());
                }
            }
            decl = decl.writes(fields);
        }
        t = t.node(decl);
    }
    // A node's `goto(..)`: the destinations of its `Command`s, checked like a route's.
    for node in &g.nodes {
        if let Some((span, targets)) = &node.options.goto {
            let from = topo::Ref::node(node.name.to_string(), sites.at(node.name.span()));
            let mut route = topo::Route::new(from, sites.at(*span)).multi();
            for target in targets {
                route = route.target(sites.of(target), "goto");
            }
            t = t.route(route);
        }
    }
    for (from, to) in &g.edges {
        let (from, to) = (sites.of(from), sites.of(to));
        t = t.edge(from, to);
    }
    for j in &g.joins {
        let from: Vec<_> = j.from.iter().map(|r| sites.of(r)).collect();
        let to = sites.of(&j.to);
        let site = sites.at(j.span);
        t = t.join(from, to, site);
    }
    for r in &g.routes {
        let from = sites.of(&r.from);
        let site = sites.at(r.span);
        match &r.kind {
            RouteKind::One(arms) | RouteKind::Many(arms) => {
                let mut route = topo::Route::new(from, site);
                for arm in arms {
                    route = route.target(sites.of(&arm.to), label(&arm.pat));
                }
                if matches!(r.kind, RouteKind::Many(_)) {
                    route = route.multi();
                }
                t = t.route(route);
            }
            RouteKind::Send(to) => {
                let to = sites.of(to);
                t = t.send(from, to, site);
            }
        }
    }
    t
}

/// The label of a route's arm in the drawing: the variant's name (`More` for `Verdict::More`),
/// or the pattern as written.
fn label(pat: &syn::Pat) -> String {
    let path = match pat {
        syn::Pat::Path(p) => Some(&p.path),
        syn::Pat::TupleStruct(p) => Some(&p.path),
        syn::Pat::Struct(p) => Some(&p.path),
        syn::Pat::Ident(p) if p.subpat.is_none() => return p.ident.to_string(),
        _ => None,
    };
    match path.and_then(|p| p.segments.last()) {
        Some(seg) => seg.ident.to_string(),
        None => pat.to_token_stream().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::each_pattern_once;
    use crate::ctxt::Ctxt;
    use crate::graph::parse::{Arm, Ref};
    use syn::parse::{ParseStream, Parser};
    use syn::{Pat, Token};

    /// The errors of `each_pattern_once` over the arms `Pattern => target, ..`.
    fn errors(arms: proc_macro2::TokenStream) -> Vec<String> {
        let parser = |input: ParseStream| {
            syn::punctuated::Punctuated::<Arm, Token![,]>::parse_terminated_with(input, |i| {
                let pat = Pat::parse_multi_with_leading_vert(i)?;
                i.parse::<Token![=>]>()?;
                Ok(Arm {
                    pat,
                    to: i.parse::<Ref>()?,
                })
            })
        };
        let arms: Vec<Arm> = parser.parse2(arms).expect("arms parse").into_iter().collect();
        let cx = Ctxt::new();
        each_pattern_once(&cx, &arms);
        cx.check()
            .err()
            .map_or_else(Vec::new, |e| e.into_iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn a_variant_mapped_twice_is_reported_at_both_arms() {
        let errors = errors(quote::quote!(Verdict::More => search, Verdict::Done => END, Verdict::More => write));
        assert_eq!(
            errors,
            [
                "`Verdict::More` is mapped twice in this route, to `search` and to `write`; \
                 only its first mapping is ever used, so remove one",
                "`Verdict::More` is first mapped here, to `search`",
            ]
        );
    }

    #[test]
    fn a_full_path_and_an_imported_variant_are_one_value() {
        let errors = errors(quote::quote!(More => search, Verdict::More => search));
        assert_eq!(
            errors,
            [
                "`Verdict::More` is mapped twice in this route, both times to `search`; \
                 only its first mapping is ever used, so remove one",
                "`Verdict::More` is first mapped here, to `search`",
            ]
        );
    }

    #[test]
    fn the_alternatives_of_an_or_pattern_count_one_by_one() {
        let errors = errors(quote::quote!(Go::Web => web, Go::Write | (Go::Docs | Go::Web) => write));
        assert_eq!(errors.len(), 2);
        assert!(errors[0].starts_with("`Go::Web` is mapped twice in this route, to `web` and to `write`"));
    }

    #[test]
    fn one_wildcard_after_explicit_arms_is_a_catch_all_but_two_are_a_duplicate() {
        assert_eq!(
            errors(quote::quote!(Verdict::More => search, _ => END)),
            Vec::<String>::new()
        );
        let errors = errors(quote::quote!(Verdict::More => search, _ => END, _ => write));
        assert_eq!(errors[1], "`_` is first mapped here, to `END`");
    }

    #[test]
    fn distinct_values_are_not_duplicates() {
        let arms = quote::quote!(
            A::More => a, B::More => b, Step(1) => a, Step(2) => b, Pair { x: 1, .. } => a,
            Pair { x: 2, .. } => b, 1..=3 => a, 4 => b, other => END,
        );
        assert_eq!(errors(arms), Vec::<String>::new());
    }
}
