//! What goes wrong when a chat model is called: [`ModelError`], naming the model and, for an
//! HTTP model, the status.

use std::fmt;
use std::time::Duration;
use weir_runtime::BoxError;

/// A chat model call failed. The message names the model and, where there was a response, its
/// HTTP status; it never panics the run: a model node returns it as its error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    model: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Status { status: u16, body: String },
    Timeout { after: Duration, status: Option<u16> },
    Transport(String),
    Truncated { status: u16 },
    Malformed { status: u16, detail: String },
    Script(String),
    Input(String),
}

impl ModelError {
    fn new(model: &str, kind: Kind) -> Self {
        Self {
            model: model.to_owned(),
            kind,
        }
    }

    /// The server answered with a status that is not a success.
    pub fn status_error(model: &str, status: u16, body: impl Into<String>) -> Self {
        let mut body: String = body.into();
        if body.len() > 300 {
            let mut cut = 300;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body.truncate(cut);
            body.push('…');
        }
        Self::new(model, Kind::Status { status, body })
    }

    /// No response (`status: None`) or no next chunk (`status: Some(..)`) within `after`.
    pub fn timeout(model: &str, after: Duration, status: Option<u16>) -> Self {
        Self::new(model, Kind::Timeout { after, status })
    }

    /// The request could not be sent or the connection broke.
    pub fn transport(model: &str, detail: impl fmt::Display) -> Self {
        Self::new(model, Kind::Transport(detail.to_string()))
    }

    /// The stream ended before its end marker.
    pub fn truncated(model: &str, status: u16) -> Self {
        Self::new(model, Kind::Truncated { status })
    }

    /// A stream event could not be read.
    pub fn malformed(model: &str, status: u16, detail: impl fmt::Display) -> Self {
        Self::new(
            model,
            Kind::Malformed {
                status,
                detail: detail.to_string(),
            },
        )
    }

    /// The messages hold something the model cannot take (a video, say), found before anything
    /// was sent; `detail` names the message and its block.
    pub fn input(model: &str, detail: impl Into<String>) -> Self {
        Self::new(model, Kind::Input(detail.into()))
    }

    /// A scripted model has nothing (left) to say.
    pub fn script(model: &str, detail: impl Into<String>) -> Self {
        Self::new(model, Kind::Script(detail.into()))
    }

    /// The error's class, as OpenTelemetry's `error.type` reports it: the HTTP status of a
    /// status error, else a name (`timeout`, `transport`, `truncated`, `malformed`, `script`,
    /// `input`).
    pub(crate) fn type_name(&self) -> std::borrow::Cow<'static, str> {
        match &self.kind {
            Kind::Status { status, .. } => status.to_string().into(),
            Kind::Timeout { .. } => "timeout".into(),
            Kind::Transport(_) => "transport".into(),
            Kind::Truncated { .. } => "truncated".into(),
            Kind::Malformed { .. } => "malformed".into(),
            Kind::Script(_) => "script".into(),
            Kind::Input(_) => "input".into(),
        }
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The HTTP status, when there was a response.
    pub fn status(&self) -> Option<u16> {
        match &self.kind {
            Kind::Status { status, .. } | Kind::Truncated { status } | Kind::Malformed { status, .. } => Some(*status),
            Kind::Timeout { status, .. } => *status,
            Kind::Transport(_) | Kind::Script(_) | Kind::Input(_) => None,
        }
    }

    /// Whether the call timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, Kind::Timeout { .. })
    }

    /// Whether the stream ended before its end marker.
    pub fn is_truncated(&self) -> bool {
        matches!(self.kind, Kind::Truncated { .. })
    }

    /// Whether trying again may help: a timeout, a broken connection or stream, a 408, 409,
    /// 429 or 5xx status.
    pub fn is_retryable(&self) -> bool {
        match &self.kind {
            Kind::Status { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            Kind::Timeout { .. } | Kind::Transport(_) | Kind::Truncated { .. } => true,
            Kind::Malformed { .. } | Kind::Script(_) | Kind::Input(_) => false,
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.model;
        match &self.kind {
            Kind::Status { status, body } => write!(f, "model `{m}` answered HTTP status {status}: {body}"),
            Kind::Timeout { after, status: None } => write!(f, "model `{m}` did not answer within {after:?}"),
            Kind::Timeout { after, status: Some(s) } => {
                write!(f, "model `{m}` (HTTP status {s}) sent nothing for {after:?} mid-stream")
            }
            Kind::Transport(e) => write!(f, "model `{m}` could not be reached: {e}"),
            Kind::Truncated { status } => {
                write!(
                    f,
                    "model `{m}` (HTTP status {status}): the stream ended before its end marker"
                )
            }
            Kind::Malformed { status, detail } => {
                write!(
                    f,
                    "model `{m}` (HTTP status {status}) sent a malformed stream event: {detail}"
                )
            }
            Kind::Script(e) => write!(f, "model `{m}`: {e}"),
            Kind::Input(e) => write!(f, "model `{m}` cannot take the messages: {e}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// A `retry_on` predicate for weir's [`RetryPolicy`](weir_runtime::RetryPolicy): retries a node
/// whose error is a retryable [`ModelError`] ([`ModelError::is_retryable`]).
///
/// ```
/// use weir_agent::model::{is_retryable, ModelError};
/// let policy = weir_runtime::RetryPolicy::new(3).retry_on(is_retryable);
/// # let _ = policy;
/// let e: weir_runtime::BoxError = Box::new(ModelError::status_error("m", 503, "busy"));
/// assert!(is_retryable(&e));
/// ```
pub fn is_retryable(e: &BoxError) -> bool {
    e.downcast_ref::<ModelError>().is_some_and(ModelError::is_retryable)
}
