//! Graph-shape rules shared by weir's `graph!` macro and its JSON loader.
//!
//! This crate knows nothing about Rust syntax or JSON. It works on node names and on opaque
//! [`Site`]s: the macro maps a site to the `proc_macro2::Span` of a token, the JSON loader maps it
//! to a node or edge id. Every [`Problem`] carries the site of the token at fault, so both front
//! ends point at the narrowest place. One set of rules, two front ends.
//!
//! What it offers:
//! - [`check`]: every problem with a graph's wiring (unknown, duplicate, unreachable node, no
//!   path to END, misuse of START and END, bad joins, nodes that can run in the same step and
//!   write the same single-value field), all at once, in a deterministic order;
//! - [`levels`]: the longest simple path from START to each node, which the JSON loader uses
//!   to decide what a multi-input node waits for; [`back_edges`]: the edges a depth-first
//!   search finds closing cycles; [`starving_joins`]: joins a loop can leave waiting forever;
//! - [`mermaid`]: a Mermaid drawing of the graph;
//! - [`suggest`]: the closest declared name to a misspelt one.
//!
//! # Quick start
//!
//! ```
//! use weir_topology::{check, NodeDecl, Ref, Route, Topology};
//!
//! // START -> plan; plan -> [web, docs]; [web, docs] -> write;
//! // write -> review ? { More => plan, Done => END };   (with a typo: `reveiw`)
//! let t = Topology::new()
//!     .node(NodeDecl::new("plan", 1))
//!     .node(NodeDecl::new("web", 2))
//!     .node(NodeDecl::new("docs", 3))
//!     .node(NodeDecl::new("write", 4))
//!     .node(NodeDecl::new("review", 5))
//!     .edge(Ref::Start(10), Ref::node("plan", 11))
//!     .edge(Ref::node("plan", 12), Ref::node("web", 13))
//!     .edge(Ref::node("plan", 14), Ref::node("docs", 15))
//!     .join([Ref::node("web", 16), Ref::node("docs", 17)], Ref::node("write", 18), 19)
//!     .edge(Ref::node("write", 20), Ref::node("reveiw", 21))
//!     .route(
//!         Route::new(Ref::node("review", 22), 23)
//!             .target(Ref::node("plan", 24), "More")
//!             .target(Ref::End(25), "Done"),
//!     );
//!
//! let problems = check(&t);
//! assert_eq!(problems.len(), 1);
//! assert_eq!(problems[0].site, 21);
//! assert_eq!(problems[0].to_string(), "unknown node `reveiw`; did you mean `review`?");
//! ```

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

mod check;
mod corun;
mod decl;
mod graph;
mod levels;
mod mermaid;
mod problem;
mod suggest;

pub use crate::check::check;
pub use crate::decl::{Edge, Join, NodeDecl, Ref, Route, RouteTarget, SendRoute, Site, Topology};
pub use crate::graph::{back_edges, BackEdge, Via};
pub use crate::levels::{levels, starving_joins, PATH_BUDGET};
pub use crate::mermaid::mermaid;
pub use crate::problem::{ConnectionKind, Problem, ProblemKind};
pub use crate::suggest::suggest;
