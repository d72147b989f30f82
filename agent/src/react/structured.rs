//! Structured output for the ReAct agent (LangGraph's `response_format`): after the loop ends,
//! node `respond` asks the model once more for JSON of a type `T`, and the parsed value lands in
//! [`StructuredState::structured_response`].

use super::{answer, Brain, ReactAgent};
use crate::message::{add_messages, Message, Messages};
use crate::model::ResponseFormat;
use crate::tool::{tools_condition, ToolNode, ToolSpec, ToolsRoute};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use weir_runtime::{BoxError, CompiledGraph, Context, ContextValue, Goto, GraphBuilder, NodeRef, END, START};

/// The state of a ReAct agent with structured output: the conversation, and the answer read
/// into a `T` once the loop is over.
#[derive(weir::State, Clone, Debug, Serialize, Deserialize)]
pub struct StructuredState<T> {
    /// The conversation so far.
    #[reducer(with = add_messages, update = Messages)]
    pub messages: Vec<Message>,
    /// The final answer as a `T`; `None` until node `respond` ran.
    pub structured_response: Option<T>,
}

impl<T> Default for StructuredState<T> {
    fn default() -> Self {
        Self {
            messages: Vec::new(),
            structured_response: None,
        }
    }
}

/// What a structured answer's type needs.
pub trait StructuredOutput:
    JsonSchema + DeserializeOwned + Serialize + Clone + fmt::Debug + Send + Sync + 'static
{
}

impl<T: JsonSchema + DeserializeOwned + Serialize + Clone + fmt::Debug + Send + Sync + 'static> StructuredOutput for T {}

/// A ReAct agent whose run ends with a structured answer of type `T`; made by
/// [`ReactAgent::response_format`]. `C` is its runs' context type, as the agent's.
pub struct StructuredAgent<T, C = ()> {
    agent: ReactAgent<C>,
    format: Arc<ResponseFormat>,
    prompt: Option<Arc<str>>,
    _answer: PhantomData<fn() -> T>,
}

impl<T, C> fmt::Debug for StructuredAgent<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StructuredAgent")
            .field("agent", &self.agent)
            .field("format", &self.format.name)
            .finish_non_exhaustive()
    }
}

impl<C: ContextValue> ReactAgent<C> {
    /// The same agent, ending each run with a structured answer (LangGraph's
    /// `response_format`): once the model answers without tool calls, it is asked once more,
    /// with no tools and `T`'s JSON Schema as the response format
    /// ([`ChatModel::invoke_structured`](crate::model::ChatModel::invoke_structured)), and the parsed `T` lands in
    /// [`StructuredState::structured_response`]; that last answer is not added to the
    /// conversation. An answer that is not a `T` fails the run naming the type (node `respond`).
    /// Set the agent's other options first. The structured answer is asked of the model the
    /// agent chose for the run ([`select_model`](Self::select_model)).
    pub fn response_format<T: StructuredOutput>(self) -> StructuredAgent<T, C> {
        StructuredAgent {
            agent: self,
            format: Arc::new(ResponseFormat::of::<T>()),
            prompt: None,
            _answer: PhantomData,
        }
    }
}

impl<T: StructuredOutput, C: ContextValue> StructuredAgent<T, C> {
    /// Sends `prompt` as a system message before the conversation when asking for the
    /// structured answer (LangGraph's `(prompt, schema)` form).
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(Arc::from(prompt.into()));
        self
    }

    /// The compiled graph: `START -> agent`, `agent -> tools | respond`, `tools -> agent`,
    /// `respond -> END`.
    ///
    /// # Errors
    /// Two tools with the same name; the graph's own build errors.
    pub fn compile(self) -> Result<CompiledGraph<StructuredState<T>, C>, BoxError> {
        let a = self.agent;
        let mut tool_node = ToolNode::new(a.tools)?;
        if a.fail_on_tool_error {
            tool_node = tool_node.fail_on_error();
        }
        let specs: Arc<[ToolSpec]> = tool_node.specs().into();
        let mut g = GraphBuilder::<StructuredState<T>>::new().context::<C>();
        let agent = g.add_node("agent", agent_node::<T, C>(a.brain.clone(), specs));
        let agent_id = agent.id();
        let respond = g.add_node("respond", respond_node::<T, C>(a.brain, self.format, self.prompt));
        let respond_id = respond.id();
        g.add_edge(START, "agent");
        g.add_edge("respond", END);
        let tools = g.add_node("tools", tools_node::<T>(tool_node));
        let tools_id = tools.id();
        g.add_edge("tools", "agent");
        g.add_router(
            "agent",
            move |s: &StructuredState<T>| match tools_condition(&s.messages) {
                ToolsRoute::Tools => Goto::Node(tools_id),
                ToolsRoute::End => Goto::Node(respond_id),
            },
            [NodeRef::from(tools_id), NodeRef::from(respond_id)],
        );
        if a.interrupt_before_tools {
            g.interrupt_before("tools");
        }
        if let Some(policy) = a.model_retry {
            g.retry(agent_id, policy);
        }
        if let Some(c) = a.checkpointer {
            g.set_checkpointer(c);
        }
        Ok(g.compile()?)
    }
}

type Node<T> = dyn for<'a> Fn(&'a StructuredState<T>, &'a Context) -> BoxFuture<'a, Result<StructuredStateUpdate<T>, BoxError>>
    + Send
    + Sync;

/// The model's answer, or [`NEED_MORE_STEPS`](crate::NEED_MORE_STEPS) when its tool calls and
/// the structured answer could not both run (3 steps).
fn agent_node<T: StructuredOutput, C: ContextValue>(brain: Brain<C>, specs: Arc<[ToolSpec]>) -> Box<Node<T>> {
    Box::new(move |s: &StructuredState<T>, ctx: &Context| {
        let (brain, specs) = (brain.clone(), specs.clone());
        Box::pin(async move {
            let (model, prompt) = brain.resolve(&s.messages, ctx)?;
            let answer = answer(&*model, &specs, prompt.as_deref(), &s.messages, ctx, 3).await?;
            Ok(StructuredStateUpdate::default().messages(Message::Ai(answer).into()))
        })
    })
}

fn tools_node<T: StructuredOutput>(tools: ToolNode) -> Box<Node<T>> {
    Box::new(move |s: &StructuredState<T>, ctx: &Context| {
        let tools = tools.clone();
        Box::pin(async move {
            let answers = tools.run(&s.messages, ctx).await?;
            Ok(StructuredStateUpdate::default().messages(answers.into()))
        })
    })
}

/// The structured answer, parsed, from the model the agent chose for the run.
fn respond_node<T: StructuredOutput, C: ContextValue>(
    brain: Brain<C>,
    format: Arc<ResponseFormat>,
    prompt: Option<Arc<str>>,
) -> Box<Node<T>> {
    Box::new(move |s: &StructuredState<T>, ctx: &Context| {
        let (brain, format, prompt) = (brain.clone(), format.clone(), prompt.clone());
        Box::pin(async move {
            let (model, _) = brain.resolve(&s.messages, ctx)?;
            let mut input = Vec::with_capacity(s.messages.len() + 1);
            if let Some(p) = prompt {
                input.push(Message::system(&*p));
            }
            input.extend(s.messages.iter().cloned());
            let answer = model.invoke_structured(&input, &format).await?;
            let value: T = format.parse(model.name(), &answer)?;
            Ok(StructuredStateUpdate::default().structured_response(Some(value)))
        })
    })
}
