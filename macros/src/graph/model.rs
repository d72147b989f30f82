//! The graph as declared: nodes with their indices, and every connection between them, each
//! name still carrying its span.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::{Ident, Type};

use super::parse::{self, Arm, Func, NodeOptions, Ref, Term};
use crate::ctxt::Ctxt;

/// The resolved graph.
pub(crate) struct Graph {
    pub(crate) item: Option<parse::Item>,
    pub(crate) state: Type,
    /// The type of the runs' context (`context: C`), when the graph declares one.
    pub(crate) context: Option<Type>,
    /// Whether the nodes come from a `nodes:` list (otherwise from the edges).
    pub(crate) declared: bool,
    pub(crate) nodes: Vec<Node>,
    pub(crate) edges: Vec<(Ref, Ref)>,
    pub(crate) joins: Vec<Join>,
    pub(crate) routes: Vec<Route>,
    by_name: HashMap<String, usize>,
}

/// A node; its index is its position in [`Graph::nodes`], the order of `add_node` calls.
pub(crate) struct Node {
    pub(crate) name: Ident,
    pub(crate) func: Func,
    pub(crate) options: NodeOptions,
    /// Only `Send`s start it: registered with `add_send_node`, on a payload of its own type.
    pub(crate) send_only: bool,
}

/// `[a, b] -> to`.
pub(crate) struct Join {
    pub(crate) from: Vec<Ref>,
    pub(crate) to: Ref,
    pub(crate) span: Span,
}

/// A router after `from`.
pub(crate) struct Route {
    pub(crate) from: Ref,
    pub(crate) router: Func,
    /// Where the route says its router reads the run's context (`router(context)`).
    pub(crate) reads_context: Option<Span>,
    pub(crate) kind: RouteKind,
    pub(crate) span: Span,
}

pub(crate) enum RouteKind {
    One(Vec<Arm>),
    Many(Vec<Arm>),
    Send(Ref),
}

impl Route {
    /// The targets the route may pick, in order.
    pub(crate) fn targets(&self) -> Vec<&Ref> {
        match &self.kind {
            RouteKind::One(arms) | RouteKind::Many(arms) => arms.iter().map(|a| &a.to).collect(),
            RouteKind::Send(to) => vec![to],
        }
    }
}

impl Graph {
    /// Resolves the parsed input; `None` (with an error in `cx`) without a `state:`.
    pub(crate) fn from_input(cx: &Ctxt, input: parse::Input) -> Option<Graph> {
        let Some(state) = input.state else {
            cx.error_at(
                Span::call_site(),
                "missing `state: Type`; a graph names the state its nodes read and update",
            );
            return None;
        };
        let mut g = Graph {
            item: input.item,
            state,
            context: input.context,
            declared: input.nodes.is_some(),
            nodes: Vec::new(),
            edges: Vec::new(),
            joins: Vec::new(),
            routes: Vec::new(),
            by_name: HashMap::new(),
        };
        for decl in input.nodes.unwrap_or_default() {
            g.push_node(decl.name, decl.func, decl.options);
        }
        for stmt in input.stmts {
            g.add_stmt(cx, stmt);
        }
        g.mark_send_only();
        Some(g)
    }

    fn push_node(&mut self, name: Ident, func: Func, options: NodeOptions) {
        self.by_name.entry(name.to_string()).or_insert(self.nodes.len());
        self.nodes.push(Node {
            name,
            func,
            options,
            send_only: false,
        });
    }

    /// Without a `nodes:` list, a name is declared where it is first mentioned.
    fn mention(&mut self, r: &Ref) {
        if let Ref::Node(name) = r {
            if !self.declared && !self.by_name.contains_key(&name.to_string()) {
                let func = Func::Path(syn::Path::from(name.clone()));
                self.push_node(name.clone(), func, NodeOptions::default());
            }
        }
    }

    fn add_stmt(&mut self, cx: &Ctxt, stmt: parse::Stmt) {
        for term in &stmt.terms {
            match term {
                Term::One(r) => self.mention(r),
                Term::Many(rs, _) => rs.iter().for_each(|r| self.mention(r)),
            }
        }
        for pair in stmt.terms.windows(2) {
            match (&pair[0], &pair[1]) {
                (Term::One(a), Term::One(b)) => self.edges.push((a.clone(), b.clone())),
                (Term::One(a), Term::Many(bs, _)) => {
                    self.edges.extend(bs.iter().map(|b| (a.clone(), b.clone())));
                }
                (Term::Many(from, span), Term::One(to)) => self.joins.push(Join {
                    from: from.clone(),
                    to: to.clone(),
                    span: *span,
                }),
                (Term::Many(from, span), Term::Many(tos, _)) => {
                    for to in tos {
                        self.joins.push(Join {
                            from: from.clone(),
                            to: to.clone(),
                            span: *span,
                        });
                    }
                }
            }
        }
        let Some(route) = stmt.route else { return };
        let from = match stmt.terms.last() {
            Some(Term::One(r)) => r.clone(),
            Some(Term::Many(_, span)) => {
                // Rule: a router follows one node. After a join, route from the join's target.
                cx.error_at(
                    *span,
                    "a route follows one node, not a list; join into a node first, then route from it",
                );
                return;
            }
            None => return,
        };
        let kind = match route.kind {
            parse::RouteKind::One(arms) => RouteKind::One(arms),
            parse::RouteKind::Many(arms) => RouteKind::Many(arms),
            parse::RouteKind::Send(to) => RouteKind::Send(to),
        };
        let route = Route {
            from,
            router: route.router,
            reads_context: route.reads_context,
            kind,
            span: route.span,
        };
        for to in route.targets() {
            self.mention(&to.clone());
        }
        self.routes.push(route);
    }

    /// A node that `Send`s reach and nothing else leads to runs only on its payloads.
    fn mark_send_only(&mut self) {
        let mut sent = vec![false; self.nodes.len()];
        let mut pulled = vec![false; self.nodes.len()];
        for r in &self.routes {
            let mark = if matches!(r.kind, RouteKind::Send(_)) {
                &mut sent
            } else {
                &mut pulled
            };
            for to in r.targets() {
                if let Some(i) = self.index(to) {
                    mark[i] = true;
                }
            }
        }
        for to in self
            .edges
            .iter()
            .map(|(_, to)| to)
            .chain(self.joins.iter().map(|j| &j.to))
        {
            if let Some(i) = self.index(to) {
                pulled[i] = true;
            }
        }
        for (i, node) in self.nodes.iter_mut().enumerate() {
            node.send_only = sent[i] && !pulled[i];
        }
    }

    /// The index of a node reference; `None` for START, END and undeclared names.
    pub(crate) fn index(&self, r: &Ref) -> Option<usize> {
        match r {
            Ref::Node(name) => self.by_name.get(&name.to_string()).copied(),
            _ => None,
        }
    }

    /// A display name for the graph, for `WEIR_MACROS_DEBUG`.
    pub(crate) fn name(&self) -> String {
        self.item
            .as_ref()
            .map_or_else(|| "graph".to_owned(), |item| item.name.to_string())
    }
}
