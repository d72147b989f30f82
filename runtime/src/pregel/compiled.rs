//! A compiled graph's public face: running it (`invoke`, `run`, `stream`, the resumes), reading
//! and writing its threads' state, and the same graph on another checkpointer.

use super::config::{IntoInput, RunConfig};
use super::outcome::Outcome;
use super::snapshot::{self, StateSnapshot};
use super::stream::{self, RunStream, StreamMode};
use super::{drive, persist, run};
use crate::error::Error;
use crate::graph::{CompiledGraph, ContextValue, Durability, RunInfo};
use crate::state::State;
use std::sync::Arc;

impl<S: State, C: ContextValue> CompiledGraph<S, C> {
    /// The names of the graph's nodes, in the order they were added.
    pub fn node_names(&self) -> Vec<&str> {
        self.inner.user_node_names()
    }

    /// Runs the graph on `input` (a whole state, or an update writing some fields) until no node
    /// is left to run, and returns the final state.
    ///
    /// # Errors
    /// A node failed or panicked (the error names it and the step), a step's writes broke a
    /// channel's rule, the recursion limit was reached, a drain was requested, or the run paused
    /// (see [`run`](Self::run) to get the pause as an [`Outcome`]).
    pub async fn invoke<M>(&self, input: impl IntoInput<S, M>, config: &RunConfig<C>) -> Result<S, Error> {
        match self.run(input, config).await? {
            Outcome::Done(s) => Ok(s),
            Outcome::Paused { pauses, .. } => Err(Error::paused(pauses)),
        }
    }

    /// Runs the graph on `input`, on the configured thread when the graph has a checkpointer: a
    /// new input on a thread with a paused or failed step cancels that step's tasks.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke), except that a pause is an [`Outcome::Paused`].
    pub async fn run<M>(&self, input: impl IntoInput<S, M>, config: &RunConfig<C>) -> Result<Outcome<S>, Error> {
        drive::drive(&self.untyped(), input.into_input().into(), &config.untyped(), None).await
    }

    /// Runs the graph on `input` as [`run`](Self::run) does, reporting what happens as a stream of
    /// [`Event`](crate::Event)s of the given `modes` (combine with `|`). The stream is bounded: a slow consumer
    /// slows the run; dropping the stream stops the run cleanly between two steps, its last
    /// checkpoint intact. An error is the stream's last item.
    ///
    /// Needs a tokio runtime: the run goes on in a task of its own.
    pub fn stream<M>(&self, input: impl IntoInput<S, M>, config: &RunConfig<C>, modes: StreamMode) -> RunStream<S> {
        self.stream_from(input.into_input().into(), config, modes)
    }

    /// Resumes the thread as [`resume`](Self::resume) does (or answers its paused node with
    /// `answer`), streaming as [`stream`](Self::stream) does.
    ///
    /// # Errors
    /// When `answer` cannot be serialized.
    pub fn stream_resume(
        &self,
        answer: Option<impl serde::Serialize>,
        config: &RunConfig<C>,
        modes: StreamMode,
    ) -> Result<RunStream<S>, Error> {
        let answers = answer.map(|a| (None::<String>, a));
        Ok(self.stream_from(drive::Start::Resume(answers_to_json(answers)?), config, modes))
    }

    /// Answers several paused tasks at once as [`resume_map`](Self::resume_map) does, streaming
    /// as [`stream`](Self::stream) does.
    ///
    /// # Errors
    /// When an answer cannot be serialized.
    pub fn stream_resume_map<K: Into<String>, A: serde::Serialize>(
        &self,
        answers: impl IntoIterator<Item = (K, A)>,
        config: &RunConfig<C>,
        modes: StreamMode,
    ) -> Result<RunStream<S>, Error> {
        let answers = answers_to_json(answers.into_iter().map(|(k, a)| (Some(k.into()), a)))?;
        Ok(self.stream_from(drive::Start::Resume(answers), config, modes))
    }

