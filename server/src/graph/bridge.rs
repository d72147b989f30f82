//! [`Bridge`]: the one [`ServedGraph`] implementation, over any [`CompiledGraph`] and the
//! [`Codec`] of its state. Runs become streams of LangGraph events ending with one
//! [`RunEvent::End`]; thread reads and edits go through the graph's checkpointer.

use super::codec::{all_optional, Codec};
use super::events::{runtime_modes, Translate};
use super::run::{config_of, settled, start, Stopping};
use super::state::{matches, thread_state, timeline_entry};
use super::{GraphError, Head, HistoryQuery, RunEvent, RunRequest, Schemas, ServedGraph, StateUpdate, ThreadState};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::{CompiledGraph, Error, RunConfig, State};

/// A graph served through its state's codec, on the server's checkpointer.
pub(crate) struct Bridge<S: State, C> {
    pub(crate) graph: CompiledGraph<S>,
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) codec: Arc<C>,
    /// Its runs that were cut off and are still settling (see [`Stopping`]).
    pub(crate) stopping: Stopping,
}

impl<S: State, C: Codec<S>> Bridge<S, C> {
    /// An edit's `values` as the graph's update (`None` or `null`: an update that writes nothing).
    fn values_of(&self, values: Option<&Value>) -> Result<S::Update, GraphError> {
        match values {
            None | Some(Value::Null) => self.codec.decode(&Value::Object(Default::default()), "values"),
            Some(v) => self.codec.decode(v, "values"),
        }
    }

    pub(crate) fn new(graph: CompiledGraph<S>, saver: Arc<dyn Checkpointer>, codec: C) -> Self {
        Self {
            graph,
            saver,
            codec: Arc::new(codec),
            stopping: Stopping::default(),
        }
    }

    /// [`GraphError::NotFound`] when the thread has no checkpoint `id` (nothing to check for
    /// `None`, the head).
    async fn ensure_checkpoint(&self, thread_id: &str, id: Option<&str>) -> Result<(), GraphError> {
        let Some(id) = id else { return Ok(()) };
        match self.saver.get(thread_id, "", Some(id)).await.map_err(internal)? {
            Some(_) => Ok(()),
            None => Err(GraphError::NotFound(format!(
                "thread `{thread_id}` has no checkpoint `{id}`"
            ))),
        }
    }
}

/// A runtime error of a thread read or edit, by kind.
pub(crate) fn thread_error(e: &Error) -> GraphError {
    if e.is_checkpoint() || e.is_runtime() {
        GraphError::Internal(e.to_string())
    } else if e.is_conflict() || e.is_bad_resume() {
        GraphError::Conflict(e.to_string())
    } else {
        GraphError::Invalid(e.to_string())
    }
}

impl<S: State, C: Codec<S>> ServedGraph for Bridge<S, C> {
    fn drawing(&self, xray: u32) -> Value {
        super::draw::drawing(&self.graph.mermaid(), self.graph.subgraphs(), xray)
    }

    fn schemas(&self) -> Schemas {
        self.codec.schemas()
    }

    /// Each subgraph node with its subgraph's state schema: the parent's own when the subgraph
    /// has the same fields (the common case of one state), else an object with the subgraph's
    /// fields as properties of any type (its Rust type is not known here). Config and context
    /// are the parent's, which a subgraph inherits.
    fn subgraphs(&self, namespace: Option<&str>, _recurse: bool) -> BTreeMap<String, Schemas> {
        let own = self.codec.schemas();
        self.graph
            .subgraphs()
            .filter(|(node, _)| namespace.is_none_or(|ns| ns == *node))
            .map(|(node, _)| {
                let fields = self.graph.subgraph_fields(node).unwrap_or_default();
                let state = if fields.iter().map(|f| f.name()).eq(S::FIELDS.iter().map(|f| f.name())) {
                    own.state.clone()
                } else {
                    fields_schema(node, fields)
                };
                let schemas = Schemas {
                    input: all_optional(&state),
                    output: state.clone(),
                    state,
                    config: own.config.clone(),
                    context: own.context.clone(),
                };
                (node.to_owned(), schemas)
            })
            .collect()
    }

