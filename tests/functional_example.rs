//! The `draft_review` example's two phases, each on a checkpointer opened anew as its own
//! process would: the pause, then the answer, and the revised draft on the thread.

#[allow(dead_code)]
#[path = "../examples/draft_review.rs"]
mod draft_review;

use weir::checkpoint::{new_checkpoint_id, SqliteSaver};
use weir::prelude::*;

#[tokio::test]
async fn the_draft_review_example_pauses_for_review_and_revises_when_answered_later() {
    let db = std::env::temp_dir().join(format!("weir-draft-review-test-{}.db", new_checkpoint_id()));
    let db_path = db.to_string_lossy().into_owned();
    draft_review::start(&db_path, "post", "supersteps").await.unwrap();

    let app = draft_review::draft_review()
        .with_checkpointer(SqliteSaver::open(&db).unwrap())
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("post");
    let paused = app.graph().get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(paused.values.output, serde_json::Value::Null);
    assert_eq!(paused.next, ["draft_review"]);

    draft_review::answer(&db_path, "post", "shorter, please").await.unwrap();
    let done = app.graph().get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        done.values.output,
        serde_json::json!(
            "A short note on supersteps: they run nodes in steps and apply writes at the boundary. \
             [revised: shorter, please]"
        )
    );
    let _ = std::fs::remove_file(&db);
}
