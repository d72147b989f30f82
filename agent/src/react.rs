//! The prebuilt ReAct agent (LangGraph's `create_react_agent`): a model node and a tool node
//! in a loop over a [`MessagesState`], ended by an answer without tool calls.

use crate::message::{AiMessage, Message, MessagesState, MessagesStateUpdate};
use crate::model::ChatModel;
use crate::tool::{tools_condition, Tool, ToolNode, ToolSpec, ToolsRoute};
use futures::future::BoxFuture;
use std::fmt;
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::{BoxError, CompiledGraph, Context, Goto, GraphBuilder, RetryPolicy, END, START};

mod structured;

pub use structured::{StructuredAgent, StructuredOutput, StructuredState, StructuredStateUpdate};

/// The answer that stands in for a model's tool calls when the run has no steps left to run
/// them (LangGraph's words).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// The options of a ReAct agent; [`compile`](Self::compile) makes the graph. Made by
/// [`react_agent`].
pub struct ReactAgent {
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    system_prompt: Option<String>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    interrupt_before_tools: bool,
    model_retry: Option<RetryPolicy>,
    fail_on_tool_error: bool,
}

impl fmt::Debug for ReactAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReactAgent")
            .field("model", &self.model.name())
            .field(
                "tools",
                &self.tools.iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>(),
            )
            .field("system_prompt", &self.system_prompt)
            .field("interrupt_before_tools", &self.interrupt_before_tools)
            .finish_non_exhaustive()
    }
}

/// A ReAct agent: node `agent` calls `model` with the conversation (after the system prompt,
/// if any) and the tools' specs; when the answer calls tools, node `tools` (a [`ToolNode`])
/// runs them and the model is called again; an answer without tool calls ends the run.
///
/// When the run has too few steps left to run the tools and call the model once more
/// ([`Context::remaining_steps`] below 2), the model's tool calls are replaced by the final
/// answer [`NEED_MORE_STEPS`], so the run ends with a message instead of a recursion error.
///
/// ```
/// use weir_agent::message::{AiMessage, Message, MessagesStateUpdate};
/// use weir_agent::model::FakeChatModel;
/// use weir_agent::react_agent;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let app = react_agent(FakeChatModel::new([AiMessage::new("hi!")]), []).compile().unwrap();
/// let input = MessagesStateUpdate::default().messages(Message::human("hello").into());
/// let out = app.invoke(input, &weir_runtime::RunConfig::default()).await.unwrap();
/// assert_eq!(out.messages[1].text(), "hi!");
/// # });
/// ```
pub fn react_agent(model: impl ChatModel, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> ReactAgent {
    ReactAgent {
        model: Arc::new(model),
        tools: tools.into_iter().collect(),
        system_prompt: None,
        checkpointer: None,
        interrupt_before_tools: false,
        model_retry: None,
        fail_on_tool_error: false,
    }
}

impl ReactAgent {
    /// Sends `prompt` as a system message before the conversation on every model call (it is
    /// not stored in the state).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Saves every step with `checkpointer`, so a thread's conversation continues across runs.
    pub fn checkpointer(mut self, checkpointer: impl Checkpointer) -> Self {
        self.checkpointer = Some(Arc::new(checkpointer));
        self
    }

    /// Pauses before the tools run, so a person can inspect (or edit) the tool calls; resuming
    /// the thread runs them.
    pub fn interrupt_before_tools(mut self) -> Self {
        self.interrupt_before_tools = true;
        self
    }

    /// Retries the model node with `policy` (e.g. with
    /// [`retry_on(model::is_retryable)`](crate::model::is_retryable)).
    pub fn model_retry(mut self, policy: RetryPolicy) -> Self {
        self.model_retry = Some(policy);
        self
    }

    /// Fails the run on an unknown tool, bad arguments or a tool's error (see
    /// [`ToolNode::fail_on_error`]).
    pub fn fail_on_tool_error(mut self) -> Self {
        self.fail_on_tool_error = true;
        self
    }

    /// The compiled graph: `START -> agent`, `agent -> tools | END`, `tools -> agent`.
    ///
    /// # Errors
    /// Two tools with the same name; the graph's own build errors.
    pub fn compile(self) -> Result<CompiledGraph<MessagesState>, BoxError> {
        let mut tool_node = ToolNode::new(self.tools)?;
        if self.fail_on_tool_error {
            tool_node = tool_node.fail_on_error();
        }
        let specs: Arc<[ToolSpec]> = tool_node.specs().into();
        let mut g = GraphBuilder::<MessagesState>::new();
        let agent = g.add_node(
            "agent",
            model_node(self.model, specs.clone(), self.system_prompt.map(Arc::from)),
        );
        let agent_id = agent.id();
        g.add_edge(START, "agent");
        if specs.is_empty() {
            g.add_edge("agent", END);
        } else {
            let tools = g.add_node("tools", tool_node.node());
            let tools_id = tools.id();
            g.add_edge("tools", "agent");
            g.add_router(
                "agent",
                move |s: &MessagesState| match tools_condition(&s.messages) {
                    ToolsRoute::Tools => Goto::Node(tools_id),
                    ToolsRoute::End => Goto::End,
                },
                [weir_runtime::NodeRef::from(tools_id), END],
            );
            if self.interrupt_before_tools {
                g.interrupt_before("tools");
            }
        }
        if let Some(policy) = self.model_retry {
            g.retry(agent_id, policy);
        }
        if let Some(c) = self.checkpointer {
            g.set_checkpointer(c);
        }
        Ok(g.compile()?)
    }
}

/// The `agent` node: the model's answer to the conversation, or [`NEED_MORE_STEPS`] when its
/// tool calls could not run.
fn model_node(
    model: Arc<dyn ChatModel>,
    specs: Arc<[ToolSpec]>,
    prompt: Option<Arc<str>>,
) -> impl for<'a> Fn(&'a MessagesState, &'a Context) -> BoxFuture<'a, Result<MessagesStateUpdate, BoxError>>
       + Send
       + Sync
       + 'static {
    move |s: &MessagesState, ctx: &Context| {
        let (model, specs, prompt) = (model.clone(), specs.clone(), prompt.clone());
        Box::pin(async move {
            let answer = answer(&*model, &specs, prompt.as_deref(), &s.messages, ctx, 2).await?;
            Ok(MessagesStateUpdate::default().messages(Message::Ai(answer).into()))
        })
    }
}

/// The model's answer to `messages` (after `prompt`, if any), or [`NEED_MORE_STEPS`] when its
/// tool calls could not run with fewer than `reserve` steps left.
pub(crate) async fn answer(
    model: &dyn ChatModel,
    specs: &[ToolSpec],
    prompt: Option<&str>,
    messages: &[Message],
    ctx: &Context,
    reserve: i64,
) -> Result<AiMessage, BoxError> {
    // The conversation is handed to the model as it is in the state: a copy only to put the
    // prompt before it (a copy costs some 0.5 µs per message, a turn on a long thread two).
    let mut answer = match prompt {
        None => model.stream_in(ctx, messages, specs).await?,
        Some(p) => {
            let mut input = Vec::with_capacity(messages.len() + 1);
            input.push(Message::system(p));
            input.extend(messages.iter().cloned());
            model.stream_in(ctx, &input, specs).await?
        }
    };
    if answer.has_tool_calls() && ctx.remaining_steps() < reserve {
        answer = AiMessage {
            id: answer.id,
            ..AiMessage::new(NEED_MORE_STEPS)
        };
    }
    Ok(answer)
}
