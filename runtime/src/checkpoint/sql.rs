//! What the SQL savers share: the row format of a checkpoint.
//!
//! A checkpoint row keeps `writes` and `metadata` as JSON text (so a later `list` filter can use
//! the database's JSON functions), `channels` as a compact JSON array of
//! `[channel, version, blob]` triples and `created_at` as RFC 3339 text (the [`Timestamp`]'s
//! `Display`); `body` and blob bytes are stored as they are.

use super::{ChannelRef, CheckpointRecord, SaverError, Source, Timestamp};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The text columns of a checkpoint row, in one buffer.
pub(crate) struct Encoded {
    text: String,
    /// Where `metadata`, `created_at` and `channels` start; `writes` starts at 0.
    metadata: usize,
    created_at: usize,
    channels: usize,
}

impl Encoded {
    pub(crate) fn writes(&self) -> &str {
        &self.text[..self.metadata]
    }
    pub(crate) fn metadata(&self) -> &str {
        &self.text[self.metadata..self.created_at]
    }
    pub(crate) fn created_at(&self) -> &str {
        &self.text[self.created_at..self.channels]
    }
    pub(crate) fn channels(&self) -> &str {
        &self.text[self.channels..]
    }
}

/// The text columns of `record`: the JSON that `serde_json` makes of `writes` (an array of
/// strings), `metadata` (an object) and the channels as `[channel, version, blob]` arrays,
/// written here without its serializer (a put's largest cost after SQLite's own), and the
/// creation time as RFC 3339.
pub(crate) fn encode(record: &CheckpointRecord) -> Encoded {
    let mut text = String::with_capacity(96 + 64 * record.channels.len());
    text.push('[');
    for (i, w) in record.writes.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        push_str(&mut text, w);
    }
    text.push(']');
    let metadata = text.len();
    text.push('{');
    for (i, (k, v)) in record.metadata.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        push_str(&mut text, k);
        text.push(':');
        push_str(&mut text, v);
    }
    text.push('}');
    let created_at = text.len();
    text.push_str(record.created_at.text().as_str());
    let channels = text.len();
    text.push('[');
    let mut number = itoa::Buffer::new();
    for (i, c) in record.channels.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push('[');
        push_str(&mut text, &c.channel);
        text.push(',');
        text.push_str(number.format(c.version));
        text.push(',');
        match &c.blob {
            Some(blob) => push_str(&mut text, blob),
            None => text.push_str("null"),
        }
        text.push(']');
    }
    text.push(']');
    Encoded {
        text,
        metadata,
        created_at,
        channels,
    }
}

/// Appends `s` as a JSON string, as `serde_json` writes it.
fn push_str(out: &mut String, s: &str) {
    // Checkpoint ids and most names need no escape (serde_json escapes exactly the control
    // characters, `"` and `\`); the others go through serde_json. The test has no early exit,
    // so it runs 16 or 32 bytes at a time.
    let escapes = s
        .bytes()
        .fold(false, |any, b| any | (b < 0x20) | (b == b'"') | (b == b'\\'));
    if !escapes {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string serializes"));
    }
}

/// A checkpoint row as read back.
pub(crate) struct Row {
    pub(crate) thread_id: String,
    pub(crate) ns: String,
    pub(crate) id: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) step: i64,
    pub(crate) source: String,
    pub(crate) writes: String,
    pub(crate) metadata: String,
    pub(crate) created_at: String,
    pub(crate) channels: String,
    pub(crate) body: Vec<u8>,
}

/// The columns of a row, in the order [`Row`] is read from.
pub(crate) const COLUMNS: &str =
    "thread_id, ns, id, parent_id, step, source, writes, metadata, created_at, channels, body";

