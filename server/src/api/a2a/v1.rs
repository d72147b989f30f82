//! A2A 1.0's wire form beside 0.3's. A 1.0 client (`a2a-sdk` 1.x, given a card that offers
//! 1.0) calls `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`
//! and `ListTasks`, and speaks ProtoJSON: a part is `{"text": …}`, `{"data": …}`, or a file as
//! `{"raw": …}` or `{"url": …}` with its `mediaType` and `filename` (0.3's `{"kind": "file",
//! "file": {"bytes" | "uri", "mimeType", "name"}}`), with no `kind`, a role `ROLE_USER`, a state `TASK_STATE_COMPLETED`, a stream event `{"statusUpdate":
//! …}`, `configuration.returnImmediately` for 0.3's `blocking: false`. The endpoint works in 0.3's
//! form: a 1.0 request's params are read into it ([`params`]) and its answers written back
//! ([`task`], [`event`]), field by field, so that nothing inside a data part is touched.

use serde_json::{json, Map, Value};

/// A 1.0 method's 0.3 name, for those the two versions share.
pub(super) fn method(name: &str) -> Option<&'static str> {
    Some(match name {
        "SendMessage" => "message/send",
        "SendStreamingMessage" => "message/stream",
        "GetTask" => "tasks/get",
        "CancelTask" => "tasks/cancel",
        "SubscribeToTask" => "tasks/resubscribe",
        "GetExtendedAgentCard" => "agent/getAuthenticatedExtendedCard",
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => "tasks/pushNotificationConfig/",
        _ => return None,
    })
}

/// A file part's fields in 1.0 (on the part) and in 0.3 (under its `file`).
const FILE_FIELDS: [(&str, &str); 4] = [
    ("raw", "bytes"),
    ("url", "uri"),
    ("mediaType", "mimeType"),
    ("filename", "name"),
];

/// A 1.0 request's params in 0.3's form: the message's role and parts, and `returnImmediately`
/// as `blocking`.
pub(super) fn params(mut params: Value) -> Value {
    if let Some(message) = params.get_mut("message").and_then(Value::as_object_mut) {
        if let Some(role) = message.get("role").and_then(Value::as_str) {
            let role = match role {
                "ROLE_USER" => "user",
                "ROLE_AGENT" => "agent",
                other => other,
            };
            message.insert("role".to_owned(), json!(role));
        }
        if let Some(parts) = message.get_mut("parts").and_then(Value::as_array_mut) {
            for part in parts.iter_mut().filter_map(Value::as_object_mut) {
                let kind = if part.contains_key("text") {
                    "text"
                } else if part.contains_key("data") {
                    "data"
                } else if part.contains_key("url") || part.contains_key("raw") {
                    let file = FILE_FIELDS
                        .iter()
                        .filter_map(|(v1, v03)| Some(((*v03).to_owned(), part.remove(*v1)?)))
                        .collect();
                    part.insert("file".to_owned(), Value::Object(file));
                    "file"
                } else {
                    continue;
                };
                part.entry("kind").or_insert_with(|| json!(kind));
            }
        }
    }
    if let Some(configuration) = params.get_mut("configuration").and_then(Value::as_object_mut) {
        if let Some(at_once) = configuration.remove("returnImmediately") {
            let blocking = at_once.as_bool().map_or(at_once.clone(), |b| json!(!b));
            configuration.insert("blocking".to_owned(), blocking);
        }
    }
    params
}

/// A 0.3 state as 1.0 spells it: `input-required` → `TASK_STATE_INPUT_REQUIRED`.
pub(super) fn state(state: &str) -> String {
    format!("TASK_STATE_{}", state.to_uppercase().replace('-', "_"))
}

/// The fields of `object` but `kind`.
fn without_kind(object: &Value) -> Map<String, Value> {
    let mut out = object.as_object().cloned().unwrap_or_default();
    out.remove("kind");
    out
}

/// `out[key]`, when there, made over by `f`.
fn convert(out: &mut Map<String, Value>, key: &str, f: fn(&Value) -> Value) {
    if let Some(value) = out.get_mut(key) {
        *value = f(value);
    }
}

/// Parts without their `kind`, a file's fields on the part itself.
fn parts(parts: &Value) -> Value {
    parts.as_array().map_or(json!([]), |ps| {
        ps.iter()
            .map(|p| {
                let mut out = without_kind(p);
                if let Some(Value::Object(file)) = out.remove("file") {
                    for (v1, v03) in FILE_FIELDS {
                        if let Some(value) = file.get(v03) {
                            out.insert(v1.to_owned(), value.clone());
                        }
                    }
                }
                Value::Object(out)
            })
            .collect()
    })
}