    fn stream_from(&self, start: drive::Start<S>, config: &RunConfig<C>, modes: StreamMode) -> RunStream<S> {
        let (tx, rx) = tokio::sync::mpsc::channel(stream::CAPACITY);
        let (g, config) = (self.untyped().into_owned(), config.untyped().into_owned());
        let handle = tokio::spawn(async move {
            let thread = config.thread_id.as_deref().map(Arc::from);
            let sink = stream::Sink::new(tx.clone(), modes, config.subgraphs, thread);
            let outcome = drive::drive(&g, start, &config, Some(sink)).await;
            if let Err(e) = &outcome {
                // The error is the stream's last item, and the outcome's: one error, shared.
                let _ = tx.send(Err(e.clone())).await;
            }
            outcome
        });
        RunStream::new(rx, handle)
    }

    /// Goes on from the thread's latest checkpoint (or `config.checkpoint_id`, as a fork): after
    /// a failure only the tasks that failed run again; after a static interrupt the run passes it.
    ///
    /// # Errors
    /// As [`run`](Self::run); also when the thread has no checkpoint.
    pub async fn resume(&self, config: &RunConfig<C>) -> Result<Outcome<S>, Error> {
        drive::drive(
            &self.untyped(),
            drive::Start::Resume(Vec::new()),
            &config.untyped(),
            None,
        )
        .await
    }

    /// Answers the thread's paused node with `answer` and goes on: the node runs again from the
    /// top and its [`Context::interrupt`](crate::Context::interrupt) call returns `answer`.
    ///
    /// # Errors
    /// As [`run`](Self::run); also when no node is paused, or several are (answer them with
    /// [`resume_map`](Self::resume_map)).
    pub async fn resume_with<A: serde::Serialize>(
        &self,
        answer: A,
        config: &RunConfig<C>,
    ) -> Result<Outcome<S>, Error> {
        let answers = answers_to_json([(None::<String>, answer)])?;
        drive::drive(&self.untyped(), drive::Start::Resume(answers), &config.untyped(), None).await
    }

    /// Answers the paused task `id` (see [`Paused::id`](crate::Paused::id)) and goes on.
    ///
    /// # Errors
    /// As [`resume_with`](Self::resume_with); also when no task `id` is paused.
    pub async fn resume_task<A: serde::Serialize>(
        &self,
        id: &str,
        answer: A,
        config: &RunConfig<C>,
    ) -> Result<Outcome<S>, Error> {
        self.resume_map([(id, answer)], config).await
    }

    /// Answers several paused tasks in one resume (LangGraph's `Command(resume={id: value, ..})`):
    /// each answer goes to the task whose pause has that [`Paused::id`](crate::Paused::id), and
    /// the step runs again once. A paused task left out asks its question again; a task that
    /// asks a second question pauses again under the same id. An empty map is a plain
    /// [`resume`](Self::resume). The answers may be of different types as `serde_json::Value`s.
    ///
    /// An id is a [`Paused::id`](crate::Paused::id) (a hash of the namespace, the step and the
    /// task, like LangGraph's: weir's differ in value, not in shape) or the paused task's id.
    ///
    /// # Errors
    /// As [`run`](Self::run); also when an id names no paused task (the error names it), an id
    /// is given twice, or an answer cannot be serialized.
    pub async fn resume_map<K: Into<String>, A: serde::Serialize>(
        &self,
        answers: impl IntoIterator<Item = (K, A)>,
        config: &RunConfig<C>,
    ) -> Result<Outcome<S>, Error> {
        let answers = answers_to_json(answers.into_iter().map(|(k, a)| (Some(k.into()), a)))?;
        drive::drive(&self.untyped(), drive::Start::Resume(answers), &config.untyped(), None).await
    }

    /// The thread's state at its latest checkpoint (or `config.checkpoint_id`): the values, the
    /// nodes that would run next, and the pauses. Without a `checkpoint_id` the writes of the
    /// tasks that succeeded in an incomplete step are applied to the values.
    ///
    /// # Errors
    /// When the graph has no checkpointer, or the checkpoint cannot be read.
    pub async fn get_state(&self, config: &RunConfig) -> Result<Option<StateSnapshot<S>>, Error> {
        snapshot::get_state(&self.untyped(), config).await
    }