pub(crate) fn decode(row: Row) -> Result<CheckpointRecord, SaverError> {
    let corrupt = |what: &str, e: &dyn std::fmt::Display| {
        SaverError::corrupt(&row.thread_id, &row.id, format!("cannot decode its {what}: {e}"))
    };
    let source = Source::from_name(&row.source).ok_or_else(|| corrupt("source", &format!("`{}`", row.source)))?;
    let writes: Arc<[Arc<str>]> = serde_json::from_str(&row.writes).map_err(|e| corrupt("writes", &e))?;
    let metadata: BTreeMap<String, String> =
        serde_json::from_str(&row.metadata).map_err(|e| corrupt("metadata", &e))?;
    let channels: Vec<(String, u64, Option<String>)> =
        serde_json::from_str(&row.channels).map_err(|e| corrupt("channels", &e))?;
    let created_at =
        Timestamp::parse(&row.created_at).ok_or_else(|| corrupt("creation time", &format!("`{}`", row.created_at)))?;
    Ok(CheckpointRecord {
        thread_id: row.thread_id.into(),
        ns: row.ns.into(),
        id: row.id.into(),
        parent_id: row.parent_id.map(Into::into),
        step: row.step,
        source,
        writes,
        metadata,
        created_at,
        channels: channels
            .into_iter()
            .map(|(channel, version, blob)| ChannelRef {
                channel: channel.into(),
                version,
                blob: blob.map(Into::into),
            })
            .collect(),
        body: row.body,
        blobs: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `encode` wrote before it was written by hand: `serde_json` on the same data.
    fn by_serde(record: &CheckpointRecord) -> [String; 3] {
        let channels: Vec<(&str, u64, Option<&str>)> = record
            .channels
            .iter()
            .map(|c| (&*c.channel, c.version, c.blob.as_deref()))
            .collect();
        [
            serde_json::to_string(&record.writes).unwrap(),
            serde_json::to_string(&record.metadata).unwrap(),
            serde_json::to_string(&channels).unwrap(),
        ]
    }

    fn record(names: &[&str]) -> CheckpointRecord {
        CheckpointRecord {
            thread_id: "t".into(),
            ns: "".into(),
            id: "cp".into(),
            parent_id: None,
            step: 0,
            source: Source::Loop,
            writes: names.iter().map(|&n| n.into()).collect(),
            metadata: names
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("{n}{i}"), format!("{i}{n}")))
                .collect(),
            created_at: Timestamp::from_unix_micros(1_793_531_103_000_042),
            channels: names
                .iter()
                .enumerate()
                .map(|(i, n)| ChannelRef {
                    channel: (*n).into(),
                    version: [0, 1, 9, 10, 4_294_967_296, u64::MAX][i % 6],
                    blob: (i % 3 != 0).then(|| format!("{n}-blob").into()),
                })
                .collect(),
            body: Vec::new(),
            blobs: Vec::new(),
        }
    }

    #[test]
    fn text_columns_are_byte_for_byte_what_serde_json_writes() {
        let controls: String = (0u8..0x20).map(char::from).collect();
        let names = [
            "count",
            "branch:to:a",
            "__start__",
            "",
            "say \"hi\"",
            "back\\slash",
            "a/b",
            "tab\tnew\nline\rcr",
            "\u{8}\u{c}\u{0}\u{1f}\u{7f}",
            &controls,
            "é ü 漢字 🦀",
            "\u{2028}\u{2029}\u{feff}",
            "{\"json\": [1, 2]}",
        ];
        let cases = [record(&[]), record(&names[..1]), record(&names[..3]), record(&names)];
        for r in &cases {
            let text = encode(r);
            assert_eq!([text.writes(), text.metadata(), text.channels()], by_serde(r));
        }
        // Each name alone too, so a failure names the culprit.
        for name in names {
            let r = record(&[name, name]);
            let text = encode(&r);
            assert_eq!(
                [text.writes(), text.metadata(), text.channels()],
                by_serde(&r),
                "{name:?}"
            );
        }
    }

    /// The row `encode` makes of `r`.
    fn row(r: &CheckpointRecord) -> Row {
        let text = encode(r);
        Row {
            thread_id: r.thread_id.to_string(),
            ns: r.ns.to_string(),
            id: r.id.to_string(),
            parent_id: r.parent_id.as_deref().map(str::to_owned),
            step: r.step,
            source: r.source.as_str().to_owned(),
            writes: text.writes().to_owned(),
            metadata: text.metadata().to_owned(),
            created_at: text.created_at().to_owned(),
            channels: text.channels().to_owned(),
            body: r.body.clone(),
        }
    }

    #[test]
    fn text_columns_decode_to_what_was_encoded() {
        let r = record(&["count", "say \"hi\"", "tab\t", "漢字"]);
        assert_eq!(encode(&r).created_at(), "2026-11-01T11:05:03.000042Z");
        assert_eq!(decode(row(&r)).unwrap(), r);
    }

    #[test]
    fn a_row_whose_creation_time_is_not_a_timestamp_is_corrupt() {
        let mut bad = row(&record(&["count"]));
        bad.created_at = "2026-02-30T00:00:00.000000Z".into();
        let e = decode(bad).unwrap_err().to_string();
        assert!(e.contains("creation time") && e.contains("2026-02-30"), "{e}");
        assert!(
            e.contains("`t`") && e.contains("`cp`"),
            "names the thread and checkpoint: {e}"
        );
    }
}
