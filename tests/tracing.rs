//! Runs, steps and tasks are `tracing` spans. Alone in its test binary: a subscriber set for
//! one thread does not see callsites other tests' threads registered first.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use weir::checkpoint::MemorySaver;
use weir::prelude::*;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Docs {
    answer: String,
}

#[tokio::test]
async fn runs_steps_and_tasks_are_traced_with_their_thread_step_node_and_how_they_ended() {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let b = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || b.clone())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut g = GraphBuilder::<Docs>::new();
    g.add_node("lookup", |_: &Docs| DocsUpdate::default().answer("42".into()));
    g.add_edge(START, "lookup");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    app.invoke(Docs::default(), &RunConfig::thread("traced")).await.unwrap();
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    // Each span's fields, then how it ended, recorded as it ended.
    let ended = r#"status="ok" otel.status_code="ok"}"#;
    assert!(
        text.contains(&format!(r#"weir.run{{thread="traced" ns="" {ended}"#)),
        "{text}"
    );
    assert!(text.contains(&format!("weir.step{{step=1 tasks=1 {ended}")), "{text}");
    assert!(
        text.contains(&format!(r#"weir.task{{node="lookup" step=1 {ended}"#)),
        "{text}"
    );
}
