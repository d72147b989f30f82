//! What wraps every route: CORS as `langgraph dev` answers a preflight (any origin, the methods
//! of the API, `Access-Control-Allow-Private-Network: true` for Studio's https page calling a
//! local server), the request body limit (413), a 422 for a URL holding NUL, a 500 for a handler
//! that panicked, and the rewriting of axum's own plain-text refusals (405, 413, a bad query
//! string) into `{"detail": …}` with the status LangGraph uses.

use super::ApiError;
use crate::config::{CorsConfig, HttpConfig};
#[cfg(test)]
use axum::body::Body;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer, ExposeHeaders};

/// The methods a preflight allows, in `langgraph dev`'s words and order.
const ALLOW_METHODS: &str = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT, QUERY";

/// How the API is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiOptions {
    /// The largest request body accepted, in bytes; a larger one gets 413 (default 8 MiB).
    pub body_limit: usize,
    /// The config file's `http`: route groups turned off, CORS rules, a prefix (by default every
    /// route, with `langgraph dev`'s permissive CORS, at the root).
    pub http: HttpConfig,
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            body_limit: 8 * 1024 * 1024,
            http: HttpConfig::default(),
        }
    }
}

/// The largest request body accepted ([`ApiOptions::body_limit`]), for the handlers that read a
/// request's content otherwise than as its body (a WebSocket's messages).
#[derive(Debug, Clone, Copy)]
pub(super) struct BodyLimit(pub(super) usize);

/// `routes` with the body limit, CORS, and JSON errors around them.
pub(super) fn wrap(routes: axum::Router, options: &ApiOptions) -> axum::Router {
    let routes = routes
        .layer(axum::Extension(BodyLimit(options.body_limit)))
        .layer(axum::extract::DefaultBodyLimit::max(options.body_limit))
        .layer(axum::middleware::from_fn_with_state(
            options.body_limit,
            refuse_oversized,
        ))
        .layer(axum::middleware::from_fn(refuse_nul_in_url))
        .layer(axum::middleware::map_response(json_errors))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked));
    match &options.http.cors {
        None => {
            let methods = ALLOW_METHODS
                .split(", ")
                .map(|m| Method::from_bytes(m.as_bytes()).expect("HTTP method names are tokens"));
            let cors = CorsLayer::new()
                .allow_origin(AllowOrigin::any())
                .allow_methods(AllowMethods::list(methods))
                .allow_headers(AllowHeaders::mirror_request())
                .allow_private_network(true)
                // A browser client (useStream) reads the run's ids from these.
                .expose_headers([header::CONTENT_LOCATION, header::LOCATION]);
            routes
                .layer(cors)
                .layer(axum::middleware::map_response(preflight_methods))
        }
        Some(rules) => routes.layer(cors_of(rules)),
    }
}

/// CORS by `http.cors`'s rules, as Starlette's middleware applies them: `"*"` allows any
/// origin, method or request header (the request's own, echoed, when credentials are allowed,
/// which a literal `*` would not allow); an origin is allowed by the list or by the regular
/// expression. The config was checked when read ([`crate::config`]).
fn cors_of(rules: &CorsConfig) -> CorsLayer {
    let any = |list: &[String]| list.iter().any(|v| v == "*");
    let credentials = rules.allow_credentials;
    let origin = if any(&rules.allow_origins) {
        if credentials {
            AllowOrigin::mirror_request()
        } else {
            AllowOrigin::any()
        }
    } else {
        let listed: Vec<HeaderValue> = rules
            .allow_origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        let pattern = rules
            .allow_origin_regex
            .as_deref()
            .and_then(|p| regex::Regex::new(&format!("^(?:{p})$")).ok());
        AllowOrigin::predicate(move |origin, _| {
            listed.contains(origin)
                || pattern
                    .as_ref()
                    .is_some_and(|r| origin.to_str().is_ok_and(|o| r.is_match(o)))
        })
    };
    let methods = if any(&rules.allow_methods) {
        AllowMethods::mirror_request()
    } else {
        AllowMethods::list(
            rules
                .allow_methods
                .iter()
                .filter_map(|m| Method::from_bytes(m.as_bytes()).ok()),
        )
    };
    let headers = if any(&rules.allow_headers) {
        AllowHeaders::mirror_request()
    } else {
        AllowHeaders::list(rules.allow_headers.iter().filter_map(|h| h.parse().ok()))
    };
    let expose = if any(&rules.expose_headers) {
        ExposeHeaders::any()
    } else {
        ExposeHeaders::list(rules.expose_headers.iter().filter_map(|h| h.parse().ok()))
    };
    CorsLayer::new()
        .allow_origin(origin)
        .allow_methods(methods)
        .allow_headers(headers)
        .allow_credentials(credentials)
        .expose_headers(expose)
        .max_age(std::time::Duration::from_secs(rules.max_age))
}

