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

/// Declares a graph over a state, checks its wiring at compile time, and expands into
/// [`GraphBuilder`] calls with static node ids.
///
/// ```text
/// graph! {
///     pub struct ResearchGraph;              // optional: a named graph with `MERMAID`, `NODES`,
///                                            // `builder()` and `compile()`; without it the macro
///                                            // is an expression of type `GraphBuilder<State>`
///     state: Research,
///     context: User,                         // optional: the runs' context type; nodes may
///                                            // take it as `(&Research, &Context, &User)`, and
///                                            // each run passes one (`RunConfig::context`)
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
///     web -> by_plan(context) ? {            // a router reading the run context too:
///         Plan::Paid => docs,                // `by_plan: fn(&Research, &User) -> Plan` (also
///         Plan::Free => END,                 // `(|s: &Research, u: &User| ..)`, and in `[..]`
///     };                                     // and `?>` routes); `User` must be the `context:`
/// }
/// ```
///
/// Checked at compile time, each at the token at fault: unknown node (with the closest name),
/// duplicate node, unreachable node, node with no path to END, edges out of END or into START, a
/// join naming a node twice, a node function that does not fit the state, an unmapped route
/// variant, a route value mapped by two arms (one `_` after them is a catch-all), a payload type the `Send` target does not take, an unknown field in `writes(..)`, and
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

/// Makes a function a task of the functional API (LangGraph's `@task`): calling it inside an
/// [`entrypoint`] returns a [`func::TaskFuture`] of its result, so several calls made before
/// awaiting run in parallel, and its result is saved in the entrypoint's checkpoint.
///
/// ```text
/// #[task]                                           // the task's name is the function's
/// #[task(name = "web", retry(max_attempts = 3), timeout(30s))]   // options as a node's
/// ```
///
/// The function, sync or async, takes named arguments and returns a value or a `Result` of one;
/// the arguments and the value must be serde's `Serialize` and `Deserialize` (a compile error
/// at the type otherwise). When the entrypoint re-runs from the top after an interrupt or a
/// crash, a call whose position (the order of task calls, counted when they are made) has a
/// saved result returns it without running; a call whose task or arguments differ from the
/// saved call at its position fails, naming both. Called outside an entrypoint, its future
/// resolves to an error naming the task.
///
/// ```
/// use weir::prelude::*;
///
/// #[task]
/// async fn double(n: u64) -> u64 {
///     n * 2
/// }
///
/// #[entrypoint]
/// async fn sum_doubles(n: u64) -> Result<u64, BoxError> {
///     let calls: Vec<_> = (0..n).map(double).collect();   // all started: they run in parallel
///     let mut total = 0;
///     for c in calls {
///         total += c.await?;
///     }
///     Ok(total)
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let app = sum_doubles().compile()?;
/// assert_eq!(app.invoke(4, &RunConfig::default()).await?, 12);
/// # Ok::<(), BoxError>(())
/// # }).unwrap();
/// ```
pub use weir_macros::task;

/// Makes a one-input function an entrypoint of the functional API (LangGraph's
/// `@entrypoint`): the function is replaced by one returning its [`func::Entrypoint`], which
/// compiles to a graph of one node ([`func::Func`], its graph a [`CompiledGraph`] over
/// [`func::FuncState`]): `invoke`, `stream`, resumes, `get_state`, history, checkpointers and the
/// server work as for any graph.
///
/// Besides its input (its first argument), the function may take `previous: Option<P>` (what
/// the last call on the same thread saved: its return value, or a [`func::Final`]'s `save`)
/// and a `Context` or `&Context` (store, custom events, interrupts). A second input is a compile
/// error. It returns a value or a `Result` of one, or a [`func::Final`] to return one value and
/// save another.
///
/// ```
/// use weir::checkpoint::MemorySaver;
/// use weir::func::Final;
/// use weir::prelude::*;
///
/// #[entrypoint]
/// async fn counter(add: u32, previous: Option<u32>) -> Final<String, u32> {
///     let total = previous.unwrap_or(0) + add;
///     Final { value: format!("total {total}"), save: total }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let app = counter().with_checkpointer(MemorySaver::new()).compile()?;
/// let cfg = RunConfig::thread("t");
/// assert_eq!(app.invoke(2, &cfg).await?, "total 2");
/// assert_eq!(app.invoke(3, &cfg).await?, "total 5");
/// # Ok::<(), BoxError>(())
/// # }).unwrap();
/// ```
pub use weir_macros::entrypoint;
pub use weir_runtime::{
    cache, channel, checkpoint, func, graph, state, store, subgraph, writes_json, Answer, AppendMark, BoxError,
    BuildError, CachePolicy, ChannelKind, CodecError, Command, CompiledGraph, Context, ContextValue, DrainHandle,
    Durability, Error, Event, FieldInfo, Goto, GraphBuilder, Interrupt, IntoInput, MessageMeta, NodeError, NodeHandle,
    NodeId, NodeRef, Outcome, ParentCommand, PauseKind, Paused, RetryPolicy, RunCommand, RunConfig, RunContext,
    RunInput, RunStream, State, StateEdit, StateSnapshot, StreamMode, SubgraphEvent, TaskSnapshot, Update, Writes,
    AS_COPY, AS_END, AS_INPUT, END, START,
};

