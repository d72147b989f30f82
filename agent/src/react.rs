//! The prebuilt ReAct agent (LangGraph's `create_react_agent`): a model node and a tool node
//! in a loop over a [`MessagesState`], ended by an answer without tool calls.

use crate::message::{AiMessage, Message, MessagesState, MessagesStateUpdate};
use crate::model::ChatModel;
use crate::tool::{tools_condition, Tool, ToolNode, ToolSpec, ToolsRoute};
use futures::future::BoxFuture;
use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::{BoxError, CompiledGraph, Context, ContextValue, Goto, GraphBuilder, RetryPolicy, END, START};

mod structured;

pub use structured::{StructuredAgent, StructuredOutput, StructuredState, StructuredStateUpdate};

/// The answer that stands in for a model's tool calls when the run has no steps left to run
/// them (LangGraph's words).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// The options of a ReAct agent; [`compile`](Self::compile) makes the graph. Made by
/// [`react_agent`]. `C` is the type of its runs' context ([`context`](Self::context)), which its
/// system prompt and its choice of model may read; `()` for an agent that declares none.
pub struct ReactAgent<C = ()> {
    brain: Brain<C>,
    tools: Vec<Arc<dyn Tool>>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    interrupt_before_tools: bool,
    model_retry: Option<RetryPolicy>,
    fail_on_tool_error: bool,
}

impl<C> fmt::Debug for ReactAgent<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReactAgent")
            .field("model", &self.brain.model.name())
            .field("selects_model", &self.brain.select.is_some())
            .field(
                "tools",
                &self.tools.iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>(),
            )
            .field("system_prompt", &self.brain.prompt)
            .field("interrupt_before_tools", &self.interrupt_before_tools)
            .finish_non_exhaustive()
    }
}

/// A system prompt that is a function of the conversation and the run's context.
type PromptFn<C> = Arc<dyn Fn(&[Message], &C) -> String + Send + Sync>;
/// A choice of model that is a function of the conversation and the run's context.
type ModelFn<C> = Arc<dyn Fn(&[Message], &C) -> Arc<dyn ChatModel> + Send + Sync>;

/// The agent's system prompt: fixed, or made for each model call.
enum Prompt<C> {
    Fixed(Arc<str>),
    Dynamic(PromptFn<C>),
}

impl<C> Clone for Prompt<C> {
    fn clone(&self) -> Self {
        match self {
            Self::Fixed(p) => Self::Fixed(p.clone()),
            Self::Dynamic(f) => Self::Dynamic(f.clone()),
        }
    }
}

impl<C> fmt::Debug for Prompt<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(p) => p.fmt(f),
            Self::Dynamic(_) => f.write_str("<a function of the run's context>"),
        }
    }
}

/// The model a call goes to, and the system prompt before the conversation.
pub(crate) type Resolved<'a> = (Arc<dyn ChatModel>, Option<Cow<'a, str>>);

/// What the model node asks, and whom: the model (or the function choosing it) and the prompt.
pub(crate) struct Brain<C> {
    model: Arc<dyn ChatModel>,
    select: Option<ModelFn<C>>,
    prompt: Option<Prompt<C>>,
}

impl<C> Clone for Brain<C> {
    fn clone(&self) -> Self {
        Self {
            model: self.model.clone(),
            select: self.select.clone(),
            prompt: self.prompt.clone(),
        }
    }
}

impl<C: ContextValue> Brain<C> {
    /// The model to call on `messages` in the run of `ctx`, and the system prompt to put
    /// before them: the fixed ones, or what the agent's functions make of the run's context.
    pub(crate) fn resolve<'a>(&'a self, messages: &[Message], ctx: &Context) -> Result<Resolved<'a>, BoxError> {
        if self.select.is_none() && !matches!(self.prompt, Some(Prompt::Dynamic(_))) {
            let prompt = match &self.prompt {
                Some(Prompt::Fixed(p)) => Some(Cow::Borrowed(&**p)),
                _ => None,
            };
            return Ok((self.model.clone(), prompt));
        }
        let context = run_context::<C>(ctx)?;
        let model = match &self.select {
            Some(f) => f(messages, context),
            None => self.model.clone(),
        };
        let prompt = match &self.prompt {
            None => None,
            Some(Prompt::Fixed(p)) => Some(Cow::Borrowed(&**p)),
            Some(Prompt::Dynamic(f)) => Some(Cow::Owned(f(messages, context))),
        };
        Ok((model, prompt))
    }
}

