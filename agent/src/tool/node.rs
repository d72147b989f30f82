//! [`ToolNode`], which runs the tool calls of the last AI message, and [`tools_condition`],
//! the route after a model node.

use super::{Tool, ToolError, ToolSpec};
use crate::message::{Content, Message, MessagesState, MessagesStateUpdate, ToolMessage, ToolStatus};
use crate::trace::ToolSpan;
use futures::future::{join_all, BoxFuture};
use serde_json::json;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use tracing::Instrument;
use weir_runtime::{BoxError, Context};

/// Runs every tool call of the conversation's last AI message, concurrently, and answers each
/// with a tool message, in call order (LangGraph's `ToolNode`).
///
/// An unknown tool, arguments that do not fit and a tool's own error become tool messages
/// with status `error` telling the model what went wrong, unless
/// [`fail_on_error`](Self::fail_on_error) makes them fail the run. An
/// [`Interrupt`](weir_runtime::Interrupt) raised by a tool always reaches the runtime.
///
/// When the run streams tools ([`StreamMode::TOOLS`](weir_runtime::StreamMode::TOOLS)), each call
/// of a known tool reports its start (`tool-started`, with its arguments as `input`) and its end:
/// `tool-finished` with its tool message as `output`, or `tool-error` with the error's `message`
/// (LangGraph's `tools` stream mode); a call that pauses reports nothing more.
#[derive(Clone)]
pub struct ToolNode {
    tools: Arc<[Arc<dyn Tool>]>,
    by_name: Arc<HashMap<String, usize>>,
    fail: bool,
}

impl fmt::Debug for ToolNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.spec().name.as_str()).collect();
        f.debug_struct("ToolNode")
            .field("tools", &names)
            .field("fail", &self.fail)
            .finish()
    }
}

/// Where to go after a model's answer: [`tools_condition`]'s choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolsRoute {
    /// The last message asks for tools: run them.
    Tools,
    /// It does not: the run is over.
    End,
}

/// Routes to the tools when the last message is an AI message with tool calls (valid or not),
/// else to the end (LangGraph's `tools_condition`).
///
/// ```
/// use weir_agent::message::Message;
/// use weir_agent::tool::{tools_condition, ToolsRoute};
/// assert_eq!(tools_condition(&[Message::ai("done")]), ToolsRoute::End);
/// ```
pub fn tools_condition(messages: &[Message]) -> ToolsRoute {
    match messages.last().and_then(Message::as_ai) {
        Some(ai) if ai.has_tool_calls() => ToolsRoute::Tools,
        _ => ToolsRoute::End,
    }
}

/// The text of a tool message for an error, as LangGraph's `ToolNode` words it.
fn error_text(e: &ToolError) -> String {
    format!("Error: {e}\n Please fix your mistakes.")
}