    /// The thread's checkpoints, newest first, at most `limit`.
    ///
    /// # Errors
    /// As [`get_state`](Self::get_state).
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        limit: Option<usize>,
    ) -> Result<Vec<StateSnapshot<S>>, Error> {
        snapshot::history(&self.untyped(), config, None, limit).await
    }

    /// One page of the thread's checkpoints, newest first: at most `limit` of those older than
    /// checkpoint `before` (all of them when `None`). Only the page is read from the
    /// checkpointer, so paging through a long thread costs each page's checkpoints, not the
    /// whole history's.
    ///
    /// # Errors
    /// As [`get_state`](Self::get_state).
    pub async fn get_state_history_before(
        &self,
        config: &RunConfig,
        before: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<StateSnapshot<S>>, Error> {
        snapshot::history(&self.untyped(), config, before, limit).await
    }

    /// Writes `update` to the thread as if node `as_node` had returned it (LangGraph's
    /// `update_state`): the node's edges and routers fire, so the nodes after it run next, and
    /// the checkpoint written has source `update` and the next step. From
    /// `config.checkpoint_id`, this forks the thread there. Returns the new checkpoint's id.
    ///
    /// On a thread without a checkpoint it writes the thread's first (step 0). `as_node` may be
    /// `"__start__"` (the update is the input as the start node passes it on) or
    /// [`AS_INPUT`](crate::AS_INPUT) (`"__input__"`: a new input, source `input`, the start node
    /// next; unlike [`run`](Self::run), tasks left pending are not cancelled, as in LangGraph),
    /// [`AS_COPY`](crate::AS_COPY) (a copy of the checkpoint, [`StateEdit::copy`](crate::StateEdit::copy)) or
    /// [`AS_END`](crate::AS_END) (the step ends, [`StateEdit::end`](crate::StateEdit::end)).
    /// With `as_node` `None`: the only node of a one-node graph; the start node on a thread
    /// without a checkpoint; else the node that ran last (an error if two did, in one step).
    ///
    /// # Errors
    /// When the node is unknown or cannot be inferred, or the update breaks a channel's rule.
    pub async fn update_state(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<String, Error> {
        let edit = super::edit::StateEdit::new(update, as_node);
        super::edit::bulk_update_state(&self.untyped(), config, vec![vec![edit]]).await
    }

    /// Applies supersteps of edits to the thread, each as one step (LangGraph's
    /// `bulk_update_state`): the edits of a superstep are applied together, in the order given,
    /// as the tasks of one step, and checkpointed once. Several edits in one superstep each name
    /// their `as_node`; an edit as [`AS_INPUT`](crate::AS_INPUT) stands alone in its superstep.
    /// Replaying a run's history (`__input__`, `__start__`, then its nodes step by step) writes
    /// the same values. Returns the last checkpoint's id.
    ///
    /// # Errors
    /// As [`update_state`](Self::update_state); also when there is no superstep, a superstep
    /// has no edit, or an edit of several lacks its `as_node`. The supersteps before the one at
    /// fault stay written.
    pub async fn bulk_update_state(
        &self,
        config: &RunConfig,
        supersteps: Vec<Vec<super::edit::StateEdit<S::Update>>>,
    ) -> Result<String, Error> {
        super::edit::bulk_update_state(&self.untyped(), config, supersteps).await
    }

    /// Copies thread `from` to the new thread `to`, every namespace's checkpoints and pending
    /// writes (the server's `POST /threads/{id}/copy`; see
    /// [`Checkpointer::copy_thread`](crate::checkpoint::Checkpointer::copy_thread)): the copy
    /// has the same state and history, and runs and resumes on its own.
    ///
    /// # Errors
    /// Without a checkpointer; when `to` already has checkpoints or `from` has none (an error
    /// naming that thread); when the checkpointer fails.
    pub async fn copy_thread(&self, from: &str, to: &str) -> Result<(), Error> {
        let Some(checkpointer) = &self.checkpointer else {
            return Err(Error::config("copying a thread needs a checkpointer"));
        };
        checkpointer
            .copy_thread(from, to)
            .await
            .map_err(|e| persist::checkpointer_error(e.thread_id().unwrap_or(from).to_owned().as_str(), e))
    }

    /// Decodes a checkpoint read from a checkpointer into the state it holds, with typed serde and
    /// nothing else: bytes that do not fit the state give an error naming the thread and the
    /// field, never garbage or a panic (this is what the checkpoint fuzz target drives).
    ///
    /// # Errors
    /// When the checkpoint does not decode as this graph's state.
    pub fn decode_checkpoint(&self, loaded: crate::checkpoint::Loaded) -> Result<S, Error> {
        let config = RunConfig::thread(&*loaded.record.thread_id);
        let mut inner = run::Loop::new(self.inner.clone(), self.checkpointer.as_ref(), &config)?;
        if !inner.persist.is_on() {
            let checkpointer: Arc<dyn crate::checkpoint::Checkpointer> =
                Arc::new(crate::checkpoint::MemorySaver::new());
            let info = RunInfo {
                checkpointer,
                thread: loaded.record.thread_id.clone(),
                ns: loaded.record.ns.clone(),
                durability: Durability::default(),
                task_results: false,
                metadata: Default::default(),
            };
            let p = persist::Persist::new(info, self.inner.n_fields(), inner.versions.len());
            inner.persist = persist::Checkpointing::On(Box::new(p));
        }
        inner.restore(loaded)?;
        Ok(inner.into_state())
    }

    /// The graph as a Mermaid flowchart.
    pub fn mermaid(&self) -> String {
        self.inner.mermaid.clone()
    }

    /// The nodes added with [`GraphBuilder::add_subgraph`](crate::GraphBuilder::add_subgraph),
    /// each with its subgraph's Mermaid flowchart (what a server's drawing shows inside them).
    pub fn subgraphs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.inner.subgraphs.iter().map(|(n, m, _)| (n.as_str(), m.as_str()))
    }

    /// The fields of the state of the subgraph added as node `node`, `None` when `node` is not
    /// a subgraph node.
    pub fn subgraph_fields(&self, node: &str) -> Option<&'static [crate::state::FieldInfo]> {
        self.inner.subgraphs.iter().find(|(n, ..)| n == node).map(|(.., f)| *f)
    }
}