/// The run's context as a `C`: the agent's graph declares `C`, so its runs carry one, and an
/// agent that declares none has the context `()`.
fn run_context<C: ContextValue>(ctx: &Context) -> Result<&C, BoxError> {
    ctx.context::<C>()
        .or_else(|| (&() as &'static dyn Any).downcast_ref::<C>())
        .ok_or_else(|| {
            format!(
                "node `{}` reads a run context of type `{}`, but the run has none of that type",
                ctx.node(),
                std::any::type_name::<C>()
            )
            .into()
        })
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
        brain: Brain {
            model: Arc::new(model),
            select: None,
            prompt: None,
        },
        tools: tools.into_iter().collect(),
        checkpointer: None,
        interrupt_before_tools: false,
        model_retry: None,
        fail_on_tool_error: false,
    }
}

impl ReactAgent {
    /// The same agent, whose runs carry a context of type `C` (LangGraph's
    /// `create_react_agent(..., context_schema=C)`): its system prompt
    /// ([`system_prompt_fn`](Self::system_prompt_fn)) and its model
    /// ([`select_model`](Self::select_model)) may be functions of it, and its graph's run
    /// methods take a [`RunConfig<C>`](weir_runtime::RunConfig::context). The tools read it too,
    /// through their `Context` ([`Context::context`]). The options set before are kept.
    pub fn context<C: ContextValue>(self) -> ReactAgent<C> {
        let select = self
            .brain
            .select
            .map(|f| -> ModelFn<C> { Arc::new(move |m, _: &C| f(m, &())) });
        let prompt = self.brain.prompt.map(|p| match p {
            Prompt::Fixed(p) => Prompt::Fixed(p),
            Prompt::Dynamic(f) => Prompt::Dynamic(Arc::new(move |m, _: &C| f(m, &()))),
        });
        ReactAgent {
            brain: Brain {
                model: self.brain.model,
                select,
                prompt,
            },
            tools: self.tools,
            checkpointer: self.checkpointer,
            interrupt_before_tools: self.interrupt_before_tools,
            model_retry: self.model_retry,
            fail_on_tool_error: self.fail_on_tool_error,
        }
    }
}

impl<C: ContextValue> ReactAgent<C> {
    /// Sends `prompt` as a system message before the conversation on every model call (it is
    /// not stored in the state).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.brain.prompt = Some(Prompt::Fixed(Arc::from(prompt.into())));
        self
    }

    /// Makes the system message of each model call with `prompt`, from the conversation and
    /// the run's context (LangGraph's `prompt` as a function of the state and the runtime):
    /// two runs with two contexts send two prompts.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use weir_agent::message::{AiMessage, Message, MessagesStateUpdate};
    /// use weir_agent::model::{ChatModel, FakeChatModel};
    /// use weir_agent::react_agent;
    /// use weir_runtime::RunConfig;
    /// struct User { name: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let model = Arc::new(FakeChatModel::new([AiMessage::new("hi!")]).recording());
    /// let chosen: Arc<dyn ChatModel> = model.clone();
    /// let app = react_agent(FakeChatModel::new([]), [])
    ///     .context::<User>()
    ///     .system_prompt_fn(|_, user: &User| format!("The user is {}.", user.name))
    ///     .select_model(move |_, _| chosen.clone())
    ///     .compile()
    ///     .unwrap();
    /// let input = MessagesStateUpdate::default().messages(Message::human("hello").into());
    /// let config = RunConfig::default().context(User { name: "ada".into() });
    /// app.invoke(input, &config).await.unwrap();
    /// assert_eq!(model.requests()[0][0].text(), "The user is ada.");
    /// # });
    /// ```
    pub fn system_prompt_fn(mut self, prompt: impl Fn(&[Message], &C) -> String + Send + Sync + 'static) -> Self {
        self.brain.prompt = Some(Prompt::Dynamic(Arc::new(prompt)));
        self
    }

    /// Chooses the model of each call with `select`, from the conversation and the run's
    /// context (LangGraph's `model` as a function of the state and the runtime): a run for a
    /// paying user may call another model than a free one's. The model given to
    /// [`react_agent`] is then only named in the agent's `Debug`.
    pub fn select_model(
        mut self,
        select: impl Fn(&[Message], &C) -> Arc<dyn ChatModel> + Send + Sync + 'static,
    ) -> Self {
        self.brain.select = Some(Arc::new(select));
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
    pub fn compile(self) -> Result<CompiledGraph<MessagesState, C>, BoxError> {
        let mut tool_node = ToolNode::new(self.tools)?;
        if self.fail_on_tool_error {
            tool_node = tool_node.fail_on_error();
        }
        let specs: Arc<[ToolSpec]> = tool_node.specs().into();
        let mut g = GraphBuilder::<MessagesState>::new().context::<C>();
        let agent = g.add_node("agent", model_node(self.brain, specs.clone()));
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
fn model_node<C: ContextValue>(
    brain: Brain<C>,
    specs: Arc<[ToolSpec]>,
) -> impl for<'a> Fn(&'a MessagesState, &'a Context) -> BoxFuture<'a, Result<MessagesStateUpdate, BoxError>>
       + Send
       + Sync
       + 'static {
    move |s: &MessagesState, ctx: &Context| {
        let (brain, specs) = (brain.clone(), specs.clone());
        Box::pin(async move {
            let (model, prompt) = brain.resolve(&s.messages, ctx)?;
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
