//! # weir
//!
//! LangGraph's stateful agent-graph model for Rust, with the wiring checked by the compiler.
//!
//! A state is a struct whose fields are typed channels (`#[derive(State)]`); a graph is a set of
//! nodes (plain functions, sync or async) joined by edges, joins, routers and `Send`s; a compiled
//! graph runs LangGraph's Pregel superstep loop: the nodes of a step run concurrently on tokio,
//! read the state as it was at the start of the step, and their writes are applied at the step
//! boundary through each field's reducer, in a deterministic order.
//!
//! # Quick start
//!
//! ```
//! use weir::prelude::*;
//!
//! #[derive(State, Clone, Debug, Default)]
//! struct Chat {
//!     question: String,
//!     #[reducer(append)]
//!     log: Vec<String>,
//! }
//!
//! fn think(s: &Chat) -> ChatUpdate {
//!     ChatUpdate::default().log(vec![format!("thinking about {}", s.question)])
//! }
//!
//! async fn answer(s: &Chat) -> ChatUpdate {
//!     ChatUpdate::default().log(vec![format!("answer after {} notes", s.log.len())])
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let app = graph! { state: Chat, START -> think -> answer; }.compile()?;
//! let out = app.invoke(ChatUpdate::default().question("supersteps".into()), &RunConfig::default()).await?;
//! assert_eq!(out.log, ["thinking about supersteps", "answer after 1 notes"]);
//! # Ok::<(), BoxError>(())
//! # }).unwrap();
//! ```
//!
//! With a checkpointer (`GraphBuilder::with_checkpointer`, e.g.
//! [`checkpoint::SqliteSaver`]) every step is saved: runs pause for a person
//! ([`Context::interrupt`]), resume after a crash, and replay from any past step. See the
//! README for streaming, subgraphs and workflows loaded from JSON.
//!
//! # Tracing and OpenTelemetry
//!
//! Runs, steps and tasks are `tracing` spans (`weir.run`, `weir.step`, `weir.task`) that say
//! how they ended (`status`, `error`); with the `otel` feature, [`otel`](crate::otel) exports them
//! over OTLP in one call (`weir::otel::install(Some("my-service"))`). See docs/operations.md.
//!
//! # Pausing and going on
//!
//! A node asks with `ctx.interrupt(question)?` and the run comes back
//! [`Outcome::Paused`]. [`CompiledGraph::resume_with`] answers; a [`RunCommand`] (LangGraph's
//! `Command` as a run's input) answers, updates the state and adds tasks to the paused step in
//! one call. Its update and goto are saved with the checkpoint before the step runs, so a run
//! stopped before the step completes applies them again, once, when the thread goes on.
//!
//! ```
//! use weir::checkpoint::MemorySaver;
//! use weir::prelude::*;
//!
//! #[derive(State, Clone, Debug, Default)]
//! struct Draft {
//!     #[reducer(append)]
//!     log: Vec<String>,
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut g = GraphBuilder::<Draft>::new();
//! g.add_node("ask", |_: &Draft, ctx: &Context| -> Result<DraftUpdate, BoxError> {
//!     let publish: bool = ctx.interrupt("publish?")?;
//!     Ok(DraftUpdate::default().log(vec![format!("publish: {publish}")]))
//! });
//! g.add_edge(START, "ask").add_edge("ask", END);
//! let app = g.with_checkpointer(MemorySaver::new()).compile()?;
//! let cfg = RunConfig::thread("t-1");
//! let out = app.run(DraftUpdate::default().log(vec!["draft".into()]), &cfg).await?;
//! assert!(out.is_paused());
//! // Answer, and edit the state before the node runs again, in one call.
//! let edit = DraftUpdate::default().log(vec!["edited".into()]);
//! let out = app.invoke(RunCommand::new().resume(true).update(edit), &cfg).await?;
//! assert_eq!(out.log, ["draft", "edited", "publish: true"]);
//! # Ok::<(), BoxError>(())
//! # }).unwrap();
//! ```

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

#[cfg(feature = "otel")]
pub mod otel;

#[doc = include_str!("docs/graph.md")]
pub use weir_macros::graph;

#[doc = include_str!("docs/task.md")]
pub use weir_macros::task;

#[doc = include_str!("docs/entrypoint.md")]
pub use weir_macros::entrypoint;
pub use weir_runtime::{
    cache, channel, checkpoint, func, graph, state, store, subgraph, writes_json, Answer, AppendMark, BoxError,
    BuildError, CachePolicy, ChannelKind, CodecError, Command, CompiledGraph, Context, ContextValue, DrainHandle,
    Durability, Error, Event, FieldInfo, Goto, GraphBuilder, Interrupt, IntoInput, MessageMeta, NodeError, NodeHandle,
    NodeId, NodeRef, Outcome, ParentCommand, PauseKind, Paused, RetryPolicy, RunCommand, RunConfig, RunContext,
    RunInput, RunStream, State, StateEdit, StateSnapshot, StreamMode, SubgraphEvent, TaskSnapshot, Update, Writes,
    AS_COPY, AS_END, AS_INPUT, END, START,
};

