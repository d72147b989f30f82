//! The wiring rules, run at compile time: the graph is handed to `weir_topology::check` (the same
//! rules the JSON loader runs), and each problem becomes an error at the token it names.

use proc_macro2::Span;
use quote::ToTokens;
use weir_topology as topo;

use super::model::{Graph, RouteKind};
use super::parse::Ref;
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
    Checked { topology, conflicts }
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
