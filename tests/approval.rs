//! The approval example: `start` pauses at the approval step, and `approve`, with a graph of its
//! own on the same SQLite file (as a second invocation would), finishes the run.

#[allow(dead_code)]
#[path = "../examples/approval.rs"]
mod approval;
#[path = "checkpoint/support.rs"]
mod support;

use approval::Question;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_pauses_for_approval_and_a_second_invocation_finishes_from_the_file() {
    let dir = support::TempDir::new("approval");
    let db = dir.path().join("approval.db");

    let out = approval::start(&db, "expense-1", 1200).await.unwrap();
    assert!(out.is_paused());
    assert_eq!(out.pauses()[0].node, "approval");
    let q: Question = out.pauses()[0].question().unwrap();
    assert_eq!(q.summary, "approve an expense of 1200 EUR?");
    assert_eq!(out.state().log, ["drafted a request for 1200 EUR"]);

    let out = approval::approve(&db, "expense-1", true).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().approved, Some(true));
    assert_eq!(
        out.state().log,
        ["drafted a request for 1200 EUR", "approved", "paid 1200 EUR"]
    );
    // Nothing is left to answer.
    let err = approval::approve(&db, "expense-1", true).await.unwrap_err();
    assert!(err.to_string().contains("no paused node"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_request_is_sent_back() {
    let dir = support::TempDir::new("approval");
    let db = dir.path().join("approval.db");
    approval::start(&db, "expense-2", 90).await.unwrap();
    let out = approval::approve(&db, "expense-2", false).await.unwrap();
    assert_eq!(out.state().approved, Some(false));
    assert_eq!(
        out.state().log,
        ["drafted a request for 90 EUR", "rejected", "sent back"]
    );
}