#[doc = include_str!("docs/state.md")]
pub use weir_macros::State;

/// Reducer functions for `#[reducer(with = ..)]` and the built-in reducers of `#[derive(State)]`.
///
/// A reducer is a `fn(&mut T, U)`: it folds one write `U` into the field's value `T`. The
/// built-in `#[reducer(append)]`, `#[reducer(add)]` and `#[reducer(merge)]` use the functions of
/// this module.
pub mod reducers {
    use core::ops::AddAssign;

    /// Appends `later` to `acc` (`#[reducer(append)]`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut notes = vec!["a"];
    /// weir::reducers::append(&mut notes, vec!["b", "c"]);
    /// assert_eq!(notes, ["a", "b", "c"]);
    /// ```
    pub fn append<E>(acc: &mut Vec<E>, mut later: Vec<E>) {
        acc.append(&mut later);
    }

    /// Adds `x` to `acc` (`#[reducer(add)]`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut calls = 1;
    /// weir::reducers::add(&mut calls, 2);
    /// assert_eq!(calls, 3);
    /// ```
    pub fn add<T: AddAssign>(acc: &mut T, x: T) {
        *acc += x;
    }

    /// Inserts the entries of `later` into the map `acc`; a key already present takes the later
    /// value (`#[reducer(merge)]`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    ///
    /// let mut scores = BTreeMap::from([("a", 1), ("b", 2)]);
    /// weir::reducers::merge(&mut scores, BTreeMap::from([("b", 5), ("c", 3)]));
    /// assert_eq!(scores, BTreeMap::from([("a", 1), ("b", 5), ("c", 3)]));
    /// ```
    pub fn merge<M, K, V>(acc: &mut M, later: M)
    where
        M: IntoIterator<Item = (K, V)> + Extend<(K, V)>,
    {
        acc.extend(later);
    }

    /// Replaces the value with the write: last write wins.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut status = "draft";
    /// weir::reducers::replace(&mut status, "final");
    /// assert_eq!(status, "final");
    /// ```
    pub fn replace<T>(acc: &mut T, x: T) {
        *acc = x;
    }
}

/// The items most programs need: `use weir::prelude::*;`.
pub mod prelude {
    pub use crate::{
        BoxError, BuildError, Command, CompiledGraph, Context, DrainHandle, Durability, Error, Goto, GraphBuilder,
        NodeId, Outcome, RetryPolicy, RunCommand, RunConfig, State, Update, END, START,
    };
    pub use weir_macros::{entrypoint, graph, task};
}

/// Not public API: the paths generated code uses. Not covered by semver.
#[doc(hidden)]
pub mod __private {
    pub use ::core;
    pub use ::serde;
    pub use ::serde_json;
    pub use ::std::vec::Vec;
    pub use weir_runtime::channel;
    pub use weir_runtime::channel::{
        AnyValue, BinaryOperatorAggregate, Channel, EphemeralValue, LastValue, LastValueAfterFinish, ReducerWrite,
        Topic, UntrackedValue,
    };
    pub use weir_runtime::state;
    pub use weir_runtime::state::{apply_field, FieldError};
    pub use weir_runtime::*;

    pub use self::graph_macro::*;

    /// What `graph!` expansions call: spanned assertions whose failures name the problem.
    mod graph_macro {
        use std::borrow::Cow;
        use weir_runtime::graph::{ContextFor, IntoNode, NodeHandle};
        use weir_runtime::{ContextValue, Goto, GraphBuilder, State};

