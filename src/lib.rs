//! # weir
//!
//! LangGraph's stateful agent-graph model for Rust, with the wiring checked by the compiler.
//!
//! A state is a struct whose fields are typed channels (`#[derive(State)]`); a graph is a set of
//! nodes (plain functions, sync or async) joined by edges, joins, routers and `Send`s; a compiled
//! graph runs LangGraph's Pregel superstep loop: the nodes of a step run concurrently on tokio,
//! read the state as it was at the start of the step, and their writes are applied at the step
//! boundary through each field's reducer, in a deterministic order.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

/// Declares a graph over a state, checks its wiring at compile time, and expands into
/// [`GraphBuilder`] calls with static node ids.
///
/// ```text
/// graph! {
///     pub struct ResearchGraph;              // optional: a named graph with `MERMAID`, `NODES`,
///                                            // `builder()` and `compile()`; without it the macro
///                                            // is an expression of type `GraphBuilder<State>`
///     state: Research,
///     nodes: [                               // optional: without it, the nodes are the
///         plan,                              // functions the edges name, in order
///         web = tools::search_web,           // node `web` runs `tools::search_web`
///         write(writes(notes, llm_calls), defer, retry(max_attempts = 3), timeout(30s)),
///         review_step(interrupt_before),
///         inline = (|s: &Research| ResearchUpdate::default()),   // any expression, in parentheses
///     ],
///     START -> plan -> [web, docs];          // edges, chains, fan-out
///     [web, docs] -> write;                  // join: `write` runs once, after both
///     write -> review ? {                    // route: a router returning an enum, every variant
///         Verdict::More => plan,             // mapped (rustc's exhaustiveness check)
///         Verdict::Done => END,
///     };
///     pick -> choose ? [Go::X => x, Go::Y => y];   // a router returning several (`Vec<Go>`)
///     plan -> fan_out ?> worker;             // `fan_out: fn(&S) -> Vec<P>`, `worker: fn(&P)`:
///                                            // one `Send` per payload
/// }
/// ```
///
/// Checked at compile time, each at the token at fault: unknown node (with the closest name),
/// duplicate node, unreachable node, node with no path to END, edges out of END or into START, a
/// join naming a node twice, a node function that does not fit the state, an unmapped route
/// variant, a payload type the `Send` target does not take, an unknown field in `writes(..)`, and
/// two nodes that can run in the same step both writing a single-value field. A node's writes
/// outside its `writes(..)` fail the run.
///
/// ```
/// # weir::__private::__doc_state!();
/// use weir::prelude::*;
///
/// fn greet(s: &Doc) -> DocUpdate {
///     DocUpdate::default().text(format!("hello {}", s.text))
/// }
///
/// let app = graph! {
///     state: Doc,
///     START -> greet -> END;
/// }
/// .compile()
/// .unwrap();
/// # let rt = tokio::runtime::Runtime::new().unwrap();
/// let out = rt.block_on(app.invoke(Doc { text: "world".into() }, &RunConfig::default())).unwrap();
/// assert_eq!(out.text, "hello world");
/// ```
pub use weir_macros::graph;
pub use weir_runtime::{
    channel, graph, state, AppendMark, BoxError, BuildError, ChannelKind, CodecError, Command, CompiledGraph, Context,
    DrainHandle, Error, FieldInfo, Goto, GraphBuilder, IntoInput, NodeHandle, NodeId, NodeRef, RetryPolicy, RunConfig,
    State, Status, Update, Writes, END, START,
};

/// The items most programs need: `use weir::prelude::*;`.
pub mod prelude {
    pub use crate::{
        BoxError, BuildError, Command, CompiledGraph, Context, DrainHandle, Error, Goto, GraphBuilder, NodeId,
        RetryPolicy, RunConfig, State, Update, END, START,
    };
    pub use weir_macros::graph;
}

/// Not public API: the paths generated code uses. Not covered by semver.
#[doc(hidden)]
pub mod __private {
    pub use ::core;
    pub use ::serde;
    pub use ::serde_json;
    pub use ::std::vec::Vec;
    pub use weir_runtime::channel;
    pub use weir_runtime::state;
    pub use weir_runtime::*;

    pub use self::graph_macro::*;

    /// What `graph!` expansions call: spanned assertions whose failures name the problem.
    mod graph_macro {
        use weir_runtime::graph::{IntoNode, NodeHandle};
        use weir_runtime::{Goto, GraphBuilder, State};

