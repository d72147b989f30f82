//! Each flow node wrapped as a runtime node: its `max_steps`, the type checks of its writes,
//! the routing of a branching node, and the events it emits to its run's stream.

use crate::error::ticks;
use crate::event::{ChoiceOption, Event, Question};
use crate::node::{Brancher, Choice, Fields, Message, NodeImpl, Role, RunFn};
use crate::state::{fits, FlowState, FlowUpdate, Schema, LAST_FIELD, ROUTE_FIELD, STEPS_FIELD};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use weir_runtime::{BoxError, Command, Context, NodeId};

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
    last_slot: usize,
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
        let last_slot = schema.index(LAST_FIELD).expect("the schema has the hidden fields");
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
            last_slot,
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
            let step = cx.step();
            Box::pin(async move { me.call(state, choice, step, events).await })
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
        step: i64,
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
        update.push(self.last_slot, json!({ &self.id: step }));
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