/// Each answer as JSON, with the id of the task it answers (`None`: the only paused task).
fn answers_to_json<A: serde::Serialize>(
    answers: impl IntoIterator<Item = (Option<String>, A)>,
) -> Result<Vec<(Option<String>, serde_json::Value)>, Error> {
    answers
        .into_iter()
        .map(|(id, a)| match serde_json::to_value(a) {
            Ok(v) => Ok((id, v)),
            Err(e) => Err(Error::config(format!("the answer cannot be saved: {e}"))),
        })
        .collect()
}

impl<S: State, C> CompiledGraph<S, C> {
    /// The same graph, saving its checkpoints with `checkpointer` (unless it has a checkpointer of its own).
    pub(crate) fn with_parent_checkpointer(&self, checkpointer: Arc<dyn crate::checkpoint::Checkpointer>) -> Self {
        if self.checkpointer.is_some() {
            return self.clone();
        }
        self.with_checkpointer_arc(checkpointer)
    }

    /// The same graph, saving its checkpoints with `checkpointer` instead: for instance to read a
    /// subgraph's state in its parent's checkpointer ([`get_state`](Self::get_state) with
    /// [`RunConfig::ns`]).
    pub fn with_checkpointer(&self, checkpointer: impl crate::checkpoint::Checkpointer) -> Self {
        self.with_checkpointer_arc(Arc::new(checkpointer))
    }

    /// The same graph, saving its checkpoints with a shared `checkpointer` (a server hands every
    /// graph it serves one saver). Shares the compiled tables: a subgraph run under a
    /// checkpointed parent costs an `Arc` clone, not a copy of the graph.
    pub fn with_checkpointer_arc(&self, checkpointer: Arc<dyn crate::checkpoint::Checkpointer>) -> Self {
        Self {
            inner: self.inner.clone(),
            checkpointer: Some(checkpointer),
            store: self.store.clone(),
            context: std::marker::PhantomData,
        }
    }
}