        /// A function that can be a node of a graph over `S` (`M` tells its shapes apart).
        #[diagnostic::on_unimplemented(
            message = "`{Self}` cannot be a node of a graph over `{S}`",
            label = "this node's function does not fit the state `{S}`",
            note = "a node is a function, sync or async, taking `&{S}` and optionally `&weir::Context`, and returning the state's update type, a `Command<{S}>`, `()`, or a `Result` of those"
        )]
        pub trait NodeFunction<S: State, M>: Sized {
            /// Adds the node to `g`.
            fn add_to(self, g: &mut GraphBuilder<S>, name: &'static str) -> NodeHandle<S>;
        }

        #[diagnostic::do_not_recommend]
        impl<S: State, M, F: IntoNode<S, S, M>> NodeFunction<S, M> for F {
            fn add_to(self, g: &mut GraphBuilder<S>, name: &'static str) -> NodeHandle<S> {
                g.add_node(name, self)
            }
        }

        /// A function that can be a node run by `Send`s on payloads `I` in a graph over `S`.
        #[diagnostic::on_unimplemented(
            message = "`{Self}` cannot be a node run by `Send`s in a graph over `{S}`",
            label = "this node's function does not fit a `Send` target",
            note = "a node run by `Send`s is a function, sync or async, taking `&P` (the payload its router returns, which must be `Serialize` and `DeserializeOwned` to be checkpointed) and optionally `&weir::Context`, and returning the state's update type, a `Command<{S}>`, `()`, or a `Result` of those"
        )]
        pub trait SendNodeFunction<S: State, I, M>: Sized {
            /// Adds the node to `g`.
            fn add_to(self, g: &mut GraphBuilder<S>, name: &'static str) -> NodeHandle<S, I>;
        }

        #[diagnostic::do_not_recommend]
        impl<S, I, M, F> SendNodeFunction<S, I, M> for F
        where
            S: State,
            I: ::serde::Serialize + ::serde::de::DeserializeOwned + Send + Sync + 'static,
            F: IntoNode<I, S, M>,
        {
            fn add_to(self, g: &mut GraphBuilder<S>, name: &'static str) -> NodeHandle<S, I> {
                g.add_send_node(name, self)
            }
        }

        /// What a send route's router returns: payloads of type `I`.
        #[diagnostic::on_unimplemented(
            message = "the router returns `{Self}`, but the node it sends to takes `&{I}`",
            label = "expected payloads of type `{I}`",
            note = "a send router returns `Vec<P>` (or any iterator of `P`), and the node it sends to takes `&P`"
        )]
        pub trait Payloads<I> {
            /// One `Send` to `node` per payload, in order.
            fn sends<S: State>(self, node: &NodeHandle<S, I>) -> Vec<Goto<S>>;
        }

        #[diagnostic::do_not_recommend]
        impl<I: Send + Sync + 'static, T: IntoIterator<Item = I>> Payloads<I> for T {
            fn sends<S: State>(self, node: &NodeHandle<S, I>) -> Vec<Goto<S>> {
                self.into_iter().map(|p| node.send(p)).collect()
            }
        }

        /// One `Send` to `node` per payload.
        pub fn send_to<S: State, I, P: Payloads<I>>(node: &NodeHandle<S, I>, payloads: P) -> Vec<Goto<S>> {
            payloads.sends(node)
        }

        const fn str_eq(a: &str, b: &str) -> bool {
            let (a, b) = (a.as_bytes(), b.as_bytes());
            if a.len() != b.len() {
                return false;
            }
            let mut i = 0;
            while i < a.len() {
                if a[i] != b[i] {
                    return false;
                }
                i += 1;
            }
            true
        }

        /// The index of the field `name` in `S::FIELDS`.
        pub const fn field_index<S: State>(name: &str) -> Option<usize> {
            let fields = S::FIELDS;
            let mut i = 0;
            while i < fields.len() {
                if str_eq(fields[i].name, name) {
                    return Some(i);
                }
                i += 1;
            }
            None
        }

        /// Whether the field `name` of `S` takes one write per step (false for no such field).
        pub const fn field_takes_one_write<S: State>(name: &str) -> bool {
            match field_index::<S>(name) {
                Some(i) => S::FIELDS[i].kind.takes_one_write(),
                None => false,
            }
        }
    }
}
