//! A2A's file parts and LangChain's content blocks, both ways, as LangGraph's server converts
//! them: a client's file (`{"bytes": …}` or `{"uri": …}`) becomes an `image`, `audio`, `video` or
//! `file` block of the human message (a URI is passed on as `url`, never fetched), and a
//! message's content becomes A2A parts: its text, its media blocks as file parts, in order.

use super::{RpcFailure, INVALID_PARAMS};
use base64::alphabet;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use serde_json::{json, Map, Value};

/// The content block types that hold media, written out as file parts.
const MEDIA: [&str; 4] = ["audio", "file", "image", "video"];

/// Base64 `data` decoded: either alphabet (ProtoJSON writes bytes in both), padded or not,
/// whitespace ignored.
fn decode(data: &str) -> Option<Vec<u8>> {
    let compact: String = data.split_whitespace().collect();
    let indifferent = GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    [alphabet::STANDARD, alphabet::URL_SAFE]
        .iter()
        .find_map(|a| GeneralPurpose::new(a, indifferent).decode(&compact).ok())
}

/// The block type of a file of MIME type `mime`: its top level when that is image, audio or
/// video, else `file`.
fn block_type(mime: Option<&str>) -> &'static str {
    let top = mime
        .and_then(|m| m.split('/').next())
        .map(|t| t.trim().to_ascii_lowercase());
    match top.as_deref() {
        Some("image") => "image",
        Some("audio") => "audio",
        Some("video") => "video",
        _ => "file",
    }
}

/// A file part's `file` (found at `at`, `message.parts[i]`) as a content block: its bytes as
/// `base64` (checked, written in the standard alphabet) or its URI as `url`, its `mimeType` as
/// `mime_type`, its `name` as `extras.filename`.
pub(super) fn file_block(file: &Value, at: &str) -> Result<Value, RpcFailure> {
    let invalid = |why: &str| (INVALID_PARAMS, format!("params field `{at}.file{why}"));
    let Some(file) = file.as_object() else {
        return Err(invalid("`: expected an object with `bytes` or `uri`"));
    };
    let text = |key: &str| match file.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(invalid(&format!(".{key}`: expected a string"))),
    };
    let (bytes, uri, mime, name) = (text("bytes")?, text("uri")?, text("mimeType")?, text("name")?);
    let mime = mime.filter(|m| !m.is_empty());
    let mut block = Map::new();
    block.insert("type".to_owned(), json!(block_type(mime)));
    match (bytes, uri) {
        (Some(data), None) => {
            let bytes = decode(data).ok_or_else(|| invalid(".bytes`: not base64"))?;
            block.insert("base64".to_owned(), json!(STANDARD.encode(bytes)));
        }
        (None, Some(uri)) if !uri.is_empty() => {
            block.insert("url".to_owned(), json!(uri));
        }
        (None, Some(_)) => return Err(invalid(".uri`: empty")),
        (Some(_), Some(_)) => return Err(invalid("`: has both `bytes` and `uri` (a file is sent one way)")),
        (None, None) => return Err(invalid("`: has neither `bytes` nor `uri`")),
    }
    if let Some(mime) = mime {
        block.insert("mime_type".to_owned(), json!(mime));
    }
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        block.insert("extras".to_owned(), json!({ "filename": name }));
    }
    Ok(Value::Object(block))
}

/// A media block as a file part: by `url`, or by its base64 data (`base64`, or `data` as
/// LangChain.js writes it), with its MIME type and file name. A block with neither, or with
/// data that is not base64, has nothing A2A can carry: `None`.
fn file_part(block: &Map<String, Value>) -> Option<Value> {
    let text = |key: &str| block.get(key).and_then(Value::as_str);
    let mut file = Map::new();
    match (text("base64").or_else(|| text("data")), text("url")) {
        (Some(data), _) => {
            file.insert("bytes".to_owned(), json!(STANDARD.encode(decode(data)?)));
        }
        (None, Some(url)) if !url.is_empty() => {
            file.insert("uri".to_owned(), json!(url));
        }
        _ => return None,
    }
    if let Some(mime) = text("mime_type").or_else(|| text("mimeType")).filter(|m| !m.is_empty()) {
        file.insert("mimeType".to_owned(), json!(mime));
    }
    let name = text("filename").or_else(|| block.get("extras")?.get("filename")?.as_str());
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        file.insert("name".to_owned(), json!(name));
    }
    Some(json!({"kind": "file", "file": file}))
}