/// How much of an oversized body is read and thrown away before the 413, so that a client that
/// writes the whole body before reading (httpx, without `Expect: 100-continue`) gets the answer
/// instead of a reset connection. Memory stays bounded: nothing read is kept.
const DRAIN_CAP: u64 = 64 * 1024 * 1024;

/// Answers 413 to a request whose `Content-Length` is over `limit`, before any handler runs. The
/// body is read to its end first unless the client waits for `100 Continue` (then it sends
/// nothing more) or the body is over [`DRAIN_CAP`] past the limit (then the connection closes).
async fn refuse_oversized(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let headers = request.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let Some(length) = length.filter(|n| *n > limit as u64) else {
        return next.run(request).await;
    };
    if !headers.contains_key(header::EXPECT) && length <= limit as u64 + DRAIN_CAP {
        use futures::StreamExt;
        let mut body = request.into_body().into_data_stream();
        while let Some(Ok(_)) = body.next().await {}
    }
    ApiError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        detail: format!("Request body is too large: {length} bytes, over the limit of {limit}"),
    }
    .into_response()
}

/// Answers 422 to a request whose URL holds the NUL character (`%00`), naming the query
/// parameter or saying it is in the path: an id or a store key holding it would reach the
/// database, which PostgreSQL refuses (bodies are checked as they are read, [`super::body`]).
async fn refuse_nul_in_url(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let uri = request.uri();
    if uri.path().contains("%00") {
        return ApiError::invalid("the URL's path holds the NUL character (%00), which the server does not store")
            .into_response();
    }
    if let Some(pair) = uri.query().and_then(|q| q.split('&').find(|pair| pair.contains("%00"))) {
        let name = pair.split('=').next().unwrap_or_default().replace("%00", r"\u0000");
        return ApiError::invalid(format!(
            "query parameter `{name}`: holds the NUL character (%00), which the server does not store"
        ))
        .into_response();
    }
    next.run(request).await
}

/// Writes the preflight's `Access-Control-Allow-Methods` with `", "` between the names, byte for
/// byte as `langgraph dev` (tower-http joins them with a bare `,`).
async fn preflight_methods(mut response: Response) -> Response {
    let headers = response.headers_mut();
    if headers.contains_key(header::ACCESS_CONTROL_ALLOW_METHODS) {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(ALLOW_METHODS),
        );
    }
    response
}

/// A handler that panicked (in a graph's code, say) fails its request with a 500, not the server.
fn panicked(payload: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic");
    ApiError::internal(format!("the request panicked: {what}")).into_response()
}

/// Turns a refusal axum made itself (a plain-text or empty body) into `{"detail": …}`: 405 and 413
/// keep their status; a bad query string or path parameter becomes 422, as LangGraph's server.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let text = match axum::body::to_bytes(response.into_body(), 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => String::new(),
    };
    let detail = match (status, text.is_empty()) {
        (StatusCode::PAYLOAD_TOO_LARGE, _) => "Request body is too large".to_owned(),
        (_, true) => status.canonical_reason().unwrap_or("Error").to_owned(),
        (_, false) => text,
    };
    let status = if status == StatusCode::BAD_REQUEST {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        status
    };
    ApiError { status, detail }.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn boom() -> &'static str {
        panic!("boom in a node")
    }

    #[tokio::test]
    async fn a_panicking_handler_fails_its_request_with_a_json_500() {
        let app = wrap(axum::Router::new().route("/boom", get(boom)), &ApiOptions::default());
        let request = axum::http::Request::get("/boom").body(Body::empty()).unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], br#"{"detail":"the request panicked: boom in a node"}"#);
    }
}
