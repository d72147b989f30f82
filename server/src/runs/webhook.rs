//! A run's `webhook`: when the run ends, its row (final status) is POSTed as JSON to the URL,
//! over plain HTTP/1, once, within [`WEBHOOK_TIMEOUT`]. A failure (a bad URL, no answer, a
//! non-2xx status) is logged and changes nothing about the run.

use crate::model::Run;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use std::time::Duration;

/// How long the POST may take, connecting included.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// POSTs `run` to `url`; logs why when it fails.
pub(super) async fn notify(url: String, run: Run) {
    match tokio::time::timeout(WEBHOOK_TIMEOUT, post(&url, &run)).await {
        Ok(Ok(())) => {}
        Ok(Err(why)) => tracing::warn!(run_id = %run.run_id, url, error = %why, "the run's webhook failed"),
        Err(_) => tracing::warn!(run_id = %run.run_id, url, "the run's webhook timed out"),
    }
}

async fn post(url: &str, run: &Run) -> Result<(), String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("webhook `{url}`: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("webhook `{url}`: only http:// URLs are supported"));
    }
    let host = uri.host().ok_or_else(|| format!("webhook `{url}`: no host"))?;
    let port = uri.port_u16().unwrap_or(80);
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let body = serde_json::to_vec(run).map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let authority = uri.authority().map_or(host, |a| a.as_str());
    let req = hyper::Request::post(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let res = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = res.status();
    let _ = res.into_body().collect().await;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("answered {status}"))
    }
}