        /// A function that can be a node of a graph over `S` (`M` tells its shapes apart).
        #[diagnostic::on_unimplemented(
            message = "`{Self}` cannot be a node of a graph over `{S}`",
            label = "this node's function does not fit the state `{S}`",
            note = "a node is a function, sync or async, taking `&{S}` and optionally `&weir::Context` (then, in a graph that declares a run context, a reference to it), and returning the state's update type, a `Command<{S}>`, `()`, or a `Result` of those"
        )]
        pub trait NodeFunction<S: State, C, M>: Sized {
            /// Adds the node to `g`, whose context type `C` the node's must be.
            fn add_to(self, g: &mut GraphBuilder<S, C>, name: &'static str) -> NodeHandle<S>
            where
                M: ContextFor<C>;
        }

        #[diagnostic::do_not_recommend]
        impl<S: State, C: ContextValue, M, F: IntoNode<S, S, M>> NodeFunction<S, C, M> for F {
            fn add_to(self, g: &mut GraphBuilder<S, C>, name: &'static str) -> NodeHandle<S>
            where
                M: ContextFor<C>,
            {
                g.add_node(name, self)
            }
        }

        /// A function that can be a node run by `Send`s on payloads `I` in a graph over `S`.
        #[diagnostic::on_unimplemented(
            message = "`{Self}` cannot be a node run by `Send`s in a graph over `{S}`",
            label = "this node's function does not fit a `Send` target",
            note = "a node run by `Send`s is a function, sync or async, taking `&P` (the payload its router returns, which must be `Serialize` and `DeserializeOwned` to be checkpointed) and optionally `&weir::Context`, and returning the state's update type, a `Command<{S}>`, `()`, or a `Result` of those"
        )]
        pub trait SendNodeFunction<S: State, C, I, M>: Sized {
            /// Adds the node to `g`, whose context type `C` the node's must be.
            fn add_to(self, g: &mut GraphBuilder<S, C>, name: &'static str) -> NodeHandle<S, I>
            where
                M: ContextFor<C>;
        }

        #[diagnostic::do_not_recommend]
        impl<S, C, I, M, F> SendNodeFunction<S, C, I, M> for F
        where
            S: State,
            C: ContextValue,
            I: ::serde::Serialize + ::serde::de::DeserializeOwned + Send + Sync + 'static,
            F: IntoNode<I, S, M>,
        {
            fn add_to(self, g: &mut GraphBuilder<S, C>, name: &'static str) -> NodeHandle<S, I>
            where
                M: ContextFor<C>,
            {
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
                // A constant's names are borrowed (`FieldInfo::new`); an owned one cannot be read
                // in a `const fn`, and a constant cannot own a non-empty `String`.
                if let Cow::Borrowed(field) = &fields[i].name {
                    if str_eq(field, name) {
                        return Some(i);
                    }
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

    use core::ops::AddAssign;

    // The checks `#[derive(State)]` makes on a reducer field, at the field's tokens: each reducer
    // is called through a trait whose failure message names the attribute. The blanket impls are
    // `do_not_recommend`, so the compiler reports the trait, not the bound behind it.

    /// `#[reducer(append)]`: the field is a `Vec`.
    #[diagnostic::on_unimplemented(
        message = "`#[reducer(append)]` requires a `Vec<T>` field, found `{Self}`",
        label = "not a `Vec<T>`",
        note = "`append` concatenates the `Vec`s written in one step, in task order"
    )]
    pub trait AppendField: Sized {
        /// The reducer; it only appends.
        fn reduce(acc: &mut Self, later: Self) -> crate::channel::Folded;
    }
    impl<E> AppendField for Vec<E> {
        fn reduce(acc: &mut Self, later: Self) -> crate::channel::Folded {
            crate::reducers::append(acc, later);
            crate::channel::Folded::Appended
        }
    }

    /// `#[reducer(add)]`: the field implements `AddAssign`.
    #[diagnostic::on_unimplemented(
        message = "`#[reducer(add)]` requires a field type that implements `AddAssign`, found `{Self}`",
        label = "`{Self}` does not implement `AddAssign`"
    )]
    pub trait AddField: Sized {
        /// The reducer.
        fn reduce(acc: &mut Self, x: Self);
    }
    #[diagnostic::do_not_recommend]
    impl<T: AddAssign> AddField for T {
        fn reduce(acc: &mut Self, x: Self) {
            crate::reducers::add(acc, x);
        }
    }

    /// `#[reducer(merge)]`: the field is a map, a collection of `(key, value)` entries.
    #[diagnostic::on_unimplemented(
        message = "`#[reducer(merge)]` requires a map field (such as `BTreeMap` or `HashMap`), found `{Self}`",
        label = "not a map of `(key, value)` entries",
        note = "a map is a type that implements `IntoIterator<Item = (K, V)>` and `Extend<(K, V)>`"
    )]
    pub trait MergeField: Sized {
        /// The reducer.
        fn reduce(acc: &mut Self, later: Self);
    }
    #[diagnostic::do_not_recommend]
    impl<M, K, V> MergeField for M
    where
        M: IntoIterator<Item = (K, V)> + Extend<(K, V)>,
    {
        fn reduce(acc: &mut Self, later: Self) {
            crate::reducers::merge(acc, later);
        }
    }

    /// `#[reducer(with = f)]`: `f` is a `fn(&mut T, U)`, or a `fn(&mut T, U) -> Folded` that tells
    /// whether each write only appended (`M`, inferred, tells the two apart). A reducer that does
    /// not tell is taken to rewrite the value at each write.
    #[diagnostic::on_unimplemented(
        message = "the reducer `{Self}` does not fit the field: expected a `fn(&mut {T}, {U})`",
        label = "expected a `fn(&mut {T}, {U})` or a `fn(&mut {T}, {U}) -> Folded`",
        note = "when a write's type differs from the field's, name it: `#[reducer(with = f, update = U)]`"
    )]
    pub trait ReducerFn<T, U, M> {
        /// Calls the reducer.
        fn reduce(&self, acc: &mut T, x: U) -> crate::channel::Folded;
    }
    #[diagnostic::do_not_recommend]
    impl<T, U, F: Fn(&mut T, U)> ReducerFn<T, U, ()> for F {
        fn reduce(&self, acc: &mut T, x: U) -> crate::channel::Folded {
            self(acc, x);
            crate::channel::Folded::Rewrote
        }
    }
    #[diagnostic::do_not_recommend]
    impl<T, U, F: Fn(&mut T, U) -> crate::channel::Folded> ReducerFn<T, U, crate::channel::Folded> for F {
        fn reduce(&self, acc: &mut T, x: U) -> crate::channel::Folded {
            self(acc, x)
        }
    }
}
