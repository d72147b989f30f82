//! Running a loaded flow: each flow node wrapped as a runtime node (max_steps, type checks of
//! its writes, routing, events), and the run itself.

use crate::error::RunError;
use crate::load::{fits, Flow};
use crate::nodes::{Brancher, Choice, Message};
use crate::registry::{Fields, NodeImpl, Role, RunFn};
use crate::state::{FlowState, FlowUpdate, Schema, CHOICE_FIELD, STEPS_FIELD};
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use weir_runtime::{BoxError, Command, Context, Goto, NodeId, RunConfig};

/// Something that happened during a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        #[serde(skip_serializing_if = "Vec::is_empty")]
        choices: Vec<ChoiceOption>,
    },
}

/// A choice an `output` node offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
        write!(
            f,
            "node `{}` asks for a choice: {}",
            self.node, self.question
        )
    }
}

impl std::error::Error for Pause {}

/// Where the nodes of a loaded flow send their events: the run under way's receiver.
///
/// The runtime's `Context` has no stream writer yet, so events go through the flow; two runs of
/// one loaded flow at once would see each other's events.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    sink: Mutex<Option<mpsc::UnboundedSender<Event>>>,
}

impl Hub {
    fn emit(&self, e: Event) {
        if let Some(tx) = &*self.sink.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(e);
        }
    }
    fn attach(&self) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        rx
    }
    fn detach(&self) {
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = None;
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
    hub: Arc<Hub>,
    /// Per handle (`""` for a plain node), the nodes its edges lead to.
    gotos: HashMap<String, Vec<NodeId>>,
    steps_slot: usize,
    choice_slot: usize,
}

impl NodeRuntime {
    pub(crate) fn new(
        id: String,
        imp: &NodeImpl,
        max_steps: u32,
        schema: Arc<Schema>,
        hub: Arc<Hub>,
        gotos: HashMap<String, Vec<NodeId>>,
    ) -> Self {
        let steps_slot = schema
            .index(STEPS_FIELD)
            .expect("the schema has the hidden fields");
        let choice_slot = schema
            .index(CHOICE_FIELD)
            .expect("the schema has the hidden fields");
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
            hub,
            gotos,
            steps_slot,
            choice_slot,
        }
    }

    pub(crate) fn node_fn(
        self: Arc<Self>,
    ) -> impl Fn(&FlowState, &Context) -> BoxFuture<'static, Result<Command<FlowState>, BoxError>>
           + Send
           + Sync
           + 'static {
        move |s: &FlowState,
              cx: &Context|
              -> BoxFuture<'static, Result<Command<FlowState>, BoxError>> {
            let me = self.clone();
            let ran = s
                .hidden(STEPS_FIELD)
                .and_then(|v| v.get(&me.id))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let choice = s.hidden(CHOICE_FIELD).and_then(|v| v.get(&me.id)).cloned();
            let state = s.to_json();
            let step = cx.step();
            Box::pin(async move { me.call(ran, state, choice, step).await })
        }
    }

    async fn call(
        &self,
        ran: u64,
        state: Fields,
        choice: Option<Value>,
        step: i64,
    ) -> Result<Command<FlowState>, BoxError> {
        // max_steps: the node's runs so far are counted in the hidden `__steps` field.
        if ran >= u64::from(self.max_steps) {
            return Err(format!(
                "node `{}` reached its max_steps ({}): it already ran {ran} times in this run",
                self.id, self.max_steps
            )
            .into());
        }
        let mut writes = match &self.run {
            Some(f) => f(state.clone()).await?,
            None => Fields::new(),
        };
        if let Some(m) = &self.message {
            let text = m.render(&state)?;
            if let Some(to) = &m.to {
                writes.insert(to.clone(), Value::String(text.clone()));
            }
            self.hub.emit(Event::Message {
                node: self.id.clone(),
                step,
                text: text.clone(),
                choices: options(m),
            });
            if let (Some(b), true) = (&self.branch, choice.as_ref().is_none_or(Value::is_null)) {
                if (b.choose)(&state, None)? == Choice::Pause {
                    return Err(Box::new(Pause {
                        node: self.id.clone(),
                        question: text,
                        choices: options(m),
                    }));
                }
            }
        }
        let mut update = FlowUpdate::new(&self.schema);
        for (field, value) in &writes {
            let def = self.schema.declared(field).ok_or_else(|| {
                format!(
                    "node `{}` wrote `{field}`, which the state does not declare; declared fields are {}",
                    self.id,
                    self.schema.field_names().iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
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
            let slot = self
                .schema
                .index(field)
                .expect("a declared field has a slot");
            update.push(slot, value.clone());
        }
        update.push(self.steps_slot, json!({ &self.id: 1 }));
        let mut goto = Vec::new();
        if let Some(b) = &self.branch {
            let handle = match (b.choose)(&state, choice.as_ref())? {
                Choice::Handle(h) => h,
                Choice::Pause => unreachable!("a pause returned above"),
            };
            if b.kind == "output" {
                // The choice is used up: a loop back to this node asks again.
                update.push(self.choice_slot, json!({ &self.id: null }));
            }
            for t in self.gotos.get(&handle).into_iter().flatten() {
                goto.push(Goto::Node(*t));
            }
        }
        self.hub.emit(Event::Node {
            node: self.id.clone(),
            step,
            writes,
        });
        Ok(Command { update, goto })
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
                    self.schema
                        .field_names()
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
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
    /// than its `max_steps`, or an `output` node asks for a choice (see [`RunError::pause`]).
    pub async fn invoke(&self, input: Value) -> Result<FlowState, RunError> {
        self.invoke_with(input, |_| {}).await
    }

    /// Like [`invoke`](Self::invoke), handing each [`Event`] to `on_event` as it happens.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke).
    pub async fn invoke_with(
        &self,
        input: Value,
        mut on_event: impl FnMut(Event),
    ) -> Result<FlowState, RunError> {
        let update = self.input_update(&input)?;
        let config = RunConfig::default().recursion_limit(self.recursion_limit());
        let mut rx = self.hub.attach();
        let run = async {
            let r = self.graph.invoke(update, &config).await;
            self.hub.detach();
            r
        };
        let drain = async {
            while let Some(e) = rx.recv().await {
                on_event(e);
            }
        };
        let (result, ()) = futures::join!(run, drain);
        let names: Vec<String> = self.schema.fields.iter().map(|f| f.name.clone()).collect();
        result.map_err(|e| RunError::from_runtime(e, &names))
    }
}
