//! [`Json`]: a request body read as JSON whatever its `Content-Type` (Studio sends
//! `text/plain`), refused with a 422 that names the body field at fault. An empty body reads as
//! `{}`, as LangGraph's server takes it.

use super::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

/// A JSON request body.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| ApiError {
            status: e.status(),
            detail: e.body_text(),
        })?;
        parse(&bytes).map(Json)
    }
}

/// Reads `bytes` as a `T`: an error names the body field (`input.topic`) and what was wrong. A
/// string (or key) holding the NUL character is refused here, in either mode: PostgreSQL cannot
/// store it, and a request taken embedded must not be refused once scaled out.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    // JSON can only write NUL as an escape: a body without one needs no closer look.
    if bytes.windows(6).any(|w| w == br"\u0000") {
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) {
            if let Some(path) = nul_at(&value, String::new()) {
                let field = if path.is_empty() {
                    "body".to_owned()
                } else {
                    format!("body field `{path}`")
                };
                return Err(ApiError::invalid(format!(
                    "{field}: holds the NUL character (\\u0000), which the server does not store"
                )));
            }
        }
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::invalid(format!("the body is not JSON: {inner}"))
        } else if path == "." {
            ApiError::invalid(format!("body: {inner}"))
        } else {
            ApiError::invalid(format!("body field `{path}`: {inner}"))
        }
    })
}

/// The path (`input.topic`, `ids[0]`) of the first string or key under `value` that holds NUL.
pub(crate) fn nul_at(value: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    // A key holding NUL is shown with it escaped.
    let joined = |at: &str, key: &str| {
        let key = key.replace('\0', r"\u0000");
        if at.is_empty() {
            key
        } else {
            format!("{at}.{key}")
        }
    };
    match value {
        Value::String(s) => s.contains('\0').then_some(at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_at(item, format!("{at}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if k.contains('\0') {
                return Some(joined(&at, k));
            }
            nul_at(v, joined(&at, k))
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Body {
        #[allow(dead_code)]
        limit: usize,
    }

    #[test]
    fn errors_name_the_field_or_say_it_is_not_json() {
        let e = parse::<Body>(br#"{"limit": "ten"}"#).unwrap_err();
        assert_eq!(e.status, 422);
        assert!(e.detail.starts_with("body field `limit`: invalid type"), "{}", e.detail);
        let e = parse::<Body>(b"{\"limit\": ").unwrap_err();
        assert!(e.detail.starts_with("the body is not JSON"), "{}", e.detail);
        let e = parse::<Body>(b"").unwrap_err();
        assert!(e.detail.contains("missing field `limit`"), "{}", e.detail);
    }

    #[test]
    fn a_string_or_key_holding_nul_is_refused_naming_its_field() {
        let e = parse::<serde_json::Value>(br#"{"input": {"topic": "a\u0000b"}}"#).unwrap_err();
        assert_eq!(e.status, 422);
        assert_eq!(
            e.detail,
            r"body field `input.topic`: holds the NUL character (\u0000), which the server does not store"
        );
        let e = parse::<serde_json::Value>(br#"{"ids": ["x", "\u0000"]}"#).unwrap_err();
        assert!(e.detail.starts_with("body field `ids[1]`"), "{}", e.detail);
        let e = parse::<serde_json::Value>(br#"{"metadata": {"k\u0000": 1}}"#).unwrap_err();
        assert!(e.detail.starts_with(r"body field `metadata.k\u0000`"), "{}", e.detail);
        // An escaped backslash before `u0000` is no NUL.
        assert!(parse::<serde_json::Value>(br#"{"path": "C:\\u0000"}"#).is_ok());
    }
}