impl ToolNode {
    /// A node running `tools`.
    ///
    /// # Errors
    /// Two tools with the same name.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<Self, ToolError> {
        let tools: Arc<[Arc<dyn Tool>]> = tools.into_iter().collect();
        let mut by_name = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            if by_name.insert(t.spec().name.clone(), i).is_some() {
                return Err(ToolError::duplicate(&t.spec().name));
            }
        }
        Ok(Self {
            tools,
            by_name: Arc::new(by_name),
            fail: false,
        })
    }

    /// The same node, failing the run on an unknown tool, bad arguments or a tool's error
    /// instead of answering with an error message.
    pub fn fail_on_error(mut self) -> Self {
        self.fail = true;
        self
    }

    /// The specs of its tools, to offer a model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec().clone()).collect()
    }

    /// The tool messages answering the last message of `messages`, an AI message, in call
    /// order (an invalid tool call's answer comes after the valid ones').
    ///
    /// # Errors
    /// The last message is not an AI message; an interrupt; with `fail_on_error`, the first
    /// failed call, naming the tool and the call.
    pub async fn run(&self, messages: &[Message], ctx: &Context) -> Result<Vec<Message>, BoxError> {
        let Some(ai) = messages.last().and_then(Message::as_ai) else {
            let found = messages.last().map_or("no message", Message::kind);
            return Err(
                format!("tool node: the last message must be an AI message with tool calls, found {found}").into(),
            );
        };
        let runs = ai.tool_calls.iter().map(|c| {
            let id = c.id.clone().unwrap_or_default();
            self.call_one(&c.name, c.args.clone(), id, ctx)
        });
        let mut out = Vec::new();
        for answer in join_all(runs).await {
            out.push(answer?);
        }
        for bad in &ai.invalid_tool_calls {
            let e = ToolError::invalid_args(bad.error.as_deref().unwrap_or("the arguments did not parse"));
            let name = bad.name.clone().unwrap_or_default();
            out.push(self.answer_error(&name, bad.id.clone().unwrap_or_default(), e)?);
        }
        Ok(out)
    }

    fn call_one<'a>(
        &'a self,
        name: &'a str,
        args: serde_json::Map<String, serde_json::Value>,
        id: String,
        ctx: &'a Context,
    ) -> BoxFuture<'a, Result<Message, BoxError>> {
        // Made here, where the node's task span is current: its parent.
        let span = ToolSpan::new(name, &id);
        Box::pin(async move {
            let Some(&i) = self.by_name.get(name) else {
                let names: Vec<&str> = self.tools.iter().map(|t| t.spec().name.as_str()).collect();
                let text = format!("Error: {name} is not a valid tool, try one of [{}].", names.join(", "));
                span.failed("unknown_tool", &format_args!("no tool is named `{name}`"));
                if self.fail {
                    return Err(format!("tool call `{id}` names unknown tool `{name}`").into());
                }
                return Ok(tool_message(name, id, Content::Text(text), ToolStatus::Error));
            };
            let reports = ctx.streams_tools();
            if reports {
                let started = json!({"event": "tool-started", "tool_call_id": id, "tool_name": name, "input": args});
                ctx.emit_tool(started).await;
            }
            let result = self.tools[i].call(args, ctx).instrument(span.span().clone()).await;
            span.record(&result);
            match result {
                Ok(content) => {
                    let mut answer = tool_message(name, id.clone(), content, ToolStatus::Success);
                    if reports {
                        // Its id now, so that the report and the state hold the same message.
                        give_id(&mut answer);
                        ctx.emit_tool(json!({"event": "tool-finished", "tool_call_id": id, "output": answer}))
                            .await;
                    }
                    Ok(answer)
                }
                // A paused tool runs again on resume, and reports then (as LangGraph's).
                Err(e) if e.is_interrupt() => Err(e.into_box()),
                Err(e) => {
                    if reports {
                        let message = e.to_string();
                        ctx.emit_tool(json!({"event": "tool-error", "tool_call_id": id, "message": message}))
                            .await;
                    }
                    self.answer_error(name, id, e)
                }
            }
        })
    }

    fn answer_error(&self, name: &str, id: String, e: ToolError) -> Result<Message, BoxError> {
        if self.fail {
            return Err(format!("tool `{name}` (call `{id}`) failed: {e}").into());
        }
        Ok(tool_message(name, id, Content::Text(error_text(&e)), ToolStatus::Error))
    }

    /// The node for a [`MessagesState`] graph: `builder.add_node("tools", tool_node.node())`.
    pub fn node(
        self,
    ) -> impl for<'a> Fn(&'a MessagesState, &'a Context) -> BoxFuture<'a, Result<MessagesStateUpdate, BoxError>>
           + Send
           + Sync
           + 'static {
        move |s: &MessagesState, ctx: &Context| {
            let this = self.clone();
            Box::pin(async move {
                let mut answers = this.run(&s.messages, ctx).await?;
                if ctx.streams_messages() {
                    emit_whole(&mut answers, ctx).await;
                }
                Ok(MessagesStateUpdate::default().messages(answers.into()))
            })
        }
    }
}

/// Emits the tool messages whole in `messages` mode (as LangGraph streams a node's new
/// messages that no model streamed), each given its id first so the state's copy has the same.
async fn emit_whole(answers: &mut [Message], ctx: &Context) {
    for m in answers {
        give_id(m);
        ctx.emit_message(&*m).await;
    }
}

/// Gives a tool message without an id a new one, so that what is streamed of it and the
/// state's copy are the same message.
fn give_id(m: &mut Message) {
    if let Message::Tool(t) = m {
        t.id.get_or_insert_with(|| uuid::Uuid::new_v4().to_string());
    }
}

fn tool_message(name: &str, id: String, content: Content, status: ToolStatus) -> Message {
    Message::Tool(ToolMessage {
        content,
        name: Some(name.to_owned()),
        tool_call_id: id,
        status,
        ..ToolMessage::default()
    })
}
