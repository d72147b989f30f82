//! [`Filter`]: which of a thread's protocol events a connection (or a WebSocket subscription)
//! wants: its channels (`custom:<name>` for the custom events of one name), the namespaces whose
//! events it wants (each a prefix; a segment without `:` also matches a segment with a task id),
//! and how deep below them.

use serde_json::Value;
use std::collections::BTreeSet;

/// The channels a filter may name, besides `custom:<name>`.
const CHANNELS: &[&str] = &[
    "values",
    "updates",
    "checkpoints",
    "messages",
    "tools",
    "custom",
    "lifecycle",
    "input",
    "tasks",
];

/// Whether `channel` is one the protocol has.
fn supported(channel: &str) -> bool {
    CHANNELS.contains(&channel) || channel.strip_prefix("custom:").is_some_and(|name| !name.is_empty())
}

/// What a connection or subscription wants.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Filter {
    channels: BTreeSet<String>,
    namespaces: Option<Vec<Vec<String>>>,
    depth: Option<usize>,
}

impl Filter {
    /// The filter of a request's `channels`, `namespaces` and `depth`. `namespaces` entries that
    /// are not lists of strings are left out, and a `depth` that is not a count means no limit,
    /// as LangGraph's server reads them.
    ///
    /// # Errors
    /// `channels` missing, empty, or naming a channel the protocol does not have: the entries at
    /// fault, in a sentence that lists the channels.
    pub(super) fn parse(params: &Value) -> Result<Self, String> {
        let Some(list) = params
            .get("channels")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
        else {
            return Err("channels is required and must be a non-empty array".to_owned());
        };
        let mut channels = BTreeSet::new();
        let mut bad = Vec::new();
        for channel in list {
            match channel.as_str() {
                Some(c) if supported(c) => {
                    channels.insert(c.to_owned());
                }
                Some(c) => bad.push(c.to_owned()),
                None => bad.push(channel.to_string()),
            }
        }
        if !bad.is_empty() {
            bad.truncate(5);
            return Err(format!(
                "channels contains unsupported entries: {}. Allowed: values, updates, messages, tools, custom, \
                 lifecycle, input, tasks, checkpoints, or any `custom:<name>`.",
                bad.join(", ")
            ));
        }
        let namespaces: Vec<Vec<String>> = params
            .get("namespaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|ns| {
                ns.as_array()?
                    .iter()
                    .map(|s| s.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .collect();
        let depth = params
            .get("depth")
            .and_then(Value::as_u64)
            .map(|d| usize::try_from(d).unwrap_or(usize::MAX));
        Ok(Self {
            channels,
            namespaces: (!namespaces.is_empty()).then_some(namespaces),
            depth,
        })
    }

    /// Whether `event` (a protocol envelope) is wanted.
    pub(super) fn wants(&self, event: &Value) -> bool {
        let method = event.get("method").and_then(Value::as_str).unwrap_or_default();
        let channel = if method == "input.requested" { "input" } else { method };
        let params = event.get("params");
        let wanted = if channel == "custom" {
            let name = params.and_then(|p| p.pointer("/data/name")).and_then(Value::as_str);
            self.channels.contains("custom") || name.is_some_and(|n| self.channels.contains(&format!("custom:{n}")))
        } else {
            self.channels.contains(channel)
        };
        if !wanted {
            return false;
        }
        let Some(prefixes) = &self.namespaces else { return true };
        let ns: Vec<&str> = params
            .and_then(|p| p.get("namespace"))
            .and_then(Value::as_array)
            .map(|ns| ns.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        prefixes
            .iter()
            .any(|prefix| is_prefix(&ns, prefix) && self.depth.is_none_or(|d| ns.len() - prefix.len() <= d))
    }
}

/// Whether `ns` starts with `prefix`; a prefix segment without `:` also matches a segment with
/// a task id (`child` matches `child:<task id>`).
fn is_prefix(ns: &[&str], prefix: &[String]) -> bool {
    prefix.len() <= ns.len()
        && prefix
            .iter()
            .zip(ns)
            .all(|(want, have)| want == have || (!want.contains(':') && have.split(':').next() == Some(want.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(method: &str, ns: &[&str], data: Value) -> Value {
        json!({"type": "event", "method": method, "params": {"namespace": ns, "data": data}})
    }

    #[test]
    fn channels_are_checked_and_name_the_entries_at_fault() {
        assert!(Filter::parse(&json!({})).unwrap_err().contains("channels is required"));
        assert!(Filter::parse(&json!({"channels": []})).is_err());
        let err = Filter::parse(&json!({"channels": ["values", "debug", 3, "custom:"]})).unwrap_err();
        assert!(err.contains("debug, 3, custom:") && err.contains("Allowed:"), "{err}");
        assert!(Filter::parse(&json!({"channels": ["custom:progress", "input"]})).is_ok());
    }

    #[test]
    fn events_are_wanted_by_channel_custom_name_namespace_and_depth() {
        let f = Filter::parse(&json!({"channels": ["values", "input", "custom:progress"]})).unwrap();
        assert!(f.wants(&event("values", &[], json!({}))));
        assert!(f.wants(&event("input.requested", &[], json!({}))));
        assert!(!f.wants(&event("updates", &[], json!({}))));
        assert!(f.wants(&event("custom", &[], json!({"name": "progress", "payload": 1}))));
        assert!(!f.wants(&event("custom", &[], json!({"payload": 1}))));
        let f = Filter::parse(&json!({"channels": ["values"], "namespaces": [["child"], "junk"], "depth": 0})).unwrap();
        assert!(f.wants(&event("values", &["child:t1"], json!({}))));
        assert!(!f.wants(&event("values", &["child:t1", "inner:t2"], json!({}))));
        assert!(!f.wants(&event("values", &[], json!({}))));
        let f = Filter::parse(&json!({"channels": ["values"], "namespaces": [["child:t1"]], "depth": false})).unwrap();
        assert!(f.wants(&event("values", &["child:t1", "inner:t2"], json!({}))));
        assert!(!f.wants(&event("values", &["child:t9"], json!({}))));
    }
}