    fn run(&self, request: RunRequest) -> Result<BoxStream<'static, RunEvent>, GraphError> {
        let config = config_of(&self.graph, &*self.codec, &request)?;
        let modes = runtime_modes(&request.modes);
        let started = start(&self.graph, &*self.codec, &request, &config, modes)?;
        let input = request.input.clone().unwrap_or(Value::Null);
        let tr = Translate::new(request.modes.clone(), request.thread_id.clone(), request.subgraphs)
            .with_chains(&request.run_id, &request.metadata, input)
            .with_messages(&request.metadata);
        Ok(super::run::adapt(
            self.graph.clone(),
            self.codec.clone(),
            (started, request.strict_resume),
            tr,
            config,
            self.stopping.clone(),
        ))
    }

    fn check_input(&self, input: Option<&Value>, command: Option<&Value>) -> Result<(), GraphError> {
        let request = RunRequest {
            input: input.cloned(),
            command: command.cloned(),
            ..RunRequest::default()
        };
        super::run::check(&self.graph, &*self.codec, &request).map(|_| ())
    }

    fn check_context(&self, context: &serde_json::Map<String, Value>) -> Result<(), GraphError> {
        self.codec.context(context).map(|_| ())
    }

    fn head<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Head>, GraphError>> {
        Box::pin(async move {
            let newest = self.saver.list(thread_id, "", None, Some(1)).await.map_err(internal)?;
            Ok(newest.into_iter().next().map(|r| Head {
                checkpoint_id: r.id.to_string(),
                created_at: r.created_at,
                run_id: r.metadata.get("run_id").cloned(),
            }))
        })
    }

    fn state<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
        _subgraphs: bool,
    ) -> BoxFuture<'a, Result<Option<ThreadState>, GraphError>> {
        Box::pin(async move {
            self.ensure_checkpoint(thread_id, checkpoint_id).await?;
            let mut config = RunConfig::thread(thread_id);
            config.checkpoint_id = checkpoint_id.map(str::to_owned);
            let snap = self.graph.get_state(&config).await.map_err(|e| thread_error(&e))?;
            let subs: Vec<&str> = self.graph.subgraphs().map(|(node, _)| node).collect();
            Ok(snap.map(|s| thread_state(thread_id, &s, &*self.codec, &subs)))
        })
    }

    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        query: &'a HistoryQuery,
    ) -> BoxFuture<'a, Result<Vec<ThreadState>, GraphError>> {
        Box::pin(async move {
            // `before` and, without another filter, the limit are the runtime's: only the page
            // asked for is read, however long the thread.
            let plain = query.metadata.is_none() && query.checkpoint_id.is_none();
            let limit = (plain && query.limit > 0).then_some(query.limit);
            let all = self
                .graph
                .get_state_history_before(&RunConfig::thread(thread_id), query.before.as_deref(), limit)
                .await
                .map_err(|e| thread_error(&e))?;
            let subs: Vec<&str> = self.graph.subgraphs().map(|(node, _)| node).collect();
            let states = all
                .iter()
                .filter(|s| {
                    query
                        .checkpoint_id
                        .as_deref()
                        .is_none_or(|c| s.checkpoint_id.as_str() <= c)
                })
                .map(|s| thread_state(thread_id, s, &*self.codec, &subs))
                .filter(|t| query.metadata.as_ref().is_none_or(|m| matches(&t["metadata"], m)))
                .take(if query.limit == 0 { usize::MAX } else { query.limit })
                .collect();
            Ok(states)
        })
    }

    fn timeline<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Value>, GraphError>> {
        Box::pin(async move {
            let records = self
                .saver
                .list(thread_id, "", before, Some(limit))
                .await
                .map_err(internal)?;
            Ok(records.iter().map(timeline_entry).collect())
        })
    }

    fn update_state<'a>(
        &'a self,
        thread_id: &'a str,
        update: StateUpdate,
    ) -> BoxFuture<'a, Result<String, GraphError>> {
        Box::pin(async move {
            let values = self.values_of(update.values.as_ref())?;
            self.ensure_checkpoint(thread_id, update.checkpoint_id.as_deref())
                .await?;
            let mut config = RunConfig::thread(thread_id);
            config.checkpoint_id = update.checkpoint_id.clone();
            config.metadata = update.metadata;
            self.graph
                .update_state(&config, values, update.as_node.as_deref())
                .await
                .map_err(|e| thread_error(&e))
        })
    }

    fn update_superstep<'a>(
        &'a self,
        thread_id: &'a str,
        updates: Vec<StateUpdate>,
    ) -> BoxFuture<'a, Result<String, GraphError>> {
        Box::pin(async move {
            let mut config = RunConfig::thread(thread_id);
            let mut edits = Vec::with_capacity(updates.len());
            for update in updates {
                config.metadata.extend(update.metadata);
                let values = self.values_of(update.values.as_ref())?;
                edits.push(weir_runtime::StateEdit::new(values, update.as_node.as_deref()));
            }
            self.graph
                .bulk_update_state(&config, vec![edits])
                .await
                .map_err(|e| thread_error(&e))
        })
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), GraphError>> {
        Box::pin(async move {
            if self.saver.head(from, "").await.map_err(internal)?.is_none() {
                return Err(GraphError::NotFound(format!(
                    "thread `{from}` has no checkpoint to copy"
                )));
            }
            self.graph.copy_thread(from, to).await.map_err(|e| thread_error(&e))
        })
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), GraphError>> {
        Box::pin(async move {
            settled(&self.stopping, thread_id).await;
            self.saver.delete_thread(thread_id).await.map_err(internal)
        })
    }

    fn keep_latest<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<u64, GraphError>> {
        Box::pin(async move {
            settled(&self.stopping, thread_id).await;
            let policy = weir_runtime::checkpoint::Retention::new().keep_last(1);
            let pruned = self.saver.prune(thread_id, &policy).await.map_err(internal)?;
            Ok(pruned.checkpoints)
        })
    }

    fn rollback<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), GraphError>> {
        Box::pin(async move {
            // A run cancelled for this rollback may still be writing its last checkpoint.
            settled(&self.stopping, thread_id).await;
            self.saver
                .delete_after(thread_id, checkpoint_id)
                .await
                .map_err(internal)
        })
    }
}

/// An object schema titled `title` with `fields` as properties of any type, all required.
fn fields_schema(title: &str, fields: &[weir_runtime::FieldInfo]) -> Value {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|f| (f.name().to_owned(), serde_json::json!({})))
        .collect();
    let required: Vec<&str> = fields.iter().map(|f| f.name()).collect();
    serde_json::json!({"title": title, "type": "object", "properties": properties, "required": required})
}

fn internal(e: weir_runtime::checkpoint::SaverError) -> GraphError {
    GraphError::Internal(e.to_string())
}