/// Derives [`State`](trait@State) for a struct with named fields: each field becomes a channel.
///
/// Besides the `State` impl it generates, next to the struct and with its visibility:
///
/// - `<Name>Update`, the partial update nodes return: one slot per field, `Default`, `Clone`,
///   `Debug`, and a builder method per field (`.notes(vec![..])`, `.llm_calls(1)`) taking the
///   field's *write type* (the field's type, or the `update = U` type of a `with` reducer). Reducer
///   fields also get `.overwrite_<field>(value)`, which replaces the value and bypasses the reducer
///   (LangGraph's `Overwrite`: the step's later writes to the field are ignored, and a second
///   overwrite in the same step is an error).
/// - `Name::__WEIR_FIELD_<field>: usize`, a hidden associated const per field holding its index in
///   [`State::FIELDS`], which `graph!` uses to resolve `writes(field, ..)` at compile time.
///
/// Every field type must implement `Default` (a state starts from its fields' defaults) and the
/// struct must be `Clone + Debug + Send + Sync + 'static`.
///
/// # Field attributes
///
/// At most one per field; without any, a field is a *last value*: it takes one write per step
/// (two nodes writing it in the same step fail the run with an error naming the field).
///
/// | attribute | channel | write type | merge of a step's writes |
/// |---|---|---|---|
/// | none, or `#[channel(last_value)]` | `LastValue` | `T` | exactly one write per step |
/// | `#[reducer(append)]` (on `Vec<E>`) | reducer | `Vec<E>` | concatenated in task order |
/// | `#[reducer(add)]` (on `T: AddAssign`) | reducer | `T` | `value += write` |
/// | `#[reducer(merge)]` (on a map) | reducer | the map | entries extended, later keys win |
/// | `#[reducer(with = path::to::f)]` | reducer | `T` | `f(&mut value, write)` with `f: fn(&mut T, T)` (or `-> Folded`, below) |
/// | `#[reducer(with = f, update = U)]` | reducer | `U` | `f(&mut value, write)` with `f: fn(&mut T, U)` (or `-> Folded`) |
/// | `#[channel(ephemeral)]` | `EphemeralValue` | `T` | one write; cleared the step after |
/// | `#[channel(ephemeral, unguarded)]` | `EphemeralValue` | `T` | last write wins; cleared the step after |
/// | `#[channel(any)]` | `AnyValue` | `T` | last write wins; cleared by a step that does not write it |
/// | `#[channel(topic)]` (on `Vec<E>`) | `Topic` | `Vec<E>` | this step's writes, concatenated; cleared the step after |
/// | `#[channel(topic, accumulate)]` (on `Vec<E>`) | `Topic` | `Vec<E>` | appended, kept across steps |
/// | `#[channel(untracked)]` | `UntrackedValue` | `T` | one write, kept, never checkpointed |
/// | `#[channel(untracked, unguarded)]` | `UntrackedValue` | `T` | last write wins, never checkpointed |
/// | `#[channel(after_finish)]` | `LastValueAfterFinish` | `T` | last write wins; readable once the run finishes |
///
/// A reducer folds a step's writes into the value, starting from the field's `Default`; the
/// reducer functions `append`, `add` and `merge` are in [`reducers`].
///
/// # Checkpoints of a list that grows
///
/// A checkpoint stores a field that did not change as a reference to an earlier blob, and a
/// `Vec<E>` field whose writes since its last blob only appended as the new items alone, a delta
/// onto that blob (its whole value again once the deltas outweigh it). `#[reducer(append)]` only
/// appends. A `with` reducer tells by its return type: a `fn(&mut Vec<E>, U) -> Folded`
/// ([`channel::Folded`]) returns `Folded::Appended` when it only added items at the end and left
/// the others as they were, `Folded::Rewrote` when it changed, moved or removed one; a
/// `fn(&mut Vec<E>, U)` says nothing and its field is stored whole at each change. The
/// attribute is the same (`#[reducer(with = f, update = U)]`); a field whose element type is a
/// parameter of the struct is always stored whole. `add_messages` of `weir-agent` reports, so a
/// conversation stores each checkpoint's new messages, not the whole list again:
///
/// ```
/// use weir::channel::Folded;
/// use weir::prelude::*;
///
/// /// Appends a line, or clears the log on an empty one.
/// fn log_or_clear(log: &mut Vec<String>, line: String) -> Folded {
///     if line.is_empty() {
///         log.clear();
///         Folded::Rewrote
///     } else {
///         log.push(line);
///         Folded::Appended
///     }
/// }
///
/// #[derive(State, Clone, Debug, Default)]
/// struct Chat {
///     #[reducer(with = log_or_clear, update = String)]
///     log: Vec<String>,
/// }
/// # let _ = ChatUpdate::default().log("hi".to_owned());
/// ```
///
/// # Struct attributes
///
/// - `#[state(crate = path)]`: the path of the `weir` crate in generated code (default `::weir`),
///   for a crate that re-exports weir under another name.
/// - `#[state(update = Name)]`: the name of the update type (default `<Name>Update`).
///
/// Other attributes (`#[serde(..)]`, doc comments, other derives) are left alone.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use weir::prelude::*;
///
/// fn keep_max(best: &mut f64, score: f64) {
///     *best = best.max(score);
/// }
///
/// fn push_one(log: &mut Vec<String>, line: String) {
///     log.push(line);
/// }
///
/// #[derive(State, Clone, Debug, Default)]
/// struct Research {
///     /// No attribute: a last value.
///     question: String,
///     #[reducer(append)]
///     notes: Vec<String>,
///     #[reducer(add)]
///     llm_calls: u32,
///     #[reducer(merge)]
///     sources: BTreeMap<String, u32>,
///     #[reducer(with = keep_max)]
///     best: f64,
///     #[reducer(with = push_one, update = String)]
///     log: Vec<String>,
///     #[channel(ephemeral)]
///     scratch: Option<String>,
///     #[channel(topic)]
///     events: Vec<String>,
///     #[channel(topic, accumulate)]
///     history: Vec<String>,
///     #[channel(any)]
///     last_seen: String,
///     #[channel(untracked)]
///     cache: Option<u64>,
///     #[channel(after_finish)]
///     summary: String,
/// }
///
/// let update = ResearchUpdate::default()
///     .notes(vec!["a note".to_owned()])
///     .llm_calls(1)
///     .best(0.5)
///     .log("searched".to_owned())
///     .overwrite_sources(BTreeMap::new());
/// assert!(update.is_written(Research::__WEIR_FIELD_notes));
/// assert!(!update.is_written(Research::__WEIR_FIELD_question));
/// assert_eq!(Research::FIELDS[1].name, "notes");
/// assert_eq!(Research::FIELDS[1].kind, weir::ChannelKind::Reducer);
/// ```
///
/// A graph that fans out to two nodes, whose notes are appended in task order:
///
/// ```
/// use weir::prelude::*;
///
/// #[derive(State, Clone, Debug, Default)]
/// struct Notes {
///     #[reducer(append)]
///     notes: Vec<String>,
///     #[reducer(add)]
///     calls: u32,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut g = GraphBuilder::<Notes>::new();
/// g.add_node("a", |_: &Notes| NotesUpdate::default().notes(vec!["a".into()]).calls(1));
/// g.add_node("b", |_: &Notes| NotesUpdate::default().notes(vec!["b".into()]).calls(1));
/// g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END);
/// let out = g.compile()?.invoke(Notes::default(), &RunConfig::default()).await?;
/// assert_eq!(out.notes, ["a", "b"]);
/// assert_eq!(out.calls, 2);
/// # Ok(())
/// # }
/// ```
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