/// A message's `content` as A2A parts: a string as one text part; a list's text (strings and
/// text blocks) joined into text parts between its media blocks' file parts. Blocks A2A has no
/// part for (tool calls, reasoning) are left out.
pub(super) fn parts(content: &Value) -> Vec<Value> {
    let blocks = match content {
        Value::Null => return Vec::new(),
        Value::String(s) => return vec![json!({"kind": "text", "text": s})],
        Value::Array(blocks) => blocks,
        other => return vec![json!({"kind": "text", "text": other.to_string()})],
    };
    let mut parts = Vec::new();
    let mut text = String::new();
    for block in blocks {
        match block {
            Value::String(s) => text.push_str(s),
            Value::Object(b) => match b.get("type").and_then(Value::as_str) {
                Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                Some(kind) if MEDIA.contains(&kind) => {
                    if let Some(part) = file_part(b) {
                        if !text.is_empty() {
                            parts.push(json!({"kind": "text", "text": std::mem::take(&mut text)}));
                        }
                        parts.push(part);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    if !text.is_empty() || parts.is_empty() {
        parts.push(json!({"kind": "text", "text": text}));
    }
    parts
}

/// Whether `parts` say something: a file, or text that is not empty.
pub(super) fn says_something(parts: &[Value]) -> bool {
    parts.iter().any(|p| {
        p.get("kind").and_then(Value::as_str) == Some("file") || p["text"].as_str().is_some_and(|t| !t.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_part_becomes_a_block_of_its_media_type() {
        let png = json!({"bytes": "iVBORw0KGgo", "mimeType": "image/png", "name": "cat.png"});
        assert_eq!(
            file_block(&png, "message.parts[1]"),
            Ok(
                json!({"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png", "extras": {"filename": "cat.png"}})
            )
        );
        let pdf = json!({"uri": "https://example.invalid/r.pdf", "mimeType": "application/pdf"});
        assert_eq!(
            file_block(&pdf, "message.parts[0]"),
            Ok(json!({"type": "file", "url": "https://example.invalid/r.pdf", "mime_type": "application/pdf"}))
        );
        assert_eq!(
            file_block(&json!({"bytes": "UklG"}), "p").unwrap().get("type"),
            Some(&json!("file")),
            "no MIME type: a file"
        );
        assert_eq!(block_type(Some("Audio/wav")), "audio");
        assert_eq!(block_type(Some("video/mp4")), "video");
    }

    #[test]
    fn a_bad_file_part_is_refused_naming_its_field() {
        let cases = [
            (json!("x"), "`message.parts[2].file`: expected an object"),
            (json!({}), "`message.parts[2].file`: has neither `bytes` nor `uri`"),
            (json!({"bytes": "AA==", "uri": "u"}), "has both `bytes` and `uri`"),
            (
                json!({"bytes": "not base64!"}),
                "`message.parts[2].file.bytes`: not base64",
            ),
            (json!({"uri": 3}), "`message.parts[2].file.uri`: expected a string"),
            (json!({"uri": ""}), "`message.parts[2].file.uri`: empty"),
        ];
        for (file, expected) in cases {
            let (code, why) = file_block(&file, "message.parts[2]").unwrap_err();
            assert_eq!(code, INVALID_PARAMS);
            assert!(why.contains(expected), "{file}: {why}");
        }
    }

    #[test]
    fn content_becomes_text_and_file_parts_in_order() {
        assert_eq!(parts(&json!("hi")), [json!({"kind": "text", "text": "hi"})]);
        let content = json!([
            "Here ",
            {"type": "text", "text": "it is:"},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png", "extras": {"filename": "cat.png"}},
            {"type": "tool_call", "name": "f", "args": {}, "id": "c"},
            {"type": "file", "url": "https://example.invalid/r.pdf", "filename": "r.pdf"},
            {"type": "text", "text": "done"},
            {"type": "image", "file_id": "nothing A2A can carry"},
        ]);
        assert_eq!(
            parts(&content),
            [
                json!({"kind": "text", "text": "Here it is:"}),
                json!({"kind": "file", "file": {"bytes": "iVBORw0KGgo=", "mimeType": "image/png", "name": "cat.png"}}),
                json!({"kind": "file", "file": {"uri": "https://example.invalid/r.pdf", "name": "r.pdf"}}),
                json!({"kind": "text", "text": "done"}),
            ]
        );
        assert!(says_something(&parts(&json!([{"type": "file", "url": "u"}]))));
        assert!(!says_something(&parts(&json!([{"type": "tool_call"}]))));
        assert!(!says_something(&parts(&Value::Null)));
    }
}
