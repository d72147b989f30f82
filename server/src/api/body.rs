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

/// Reads `bytes` as a `T`: an error names the body field (`input.topic`) and what was wrong.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
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
}
