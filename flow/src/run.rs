//! Running a loaded flow: each flow node wrapped as a runtime node (max_steps, type checks of
//! its writes, routing, events), and the run itself.

use crate::error::RunError;
use crate::load::{fits, ticks, Flow};
use crate::nodes::{Brancher, Choice, Message};
use crate::registry::{Fields, NodeImpl, Role, RunFn};
use crate::state::{FlowState, FlowUpdate, Schema, ROUTE_FIELD, STEPS_FIELD};
use futures::future::BoxFuture;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use weir_runtime::{BoxError, Command, Context, NodeId, RunConfig, RunStream, StreamMode};

/// Something that happened during a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A node ran and wrote these fields.
    Node {
        /// The node's id.
        node: String,
        /// The step it ran in.
        step: i64,
        /// The fields it wrote.
        writes: Fields,
    },
    /// An `output` node's message.
    Message {
        /// The node's id.
        node: String,
        /// The step it ran in.
        step: i64,
        /// The rendered message.
        text: String,
        /// The choices offered with it, if any.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<ChoiceOption>,
    },
}

/// A choice an `output` node offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoiceOption {
    /// What to answer (the edges' `sourceHandle`).
    pub id: String,
    /// What to show.
    pub label: String,
}

/// A run stopped at an `output` node that asks a person to choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pause {
    /// The node's id.
    pub node: String,
    /// The question: the node's rendered message.
    pub question: String,
    /// The choices.
    pub choices: Vec<ChoiceOption>,
}

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node `{}` asks for a choice: {}", self.node, self.question)
    }
}

impl std::error::Error for Pause {}

/// What an `output` node asks through the runtime's interrupt, as saved in the checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Question {
    question: String,
    choices: Vec<ChoiceOption>,
}

impl Pause {
    pub(crate) fn from_runtime(p: &weir_runtime::Paused) -> Self {
        let q: Option<Question> = p.question().ok();
        Self {
            node: p.node.clone(),
            question: q.as_ref().map_or_else(String::new, |q| q.question.clone()),
            choices: q.map(|q| q.choices).unwrap_or_default(),
        }
    }
}

/// How a run ended: done, or paused at `output` nodes that ask for a choice.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// No node is left to run: the final state.
    Done(FlowState),
    /// The run paused; resume the thread with a choice to go on.
    Paused {
        /// The state so far.
        state: FlowState,
        /// The questions.
        pauses: Vec<Pause>,
    },
}

impl Outcome {
    fn from_runtime(o: weir_runtime::Outcome<FlowState>) -> Self {
        match o {
            weir_runtime::Outcome::Done(s) => Self::Done(s),
            weir_runtime::Outcome::Paused { state, pauses } => Self::Paused {
                state,
                pauses: pauses.iter().map(Pause::from_runtime).collect(),
            },
        }
    }

    /// The state, done or paused.
    pub fn state(&self) -> &FlowState {
        match self {
            Self::Done(s) | Self::Paused { state: s, .. } => s,
        }
    }
}

/// A thread's state at one checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// The declared fields that hold a value.
    pub values: Fields,
    /// The nodes that run next.
    pub next: Vec<String>,
    /// The questions waiting for an answer.
    pub pauses: Vec<Pause>,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The step it was saved after (-1 for the input).
    pub step: i64,
    /// The nodes whose writes it applied.
    pub writes: Vec<String>,
    /// When it was saved (RFC 3339).
    pub created_at: String,
}

impl Snapshot {
    fn from_runtime(s: weir_runtime::StateSnapshot<FlowState>) -> Self {
        Self {
            values: s.values.to_json(),
            next: s.next,
            pauses: s.pauses.iter().map(Pause::from_runtime).collect(),
            checkpoint_id: s.checkpoint_id,
            step: s.step,
            writes: s.writes,
            created_at: s.created_at,
        }
    }
}

/// One flow node as the loop runs it.
pub(crate) struct NodeRuntime {
    id: String,
    run: Option<RunFn>,
    branch: Option<Arc<Brancher>>,
    message: Option<Arc<Message>>,
    max_steps: u32,
    schema: Arc<Schema>,
    /// Per handle (`""` for a plain node), the nodes its edges lead to.
    gotos: HashMap<String, Vec<NodeId>>,
    steps_slot: usize,
    route_slot: usize,
}

impl NodeRuntime {
    pub(crate) fn new(
        id: String,
        imp: &NodeImpl,
        max_steps: u32,
        schema: Arc<Schema>,
        gotos: HashMap<String, Vec<NodeId>>,
    ) -> Self {
        let steps_slot = schema.index(STEPS_FIELD).expect("the schema has the hidden fields");
        let route_slot = schema.index(ROUTE_FIELD).expect("the schema has the hidden fields");
        Self {
            id,
            run: imp.run.clone(),
            branch: match &imp.role {
                Role::Branch(b) => Some(b.clone()),
                _ => None,
            },
            message: imp.message.clone(),
            max_steps,
            schema,
            gotos,
            steps_slot,
            route_slot,
        }
    }

