//! The bus's pub/sub side: the subscriptions to the cancellation channel and to every thread's
//! channel ([`Subscription`], made again whenever its connection is lost), the pump that hands a
//! process's thread notices to its watchers, and what the cancellations and the notices publish
//! (each payload's writer beside its reader).

use super::super::threads::ThreadWatchers;
use super::super::{CancelAction, ThreadNotice};
use super::conn::Subscribers;
use super::{action_name, parse_action};
use futures::StreamExt;
use redis::aio::PubSubStream;
use redis::Client;
use std::sync::Weak;
use std::time::Duration;

/// `text` with the characters a `PSUBSCRIBE` pattern reads as wildcards escaped.
pub(super) fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What [`Bus::notify_thread`](crate::bus::Bus::notify_thread) publishes for `notice` (`run <id>`, `state <id> <data>`); `None`
/// for a [`ThreadNotice::Gap`], which is a watcher's own.
pub(super) fn notice_payload(notice: ThreadNotice) -> Option<String> {
    match notice {
        ThreadNotice::Run(run_id) => Some(format!("run {run_id}")),
        ThreadNotice::StateUpdate { id, data } => Some(format!("state {id} {data}")),
        ThreadNotice::Gap => None,
    }
}

/// A thread's notice from what [`notice_payload`] wrote.
fn parse_notice(payload: &str) -> Option<ThreadNotice> {
    match payload.split_once(' ')? {
        ("run", run_id) => Some(ThreadNotice::Run(run_id.to_owned())),
        ("state", rest) => {
            let (id, data) = rest.split_once(' ')?;
            Some(ThreadNotice::StateUpdate {
                id: id.to_owned(),
                data: data.into(),
            })
        }
        _ => None,
    }
}

/// Hands the notices `heard` on the channels named `prefix` and a thread's id to `threads`'
/// watchers, and a [`ThreadNotice::Gap`] to every watcher whenever the subscription was made
/// again. Ends with the bus.
pub(super) async fn pump_threads(mut heard: Subscription, prefix: String, threads: Weak<ThreadWatchers>) {
    loop {
        let next = heard.next().await;
        let Some(threads) = threads.upgrade() else { return };
        match next {
            Heard::Again => threads.send_all(&ThreadNotice::Gap),
            Heard::Message(message) => {
                let payload: Option<String> = message.get_payload().ok();
                let thread_id = message.get_channel_name().strip_prefix(prefix.as_str());
                if let (Some(thread_id), Some(notice)) = (thread_id, payload.as_deref().and_then(parse_notice)) {
                    threads.send(thread_id, notice);
                }
            }
        }
    }
}

/// What [`Bus::cancel`](crate::bus::Bus::cancel) publishes: `<action>:<run id>`.
pub(super) fn cancel_payload(action: CancelAction, run_id: &str) -> String {
    format!("{}:{run_id}", action_name(action))
}

/// A cancellation from what [`cancel_payload`] wrote.
pub(super) fn parse_cancel(message: &redis::Msg) -> Option<(String, CancelAction)> {
    let payload: String = message.get_payload().ok()?;
    let (name, run_id) = payload.split_once(':')?;
    Some((run_id.to_owned(), parse_action(name)?))
}

/// What a pub/sub subscription is to.
#[derive(Debug, Clone)]
pub(super) enum Channel {
    /// One channel (`SUBSCRIBE`).
    Named(String),
    /// Every channel a glob pattern matches (`PSUBSCRIBE`).
    Pattern(String),
}

/// What a [`Subscription`] heard next.
pub(super) enum Heard {
    Message(redis::Msg),
    /// The subscription was lost and made again: messages published in between were missed.
    Again,
}

/// A pub/sub subscription on a connection of its own, made again (after a growing pause, up to
/// 2 s) whenever its connection is lost. With several nodes (a cluster's seeds, each of which
/// hears every message published on the cluster), it tries the next seed when one fails, and
/// when none answers, the nodes the cluster names now.
pub(super) struct Subscription {
    nodes: Subscribers,
    /// The seed tried next.
    node: usize,
    to: Channel,
    /// What it is for, in the logs.
    what: &'static str,
    stream: Option<PubSubStream>,
}

impl Subscription {
    /// Subscribes to `to` now: a failure is the caller's.
    pub(super) async fn open(nodes: Subscribers, to: Channel, what: &'static str) -> redis::RedisResult<Self> {
        let mut heard = Subscription {
            nodes,
            node: 0,
            to,
            what,
            stream: None,
        };
        heard.stream = Some(heard.subscribe().await?);
        Ok(heard)
    }

    /// Subscribes on the seed tried next, or on the other seeds in turn when it fails, then on
    /// the other nodes of a cluster; the last failure is the caller's.
    async fn subscribe(&mut self) -> redis::RedisResult<PubSubStream> {
        let seeds = self.nodes.seeds();
        let mut failed = None;
        for _ in 0..seeds.len() {
            match self.subscribe_on(&seeds[self.node % seeds.len()]).await {
                Ok(stream) => return Ok(stream),
                Err(e) => {
                    if seeds.len() > 1 {
                        tracing::warn!(error = %e, "redis bus: subscribing to {} failed; trying the next seed", self.what);
                    }
                    self.node = (self.node + 1) % seeds.len();
                    failed = Some(e);
                }
            }
        }
        for other in self.nodes.others().await {
            match self.subscribe_on(&other).await {
                Ok(stream) => return Ok(stream),
                Err(e) => failed = Some(e),
            }
        }
        Err(failed.unwrap_or_else(|| (redis::ErrorKind::InvalidClientConfig, "no node to subscribe on").into()))
    }

    async fn subscribe_on(&self, client: &Client) -> redis::RedisResult<PubSubStream> {
        let mut pubsub = client.get_async_pubsub().await?;
        match &self.to {
            Channel::Named(name) => pubsub.subscribe(name).await?,
            Channel::Pattern(pattern) => pubsub.psubscribe(pattern).await?,
        }
        Ok(pubsub.into_on_message())
    }

    /// The next message, or [`Heard::Again`] once the subscription stands again after its
    /// connection was lost.
    pub(super) async fn next(&mut self) -> Heard {
        let mut pause = Duration::from_millis(50);
        loop {
            let Some(stream) = self.stream.as_mut() else {
                match self.subscribe().await {
                    Ok(stream) => {
                        self.stream = Some(stream);
                        return Heard::Again;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "redis bus: subscribing to {} failed; retrying", self.what);
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                    }
                }
                continue;
            };
            match stream.next().await {
                Some(message) => return Heard::Message(message),
                None => {
                    tracing::warn!(
                        "redis bus: the subscription to {} was lost; subscribing again",
                        self.what
                    );
                    self.stream = None;
                }
            }
        }
    }
}
