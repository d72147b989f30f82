//! What a front end declares: the nodes, edges, joins, routes and sends of a graph, each named
//! at an opaque [`Site`]. The types every rule reads; they depend on nothing else in the crate.

/// The place of a token in the graph's source, opaque to this crate.
///
/// The `graph!` macro maps it to a span, the JSON loader to a node or edge id. Problems are
/// reported at sites; this crate never looks inside one.
pub type Site = usize;

/// A node named somewhere in the graph: in an edge, a join, a route or a send.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ref {
    /// The `START` pseudo-node, where a run begins.
    Start(Site),
    /// The `END` pseudo-node, where a branch of a run ends.
    End(Site),
    /// A node, by name.
    Node(String, Site),
}

impl Ref {
    /// A reference to the node `name`, written at `site`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_topology::Ref;
    /// assert_eq!(Ref::node("plan", 3), Ref::Node("plan".to_owned(), 3));
    /// ```
    pub fn node(name: impl Into<String>, site: Site) -> Self {
        Ref::Node(name.into(), site)
    }

    /// Where this reference is written.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_topology::Ref;
    /// assert_eq!(Ref::End(7).site(), 7);
    /// ```
    pub fn site(&self) -> Site {
        match self {
            Ref::Start(site) | Ref::End(site) | Ref::Node(_, site) => *site,
        }
    }

    /// The name as a user writes it: `START`, `END` or the node's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_topology::Ref;
    /// assert_eq!(Ref::Start(0).name(), "START");
    /// assert_eq!(Ref::node("plan", 0).name(), "plan");
    /// ```
    pub fn name(&self) -> &str {
        match self {
            Ref::Start(_) => "START",
            Ref::End(_) => "END",
            Ref::Node(name, _) => name,
        }
    }
}

/// The declaration of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDecl {
    /// The node's name, unique in the graph.
    pub name: String,
    /// Where the name is declared.
    pub site: Site,
    /// The node runs only from `Send` packets: it has no edges into it. Such a node counts as
    /// reachable when no [`SendRoute`] targets it, since its packets may come from a node's
    /// `Command`, which the topology does not list.
    pub send_only: bool,
    /// The node is deferred: it runs only once every other branch has drained.
    pub defer: bool,
    /// The state fields the node may write, each with the site of its mention, when declared.
    /// Nodes without a declaration are left out of the co-running write check.
    pub writes: Option<Vec<(String, Site)>>,
}

impl NodeDecl {
    /// A plain node named `name`, declared at `site`, with no write declaration.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_topology::NodeDecl;
    /// let n = NodeDecl::new("plan", 1).deferred().writes([("notes", 2)]);
    /// assert!(n.defer && !n.send_only);
    /// assert_eq!(n.writes, Some(vec![("notes".to_owned(), 2)]));
    /// ```
    pub fn new(name: impl Into<String>, site: Site) -> Self {
        NodeDecl {
            name: name.into(),
            site,
            send_only: false,
            defer: false,
            writes: None,
        }
    }

    /// Marks the node as run only from `Send` packets.
    pub fn send_only(mut self) -> Self {
        self.send_only = true;
        self
    }

    /// Marks the node as deferred.
    pub fn deferred(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Declares the fields the node writes, each with the site of its mention.
    pub fn writes<S: Into<String>>(mut self, fields: impl IntoIterator<Item = (S, Site)>) -> Self {
        self.writes = Some(fields.into_iter().map(|(f, s)| (f.into(), s)).collect());
        self
    }
}

/// A plain edge `from -> to`: `to` runs in the step after `from`. A fan-out is several edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The node the edge leaves.
    pub from: Ref,
    /// The node the edge leads to.
    pub to: Ref,
}

/// A join `[a, b] -> c`: `c` runs once, after every node in `from` has run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Join {
    /// The nodes waited for.
    pub from: Vec<Ref>,
    /// The node that runs after all of them.
    pub to: Ref,
    /// Where the join is written.
    pub site: Site,
}