    pub(crate) fn node_fn(
        self: Arc<Self>,
    ) -> impl Fn(&FlowState, &Context) -> BoxFuture<'static, Result<Command<FlowState>, BoxError>> + Send + Sync + 'static
    {
        move |s: &FlowState, cx: &Context| -> BoxFuture<'static, Result<Command<FlowState>, BoxError>> {
            let me = self.clone();
            let ran = s
                .hidden(STEPS_FIELD)
                .and_then(|v| v.get(&me.id))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            // max_steps: the node's runs so far are counted in the hidden `__steps` field.
            if ran >= u64::from(me.max_steps) {
                let e = format!(
                    "node `{}` reached its max_steps ({}): it already ran {ran} times in this run",
                    me.id, me.max_steps
                );
                return Box::pin(async move { Err(e.into()) });
            }
            let state = s.to_json();
            // An output that offers choices asks a person through the runtime's interrupt: the
            // run pauses here, and when the thread is resumed with a choice the node runs again
            // from the top and the interrupt returns it.
            let mut choice = None;
            if let (Some(m), Some(_)) = (&me.message, &me.branch) {
                let asked = m.render(&state).and_then(|question| {
                    let q = Question {
                        question,
                        choices: options(m),
                    };
                    cx.interrupt::<Question, String>(q).map_err(BoxError::from)
                });
                match asked {
                    Ok(c) => choice = Some(Value::String(c)),
                    Err(e) => return Box::pin(async move { Err(e) }),
                }
            }
            // Events go to this run's own stream, when somebody streams it.
            let events = cx.is_streaming().then(|| cx.clone());
            Box::pin(async move { me.call(state, choice, events).await })
        }
    }

    /// The router after a branching node: the targets of the handle it chose.
    pub(crate) fn router(self: Arc<Self>) -> impl Fn(&FlowState) -> Vec<NodeId> + Send + Sync + 'static {
        move |s: &FlowState| {
            s.hidden(ROUTE_FIELD)
                .and_then(|r| r.get(&self.id))
                .and_then(Value::as_str)
                .and_then(|h| self.gotos.get(h))
                .cloned()
                .unwrap_or_default()
        }
    }

    /// Runs the node on `state`; `events` is the run's context when the run is streamed.
    async fn call(
        &self,
        state: Fields,
        choice: Option<Value>,
        events: Option<Context>,
    ) -> Result<Command<FlowState>, BoxError> {
        let mut writes = match &self.run {
            Some(f) => f(state.clone()).await?,
            None => Fields::new(),
        };
        if let Some(m) = &self.message {
            let text = m.render(&state)?;
            if let Some(to) = &m.to {
                writes.insert(to.clone(), Value::String(text.clone()));
            }
            if let Some(cx) = &events {
                cx.emit(Event::Message {
                    node: self.id.clone(),
                    step: cx.step(),
                    text,
                    choices: options(m),
                })
                .await;
            }
        }
        let mut update = FlowUpdate::new(&self.schema);
        for (field, value) in &writes {
            let def = self.schema.declared(field).ok_or_else(|| {
                format!(
                    "node `{}` wrote `{field}`, which the state does not declare; declared fields are {}",
                    self.id,
                    ticks(self.schema.field_names())
                )
            })?;
            if !fits(def, value) {
                return Err(format!(
                    "node `{}` wrote `{field}` with a {}; `{field}` is declared {}",
                    self.id,
                    crate::format::FieldType::name_of(value),
                    def.ty
                )
                .into());
            }
            let slot = self.schema.index(field).expect("a declared field has a slot");
            update.push(slot, value.clone());
        }
        update.push(self.steps_slot, json!({ &self.id: 1 }));
        if let Some(b) = &self.branch {
            let handle = match (b.choose)(&state, choice.as_ref())? {
                Choice::Handle(h) => h,
                Choice::Pause => return Err(format!("node `{}` has no choice to follow", self.id).into()),
            };
            // The node's router follows the handle (so the runtime knows the targets too).
            update.push(self.route_slot, json!({ &self.id: handle }));
        }
        if let Some(cx) = &events {
            cx.emit(Event::Node {
                node: self.id.clone(),
                step: cx.step(),
                writes,
            })
            .await;
        }
        Ok(Command::new().update(update))
    }
}

fn options(m: &Message) -> Vec<ChoiceOption> {
    m.choices
        .iter()
        .map(|(id, label)| ChoiceOption {
            id: id.clone(),
            label: label.clone(),
        })
        .collect()
}

