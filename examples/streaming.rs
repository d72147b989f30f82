//! Streams a (fake) model's tokens to the terminal while the graph runs: the `answer` node emits
//! each token through its context, and the caller prints them as they arrive, then the update.
//!
//! ```text
//! cargo run --example streaming
//! ```

use futures::StreamExt;
use std::io::Write;
use std::time::Duration;
use weir::prelude::*;
use weir::{Event, StreamMode};

/// The chat's state.
#[derive(State, Clone, Debug, Default)]
pub struct Chat {
    /// The user's question.
    pub question: String,
    /// The model's whole answer, once it is done.
    pub answer: String,
}

/// A deterministic stand-in for a streaming model: one token at a time.
fn fake_tokens(question: &str) -> Vec<String> {
    format!("You asked: {question}. Supersteps run nodes in parallel, then apply their writes.")
        .split_inclusive(' ')
        .map(str::to_owned)
        .collect()
}

/// Calls the model, emitting every token as it comes.
async fn answer(s: &Chat, ctx: &Context) -> ChatUpdate {
    let mut text = String::new();
    for token in fake_tokens(&s.question) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        ctx.emit(&token).await;
        text.push_str(&token);
    }
    ChatUpdate::default().answer(text)
}

/// Runs the chat on `question`, giving each streamed token to `on_token`; returns the answer.
pub async fn chat(question: &str, mut on_token: impl FnMut(&str)) -> Result<String, BoxError> {
    let app = graph! { state: Chat, START -> answer; }.compile()?;
    let input = ChatUpdate::default().question(question.to_owned());
    let mut events = app.stream(input, &RunConfig::default(), StreamMode::CUSTOM | StreamMode::VALUES);
    let mut last = String::new();
    while let Some(event) = events.next().await {
        match event? {
            Event::Custom { value, .. } => on_token(value.as_str().unwrap_or_default()),
            Event::Values { state, .. } => last.clone_from(&state.answer),
            _ => {}
        }
    }
    Ok(last)
}

#[cfg_attr(test, allow(dead_code))]
#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let answer = chat("how does weir run a graph?", |token| {
        print!("{token}");
        let _ = std::io::stdout().flush();
    })
    .await?;
    println!("\n\n(final state: {} characters)", answer.len());
    Ok(())
}
