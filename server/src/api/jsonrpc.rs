//! What the API's two JSON-RPC endpoints (`/mcp`, `/a2a`) share: JSON-RPC 2.0's own error codes,
//! and a failed call as its code and message.

pub(super) const PARSE_ERROR: i64 = -32_700;
pub(super) const INVALID_REQUEST: i64 = -32_600;
pub(super) const METHOD_NOT_FOUND: i64 = -32_601;
pub(super) const INVALID_PARAMS: i64 = -32_602;
pub(super) const INTERNAL_ERROR: i64 = -32_603;

/// What failed, as a JSON-RPC error: the code and the message.
pub(super) type RpcFailure = (i64, String);

/// An internal error (`-32603`) saying `e`.
pub(super) fn internal(e: impl std::fmt::Display) -> RpcFailure {
    (INTERNAL_ERROR, e.to_string())
}