/// One target of a [`Route`], with the label of the choice that leads there (an enum variant).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteTarget {
    /// Where the choice leads; may be `END`.
    pub to: Ref,
    /// The choice's label, drawn on the edge by [`mermaid`](crate::mermaid()).
    pub label: Option<String>,
}

/// A conditional edge: after `from` runs, a router picks among `targets`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The node whose router this is.
    pub from: Ref,
    /// The places the router may pick; may include `END`.
    pub targets: Vec<RouteTarget>,
    /// Where the route is written.
    pub site: Site,
    /// The router may pick several targets at once (or none); otherwise it picks exactly one.
    pub multi: bool,
}

impl Route {
    /// A single-choice route out of `from`, written at `site`, with no targets yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_topology::{Ref, Route};
    /// let r = Route::new(Ref::node("review", 1), 2)
    ///     .target(Ref::node("plan", 3), "More")
    ///     .target(Ref::End(4), "Done");
    /// assert_eq!(r.targets.len(), 2);
    /// assert!(!r.multi);
    /// ```
    pub fn new(from: Ref, site: Site) -> Self {
        Route {
            from,
            targets: Vec::new(),
            site,
            multi: false,
        }
    }

    /// Adds a target reached by the choice `label`.
    pub fn target(mut self, to: Ref, label: impl Into<String>) -> Self {
        self.targets.push(RouteTarget {
            to,
            label: Some(label.into()),
        });
        self
    }

    /// Adds a target with no label.
    pub fn unlabelled(mut self, to: Ref) -> Self {
        self.targets.push(RouteTarget { to, label: None });
        self
    }

    /// Lets the router pick several targets at once.
    pub fn multi(mut self) -> Self {
        self.multi = true;
        self
    }
}

/// A router on `from` that emits `Send` packets to `to`: one task of `to` per packet, all in the
/// next step. It may emit none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendRoute {
    /// The node whose router emits the packets.
    pub from: Ref,
    /// The node that runs once per packet.
    pub to: Ref,
    /// Where the send is written.
    pub site: Site,
}

/// The shape of a graph: its nodes and the ways control flows between them.
///
/// Build it with the chaining methods or fill the public fields directly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// Where the graph as a whole is written; problems without a narrower token (no entry) are
    /// reported here.
    pub site: Site,
    /// The nodes, in declaration order.
    pub nodes: Vec<NodeDecl>,
    /// Plain edges.
    pub edges: Vec<Edge>,
    /// Joins (waiting edges).
    pub joins: Vec<Join>,
    /// Conditional edges.
    pub routes: Vec<Route>,
    /// Routers that emit `Send` packets.
    pub sends: Vec<SendRoute>,
    /// The state fields that take one write per step (last value); two nodes that can run in the
    /// same step must not both write one of them.
    pub single_write_fields: Vec<String>,
}

impl Topology {
    /// An empty topology whose whole-graph site is 0.
    pub fn new() -> Self {
        Topology::default()
    }

    /// Sets the site of the graph as a whole.
    pub fn at(mut self, site: Site) -> Self {
        self.site = site;
        self
    }

    /// Declares a node.
    pub fn node(mut self, node: NodeDecl) -> Self {
        self.nodes.push(node);
        self
    }

    /// Adds a plain edge `from -> to`.
    pub fn edge(mut self, from: Ref, to: Ref) -> Self {
        self.edges.push(Edge { from, to });
        self
    }

    /// Adds a join `[from..] -> to`, written at `site`.
    pub fn join(mut self, from: impl IntoIterator<Item = Ref>, to: Ref, site: Site) -> Self {
        self.joins.push(Join {
            from: from.into_iter().collect(),
            to,
            site,
        });
        self
    }

    /// Adds a conditional edge.
    pub fn route(mut self, route: Route) -> Self {
        self.routes.push(route);
        self
    }

    /// Adds a router on `from` that sends packets to `to`, written at `site`.
    pub fn send(mut self, from: Ref, to: Ref, site: Site) -> Self {
        self.sends.push(SendRoute { from, to, site });
        self
    }

    /// Marks a state field as taking one write per step.
    pub fn single_write_field(mut self, field: impl Into<String>) -> Self {
        self.single_write_fields.push(field.into());
        self
    }
}
