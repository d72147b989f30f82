//! Figures, not checks (ignored by default): `runs.wait` through the router on one SQLite file,
//! sequential (latency) and 100 at once (throughput), and the first streamed update of a
//! stateless run. `cargo test -p weir-server --test runs_figures -- --ignored --nocapture`.

mod runs_support;

use runs_support::{app, next_chunk};
use serde_json::json;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "prints figures; run on demand"]
async fn figures() {
    let (_dir, app) = app().await;
    let n = 100;
    let mut lat = Vec::new();
    let t0 = Instant::now();
    for i in 0..n {
        let s = Instant::now();
        let tid = app.thread().await;
        let r = app
            .call(
                "POST",
                &format!("/threads/{tid}/runs/wait"),
                Some(json!({"input": {"topic": i.to_string()}, "assistant_id": "chain"})),
            )
            .await;
        assert_eq!(r.body["log"][1], "b");
        lat.push(s.elapsed());
    }
    let dt = t0.elapsed();
    lat.sort();
    println!(
        "sequential: {n} runs in {:.2?} = {:.1} runs/s; p50 {:.2?} p99 {:.2?}",
        dt,
        n as f64 / dt.as_secs_f64(),
        lat[n / 2],
        lat[n * 99 / 100 - 1]
    );
    let t0 = Instant::now();
    let all = (0..n).map(|i| {
        let app = &app;
        async move {
            let tid = app.thread().await;
            app.call(
                "POST",
                &format!("/threads/{tid}/runs/wait"),
                Some(json!({"input": {"topic": i.to_string()}, "assistant_id": "chain"})),
            )
            .await
        }
    });
    for r in futures::future::join_all(all).await {
        assert_eq!(r.body["log"][1], "b");
    }
    let dt = t0.elapsed();
    println!(
        "concurrent: {n} runs in {:.2?} = {:.1} runs/s",
        dt,
        n as f64 / dt.as_secs_f64()
    );
    let mut first = Vec::new();
    for _ in 0..20 {
        let s = Instant::now();
        let res = app
            .open(
                "POST",
                "/runs/stream",
                Some(json!({"input": {"topic": "q"}, "assistant_id": "chain", "stream_mode": "updates"})),
                &[],
            )
            .await;
        let mut body = res.into_body();
        while let Some(chunk) = next_chunk(&mut body).await {
            if chunk.starts_with("event: updates") {
                first.push(s.elapsed());
                break;
            }
        }
    }
    first.sort();
    println!("stream first update p50 {:.2?}", first[first.len() / 2]);
}