impl Flow {
    /// The update a run starts from: the input's fields (checked against the declaration), and
    /// the declared defaults of the fields it does not set.
    ///
    /// # Errors
    /// An input that is not an object, or a field not declared or of another type.
    pub(crate) fn input_update(&self, input: &Value) -> Result<FlowUpdate, RunError> {
        let Value::Object(fields) = input else {
            return Err(RunError::input(format!(
                "the input must be a JSON object of fields, not a {}",
                crate::format::FieldType::name_of(input)
            )));
        };
        let mut update = FlowUpdate::new(&self.schema);
        for (k, v) in fields {
            let Some(def) = self.schema.declared(k) else {
                return Err(RunError::input(format!(
                    "input field `{k}` is not declared; declared fields are {}",
                    ticks(self.schema.field_names())
                )));
            };
            if !fits(def, v) {
                return Err(RunError::input(format!(
                    "input field `{k}` is a {}; it is declared {}",
                    crate::format::FieldType::name_of(v),
                    def.ty
                )));
            }
            update.push(self.schema.index(k).expect("declared"), v.clone());
        }
        for (i, f) in self.schema.fields.iter().enumerate() {
            if let (Some(d), crate::state::Reduce::Last) = (&f.default, f.reducer) {
                if !fields.contains_key(&f.name) {
                    update.push(i, d.clone());
                }
            }
        }
        Ok(update)
    }

    /// Runs the flow on `input` (a JSON object of fields) to the end and returns the final state.
    ///
    /// # Errors
    /// The input does not fit the state, a node failed (the error names it), a node ran more
    /// than its `max_steps`, or the run paused at an `output` node (see [`RunError::pause`]).
    pub async fn invoke(&self, input: Value) -> Result<FlowState, RunError> {
        self.invoke_with(input, |_| {}).await
    }

    /// Like [`invoke`](Self::invoke), handing each [`Event`] to `on_event` as it happens.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke).
    pub async fn invoke_with(&self, input: Value, on_event: impl FnMut(Event)) -> Result<FlowState, RunError> {
        match self.run(input, None, on_event).await? {
            Outcome::Done(s) => Ok(s),
            Outcome::Paused { pauses, .. } => Err(RunError::paused(pauses)),
        }
    }

    /// Runs the flow on `input`, on `thread` when given (the flow needs a checkpointer, see
    /// [`LoadOptions::checkpointer`](crate::LoadOptions)), until it is done or pauses.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke), except that a pause is an [`Outcome::Paused`].
    pub async fn run(
        &self,
        input: Value,
        thread: Option<&str>,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        let update = self.input_update(&input)?;
        let run = self.graph.stream(update, &self.config(thread), StreamMode::CUSTOM);
        Self::stream(run, on_event).await
    }

    /// Goes on with `thread` from its latest checkpoint: answers the paused `output` node with
    /// `choice`, or, without one, re-runs what failed.
    ///
    /// # Errors
    /// As [`run`](Self::run); also when the thread has no checkpoint or nothing is paused.
    pub async fn resume(
        &self,
        thread: &str,
        choice: Option<&str>,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        let run = self
            .graph
            .stream_resume(choice, &self.config(Some(thread)), StreamMode::CUSTOM)
            .map_err(RunError::from_runtime)?;
        Self::stream(run, on_event).await
    }

    /// The thread's state at its latest checkpoint, or `None` for a thread never run.
    ///
    /// # Errors
    /// When the flow has no checkpointer, or the checkpoint cannot be read.
    pub async fn state(&self, thread: &str) -> Result<Option<Snapshot>, RunError> {
        let snap = self
            .graph
            .get_state(&self.config(Some(thread)))
            .await
            .map_err(RunError::from_runtime)?;
        Ok(snap.map(Snapshot::from_runtime))
    }

    /// The thread's checkpoints, newest first, at most `limit`.
    ///
    /// # Errors
    /// As [`state`](Self::state).
    pub async fn history(&self, thread: &str, limit: Option<usize>) -> Result<Vec<Snapshot>, RunError> {
        let h = self
            .graph
            .get_state_history(&self.config(Some(thread)), limit)
            .await
            .map_err(RunError::from_runtime)?;
        Ok(h.into_iter().map(Snapshot::from_runtime).collect())
    }

    fn config(&self, thread: Option<&str>) -> RunConfig {
        let config = match thread {
            Some(t) => RunConfig::thread(t),
            None => RunConfig::default(),
        };
        config.recursion_limit(self.recursion_limit())
    }

    /// Hands the events of `run`, this run's own bounded stream, to `on_event` as they come,
    /// then returns how the run ended. Another run of the flow streams to its own consumer.
    async fn stream(mut run: RunStream<FlowState>, mut on_event: impl FnMut(Event)) -> Result<Outcome, RunError> {
        while let Some(item) = run.next().await {
            // The nodes' own events; the run's error (its last item) is the outcome's too.
            if let Ok(weir_runtime::Event::Custom { value, .. }) = item {
                if let Ok(event) = serde_json::from_value(value) {
                    on_event(event);
                }
            }
        }
        run.outcome()
            .await
            .map(Outcome::from_runtime)
            .map_err(RunError::from_runtime)
    }
}
