//! Each flow node wrapped as a runtime node: its `max_steps`, the type checks of its writes,
//! the routing of a branching node, and the events it emits to its run's stream; and the node
//! that asks a pausing `output` node's question once the output ran.

use crate::error::ticks;
use crate::event::{ChoiceOption, Event, Question};
use crate::node::{Brancher, Choice, ContextPath, Fields, Message, NodeImpl, Role, RunFn, ASK_SUFFIX};
use crate::state::{fits, FlowState, FlowUpdate, Schema, ASKED_FIELD, LAST_FIELD, ROUTE_FIELD, STEPS_FIELD};
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
    /// For an output that pauses: the hidden field its message goes to, for its asking node,
    /// and whether the flow has a checkpointer to pause with.
    asked: Option<(usize, bool)>,
    /// Whether the node reads the run's context, and the paths into it that must be there.
    reads_context: bool,
    context_paths: Vec<ContextPath>,
}

impl NodeRuntime {
    pub(crate) fn new(
        id: String,
        imp: &NodeImpl,
        max_steps: u32,
        schema: Arc<Schema>,
        gotos: HashMap<String, Vec<NodeId>>,
        checkpointed: bool,
    ) -> Self {
        let asks = imp.message.as_ref().is_some_and(|m| m.asks);
        let asked_slot = schema.index(ASKED_FIELD).expect("the schema has the hidden fields");
        let steps_slot = schema.index(STEPS_FIELD).expect("the schema has the hidden fields");
        let route_slot = schema.index(ROUTE_FIELD).expect("the schema has the hidden fields");
        let last_slot = schema.index(LAST_FIELD).expect("the schema has the hidden fields");
        Self {
            id,
            run: imp.run.clone(),
            // A pausing output's choice is taken by its asking node, after it.
            branch: match &imp.role {
                Role::Branch(b) if !asks => Some(b.clone()),
                _ => None,
            },
            message: imp.message.clone(),
            max_steps,
            schema,
            gotos,
            steps_slot,
            route_slot,
            last_slot,
            asked: asks.then_some((asked_slot, checkpointed)),
            reads_context: imp.reads_context,
            context_paths: imp.context_paths.clone(),
        }
    }

    /// The run's context as the node reads it: `null` for a node that reads none; an empty
    /// object for a run without one. Fails, naming the path and where the node reads it, when
    /// a path the node reads is not in the context.
    fn context(&self, cx: &Context) -> Result<Value, BoxError> {
        if !self.reads_context {
            return Ok(Value::Null);
        }
        let context = cx
            .context::<Value>()
            .cloned()
            .unwrap_or_else(|| Value::Object(Fields::new()));
        for p in &self.context_paths {
            if let Some(why) = p.missing_in(&context) {
                // Named in full: a server reports the message without the runtime's node name.
                return Err(format!(
                    "node `{}` reads `{}` (at `data{}`), but {why}",
                    self.id,
                    p.dotted(),
                    p.at
                )
                .into());
            }
        }
        Ok(context)
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
            if let Some((_, false)) = me.asked {
                // Fail before the message goes out: the run could not pause after it.
                let e = "it pauses for a person's answer, which needs a checkpointer: load the flow with \
                         `LoadOptions::checkpointer` and run it on a thread";
                return Box::pin(async move { Err(e.into()) });
            }
            let context = match me.context(cx) {
                Ok(c) => c,
                Err(e) => return Box::pin(async move { Err(e) }),
            };
            let state = s.to_json();
            // Events go to this run's own stream, when somebody streams it.
            let events = cx.is_streaming().then(|| cx.clone());
            let step = cx.step();
            Box::pin(async move { me.call(state, context, step, events).await })
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

    /// Runs the node on `state` and the run's `context` (`null` when it reads none); `events`
    /// is the task's context when the run is streamed.
    async fn call(
        &self,
        state: Fields,
        context: Value,
        step: i64,
        events: Option<Context>,
    ) -> Result<Command<FlowState>, BoxError> {
        let mut asked = None;
        let mut writes = match &self.run {
            Some(f) => f(state.clone(), context.clone()).await?,
            None => Fields::new(),
        };
        if let Some(m) = &self.message {
            let text = m.render(&state, &context)?;
            if let Some(to) = &m.to {
                writes.insert(to.clone(), Value::String(text.clone()));
            }
            if let Some((slot, _)) = self.asked {
                // Hidden: the asking node's question is this very text.
                asked = Some((slot, text.clone()));
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
        if let Some((slot, text)) = asked {
            update.push(slot, json!({ &self.id: text }));
        }
        if let Some(b) = &self.branch {
            let handle = match (b.choose)(&state, &context, None)? {
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

/// The hidden node after a pausing `output` node (seed 003's fake output node): the output ran,
/// its message is out and its writes applied; this node asks the message as its question
/// through the runtime's interrupt, and once the thread is resumed with an answer it routes on
/// the choice (or, for an acknowledgement, goes on along the output's plain edges).
pub(crate) struct AskRuntime {
    /// The output node's id.
    id: String,
    message: Arc<Message>,
    branch: Option<Arc<Brancher>>,
    route_slot: usize,
    schema: Arc<Schema>,
}

impl AskRuntime {
    pub(crate) fn new(id: String, imp: &NodeImpl, schema: Arc<Schema>) -> Self {
        let route_slot = schema.index(ROUTE_FIELD).expect("the schema has the hidden fields");
        Self {
            id,
            message: imp.message.clone().expect("only an output node asks"),
            branch: match &imp.role {
                Role::Branch(b) => Some(b.clone()),
                _ => None,
            },
            route_slot,
            schema,
        }
    }

    /// The node's name in the runtime's graph.
    pub(crate) fn name(&self) -> String {
        format!("{}{ASK_SUFFIX}", self.id)
    }

    pub(crate) fn node_fn(
        self: Arc<Self>,
    ) -> impl Fn(&FlowState, &Context) -> Result<Command<FlowState>, BoxError> + Send + Sync + 'static {
        move |s: &FlowState, cx: &Context| -> Result<Command<FlowState>, BoxError> {
            let question = s
                .hidden(ASKED_FIELD)
                .and_then(|a| a.get(&self.id))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let q = Question {
                question,
                choices: options(&self.message),
            };
            let answer: Value = cx.interrupt(q)?;
            let mut update = FlowUpdate::new(&self.schema);
            if let Some(b) = &self.branch {
                match (b.choose)(&s.to_json(), &Value::Null, Some(&answer))? {
                    Choice::Handle(h) => update.push(self.route_slot, json!({ &self.id: h })),
                    Choice::Pause => return Err(format!("node `{}` has no choice to follow", self.id).into()),
                }
            }
            Ok(Command::new().update(update))
        }
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
