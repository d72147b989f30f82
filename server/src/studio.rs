//! weir studio: the web page at `/studio` that shows what the served graphs do — each
//! assistant's graph with the nodes of a live run lit, threads and their checkpoints as a
//! timeline with the state and its changes, a pending interrupt's form, state edits and forks,
//! a run launcher and a chat. The page is plain JavaScript modules (`server/studio/`), built into
//! the binary: nothing is fetched at run time. It talks to the server through the LangGraph API
//! every other client uses, and for a thread's timeline and a checkpoint's changes through two
//! routes of its own (`crate::api`'s `/studio/api/`), which page the checkpoints without their
//! values and compare states on the server ([`diff`]), so that a thread of thousands of
//! checkpoints and megabytes of state stays quick to look at.

pub(crate) mod diff;

use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// One file of the page.
struct Asset {
    path: &'static str,
    mime: &'static str,
    body: &'static str,
}

macro_rules! assets {
    ($($path:literal => $mime:expr),* $(,)?) => {
        &[$(Asset { path: $path, mime: $mime, body: include_str!(concat!("../studio/", $path)) }),*]
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page, by its path under `/studio/`.
const ASSETS: &[Asset] = assets! {
    "index.html" => "text/html; charset=utf-8",
    "studio.css" => "text/css; charset=utf-8",
    "js/main.js" => JS,
    "js/dom.js" => JS,
    "js/api.js" => JS,
    "js/graph.js" => JS,
    "js/form.js" => JS,
    "js/views/assistants.js" => JS,
    "js/views/assistant.js" => JS,
    "js/views/chat.js" => JS,
    "js/views/threads.js" => JS,
    "js/views/thread.js" => JS,
};

/// The studio's routes: `/studio` (redirected to `/studio/`), the page and its files.
pub(crate) fn router<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    axum::Router::new()
        .route("/studio", get(|| async { Redirect::permanent("/studio/") }))
        .route("/studio/", get(|| async { file("index.html") }))
        .route(
            "/studio/{*path}",
            get(|axum::extract::Path(path): axum::extract::Path<String>| async move { file(&path) }),
        )
}

/// The file at `path`, or a 404 naming it.
fn file(path: &str) -> Response {
    match ASSETS.iter().find(|a| a.path == path) {
        Some(a) => (
            [(header::CONTENT_TYPE, a.mime), (header::CACHE_CONTROL, "no-cache")],
            a.body,
        )
            .into_response(),
        None => crate::api::ApiError::not_found(format!("The studio has no file `{path}`")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn every_module_the_page_imports_is_served() {
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let dir = a.path.rsplit_once('/').map_or("", |(d, _)| d);
            for import in a
                .body
                .lines()
                .filter_map(|l| l.split(" from \"").nth(1))
                .map(|s| s.trim_end_matches("\";"))
            {
                let target = resolve(dir, import);
                assert!(
                    ASSETS.iter().any(|b| b.path == target),
                    "{} imports {import} ({target}), which is not served",
                    a.path
                );
            }
        }
        assert_eq!(file("nope.js").status(), StatusCode::NOT_FOUND);
    }

    /// `import` relative to the directory `dir`.
    fn resolve(dir: &str, import: &str) -> String {
        let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        for seg in import.split('/') {
            match seg {
                "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        parts.join("/")
    }
}
