//! A run's stream in Redis: the entries' format, written by [`PUBLISH`] (which checks the run's
//! fence in the same step) from [`fields`], and read back, a bounded batch at a time, by
//! [`Reader`]: an event is `id`, `event` and `data`; the end of the stream is `done`.

use super::super::{parse_event_id, StreamItem};
use super::Shared;
use redis::streams::{StreamId, StreamReadReply};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// How many entries a subscriber reads at once.
const READ_COUNT: usize = 64;

/// How long one `XREAD` blocks, so a subscriber that is gone frees its connection soon.
const READ_BLOCK: Duration = Duration::from_secs(1);

/// Publishes a stream entry unless its publisher's attempt is fenced off; an attempt after the
/// first raises the fence to itself, so that the attempts before it publish nothing after its
/// first entry. KEYS: the run's stream, its fence. ARGV: the attempt (0 for the server), the
/// stream's `MAXLEN`, its time to live in ms, the fence's time to live in ms, then the entry's
/// fields and values. Returns 1 when published, 0 when fenced off.
pub(super) const PUBLISH: &str = r"
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')
local by = tonumber(ARGV[1])
if by > 0 and by < fence then return 0 end
if by > 1 and by > fence then redis.call('SET', KEYS[2], by, 'PX', ARGV[4]) end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// The fields and values of `item`'s stream entry.
pub(super) fn fields(item: &StreamItem) -> Vec<&[u8]> {
    match item {
        StreamItem::Event { id, event, data } => vec![
            b"id",
            id.as_bytes(),
            b"event",
            event.as_bytes(),
            b"data",
            data.as_bytes(),
        ],
        StreamItem::Done => vec![b"done", b"1"],
    }
}

/// A subscriber's position in a run's Redis stream, read a bounded batch at a time.
pub(super) struct Reader {
    shared: Arc<Shared>,
    key: String,
    /// The last Redis entry id read.
    cursor: String,
    /// Items whose event id is at or before this are skipped (the client has them).
    after: Option<(u64, u64)>,
    /// The id of the last event handed out: an entry with it again is a publish sent twice
    /// ([`Shared::query`] retries one whose connection was lost), skipped.
    last: Option<String>,
    buffer: VecDeque<StreamItem>,
    done: bool,
}

impl Reader {
    /// A reader of the stream at `key` from the Redis entry after `cursor`, skipping the events
    /// at or before `after` (the client has them).
    pub(super) fn new(shared: Arc<Shared>, key: String, cursor: String, after: Option<(u64, u64)>) -> Self {
        Reader {
            shared,
            key,
            cursor,
            after,
            last: None,
            buffer: VecDeque::new(),
            done: false,
        }
    }

    /// The next item, reading (and blocking in Redis) when none is buffered.
    pub(super) async fn next(mut self) -> Option<(StreamItem, Self)> {
        let mut backoff = Duration::from_millis(50);
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some((item, self));
            }
            if self.done {
                return None;
            }
            let mut read = redis::cmd("XREAD");
            read.arg("COUNT")
                .arg(READ_COUNT)
                .arg("BLOCK")
                .arg(READ_BLOCK.as_millis() as u64)
                .arg("STREAMS")
                .arg(&self.key)
                .arg(&self.cursor);
            match self.shared.blocking::<Option<StreamReadReply>>(&read).await {
                Ok(reply) => {
                    backoff = Duration::from_millis(50);
                    for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                        self.take(entry);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, key = %self.key, "redis bus: reading a stream failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Buffers one Redis entry, unless the client has it already.
    fn take(&mut self, entry: StreamId) {
        self.cursor.clone_from(&entry.id);
        if self.done {
            return;
        }
        if entry.contains_key("done") {
            self.done = true;
            self.buffer.push_back(StreamItem::Done);
            return;
        }
        let (Some(id), Some(event), Some(data)) = (
            entry.get::<String>("id"),
            entry.get::<String>("event"),
            entry.get::<String>("data"),
        ) else {
            tracing::warn!(key = %self.key, entry = %entry.id, "redis bus: a stream entry lacks a field; skipped");
            return;
        };
        if let (Some(after), Some(this)) = (self.after, parse_event_id(&id)) {
            if this <= after {
                return;
            }
        }
        if self.last.as_ref() == Some(&id) {
            return;
        }
        self.last = Some(id.clone());
        self.buffer.push_back(StreamItem::Event {
            id,
            event,
            data: data.into(),
        });
    }
}