fn role(role: &Value) -> Value {
    match role.as_str() {
        Some("user") => json!("ROLE_USER"),
        Some("agent") => json!("ROLE_AGENT"),
        _ => role.clone(),
    }
}

fn message(message: &Value) -> Value {
    let mut out = without_kind(message);
    convert(&mut out, "role", role);
    convert(&mut out, "parts", parts);
    Value::Object(out)
}

fn status(status: &Value) -> Value {
    let mut out = without_kind(status);
    convert(&mut out, "state", |s| s.as_str().map_or(s.clone(), |s| json!(state(s))));
    convert(&mut out, "message", message);
    Value::Object(out)
}

fn artifact(artifact: &Value) -> Value {
    let mut out = without_kind(artifact);
    convert(&mut out, "parts", parts);
    Value::Object(out)
}

fn list(items: &Value, f: fn(&Value) -> Value) -> Value {
    items
        .as_array()
        .map_or(items.clone(), |items| items.iter().map(f).collect())
}

/// A 0.3 task in 1.0's form.
pub(super) fn task(task: &Value) -> Value {
    let mut out = without_kind(task);
    convert(&mut out, "status", status);
    convert(&mut out, "history", |h| list(h, message));
    convert(&mut out, "artifacts", |a| list(a, artifact));
    Value::Object(out)
}

/// A 0.3 stream event (a task, a status or an artifact update) as 1.0's `StreamResponse`.
pub(super) fn event(event: &Value) -> Value {
    match event.get("kind").and_then(Value::as_str) {
        Some("status-update") => {
            let mut out = without_kind(event);
            out.remove("final");
            convert(&mut out, "status", status);
            json!({"statusUpdate": out})
        }
        Some("artifact-update") => {
            let mut out = without_kind(event);
            convert(&mut out, "artifact", artifact);
            json!({"artifactUpdate": out})
        }
        Some("message") => json!({"message": message(event)}),
        _ => json!({"task": task(event)}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_0_request_reads_as_0_3() {
        let read = params(json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}, {"data": {"a": 1}}, {"url": "u", "mediaType": "image/png", "filename": "a.png"}]},
            "configuration": {"returnImmediately": true, "historyLength": 2},
        }));
        assert_eq!(read["message"]["role"], "user");
        let kinds: Vec<&str> = read["message"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["text", "data", "file"]);
        assert_eq!(
            read["message"]["parts"][2]["file"],
            json!({"uri": "u", "mimeType": "image/png", "name": "a.png"})
        );
        assert_eq!(read["configuration"], json!({"blocking": false, "historyLength": 2}));
    }

    #[test]
    fn a_0_3_task_and_its_events_write_as_1_0_leaving_data_alone() {
        let data = json!({"kind": "x", "role": "user", "state": "completed"});
        let t = json!({
            "kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "input-required", "message": {"kind": "message", "role": "agent", "parts": [{"kind": "text", "text": "ok?"}]}},
            "history": [{"kind": "message", "role": "user", "parts": [{"kind": "data", "data": data}]}],
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "data", "data": data}]}],
        });
        let v1 = task(&t);
        assert_eq!(v1["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(
            v1["status"]["message"],
            json!({"role": "ROLE_AGENT", "parts": [{"text": "ok?"}]})
        );
        assert_eq!(
            v1["history"][0],
            json!({"role": "ROLE_USER", "parts": [{"data": data}]})
        );
        assert_eq!(v1["artifacts"][0]["parts"][0], json!({"data": data}));
        let file =
            json!({"parts": [{"kind": "file", "file": {"bytes": "AA==", "mimeType": "image/png", "name": "a.png"}}]});
        assert_eq!(
            artifact(&file)["parts"][0],
            json!({"raw": "AA==", "mediaType": "image/png", "filename": "a.png"})
        );
        assert!(v1.get("kind").is_none());
        assert_eq!(event(&t)["task"], v1);
        let update = json!({"kind": "status-update", "taskId": "t", "status": {"state": "working"}, "final": false});
        assert_eq!(
            event(&update),
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}})
        );
        let artifact = json!({"kind": "artifact-update", "taskId": "t", "artifact": {"parts": [{"kind": "text", "text": "a"}]}, "lastChunk": true});
        assert_eq!(
            event(&artifact),
            json!({"artifactUpdate": {"taskId": "t", "artifact": {"parts": [{"text": "a"}]}, "lastChunk": true}})
        );
    }
}
