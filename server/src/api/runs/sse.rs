//! Server-sent events as LangGraph's server writes them (§1.4, `langgraph_api/sse.py`):
//! `event: <name>\r\ndata: <compact JSON>\r\n[id: <ms>-<seq>\r\n]\r\n`, a `: heartbeat` comment
//! while nothing else goes out, and the stream's headers. The body pulls from the bus only as
//! fast as the client reads, so a slow client falls behind on the bus (and misses items) instead
//! of growing a buffer here. No `event: end` is sent, as the captured server: the SDK then reads
//! the run, which the worker has already recorded final.

use crate::bus::{Bus, CancelAction, StreamItem};
use crate::runs::OUTCOME_EVENT;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use futures::stream::{self, BoxStream, StreamExt};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// Whether a client that asked for stream mode `asked` gets the events named `mode` (without
/// the namespace suffix): `messages` events are `messages-tuple`'s, `messages/…` the legacy
/// `messages` mode's.
fn wanted_by(asked: &str, mode: &str) -> bool {
    match mode {
        "messages" => asked == "messages-tuple",
        _ if mode.starts_with("messages/") => asked == "messages",
        _ => asked == mode,
    }
}

/// The heartbeat comment.
pub(crate) const HEARTBEAT: &[u8] = b": heartbeat\r\n\r\n";

/// One event, framed; `id` only for a resumable stream.
pub(crate) fn frame(event: &str, data: &str, id: Option<&str>) -> Bytes {
    let mut out = format!("event: {event}\r\ndata: {data}\r\n");
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    Bytes::from(out)
}

/// How one SSE response streams a run.
pub(crate) struct SseOptions {
    /// Whether events carry their `id:` line.
    pub(crate) resumable: bool,
    /// The heartbeat interval.
    pub(crate) heartbeat: Duration,
    /// Only these modes' events (plus `metadata` and `error`), when given.
    pub(crate) modes: Option<Vec<String>>,
    /// Cancel this run if the client goes away before the stream ends.
    pub(crate) cancel_on_disconnect: Option<(Arc<dyn Bus>, String)>,
}

/// Cancels the run when dropped while armed: the client went away mid-stream.
struct DisconnectGuard {
    target: Option<(Arc<dyn Bus>, String)>,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if let Some((bus, run_id)) = self.target.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    if let Err(e) = bus.cancel(&run_id, CancelAction::Interrupt).await {
                        tracing::warn!(run_id, error = %e, "cancelling a run whose client left failed");
                    }
                });
            }
        }
    }
}

struct State {
    items: BoxStream<'static, StreamItem>,
    tick: tokio::time::Interval,
    opts: SseOptions,
    guard: DisconnectGuard,
}

impl State {
    /// Whether `event` goes to this client.
    fn wants(&self, event: &str) -> bool {
        if event == OUTCOME_EVENT {
            return false;
        }
        let mode = event.split('|').next().unwrap_or(event);
        match &self.opts.modes {
            None => true,
            Some(modes) => matches!(mode, "metadata" | "error") || modes.iter().any(|m| wanted_by(m, mode)),
        }
    }

    /// The next chunk of the body: an event, a heartbeat, or the end.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            tokio::select! {
                item = self.items.next() => match item {
                    Some(StreamItem::Event { id, event, data }) => {
                        if self.wants(&event) {
                            let id = self.opts.resumable.then_some(id.as_str());
                            return Some(frame(&event, &data, id));
                        }
                    }
                    Some(StreamItem::Done) | None => {
                        self.guard.target = None; // the run ended: nothing to cancel
                        return None;
                    }
                },
                _ = self.tick.tick() => return Some(Bytes::from_static(HEARTBEAT)),
            }
        }
    }
}

/// An SSE response streaming `items`, with LangGraph's headers and `Location` /
/// `Content-Location` when given.
pub(crate) fn response(
    items: BoxStream<'static, StreamItem>,
    opts: SseOptions,
    location: Option<String>,
    content_location: Option<String>,
) -> Response {
    let start = tokio::time::Instant::now() + opts.heartbeat;
    let state = State {
        items,
        tick: tokio::time::interval_at(start, opts.heartbeat.max(Duration::from_millis(1))),
        guard: DisconnectGuard {
            target: opts.cancel_on_disconnect.clone(),
        },
        opts,
    };
    let body = stream::unfold(state, |mut st| async move {
        let chunk = st.next_chunk().await?;
        Some((Ok::<_, Infallible>(chunk), st))
    });
    let mut res = Response::new(Body::from_stream(body));
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    for (name, value) in [
        (header::LOCATION, location),
        (header::CONTENT_LOCATION, content_location),
    ] {
        if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            h.insert(name, v);
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_is_framed_as_langgraph_frames_it() {
        let data = json!({"ask": {"log": ["ask:ok"]}});
        assert_eq!(
            frame("updates", &data.to_string(), Some("1796150057389-0")),
            "event: updates\r\ndata: {\"ask\":{\"log\":[\"ask:ok\"]}}\r\nid: 1796150057389-0\r\n\r\n"
        );
        let data = json!({"error": "ValueError", "message": "boom in node"});
        assert_eq!(
            frame("error", &data.to_string(), None),
            "event: error\r\ndata: {\"error\":\"ValueError\",\"message\":\"boom in node\"}\r\n\r\n"
        );
    }
}
