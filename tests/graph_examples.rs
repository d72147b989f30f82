//! The examples' core logic, run as tests.

#[path = "../examples/research.rs"]
mod research;

#[path = "../examples/map_reduce.rs"]
mod map_reduce;

#[path = "../examples/streaming.rs"]
mod streaming;

#[tokio::test]
async fn the_streaming_example_delivers_every_token_before_the_answer() {
    let mut tokens = Vec::new();
    let answer = streaming::chat("why?", |t| tokens.push(t.to_owned())).await.unwrap();
    assert_eq!(tokens.len(), 12);
    assert_eq!(tokens.concat(), answer, "the tokens make up the final answer");
    assert!(answer.starts_with("You asked: why?."));
}

#[tokio::test]
async fn the_research_agent_fans_out_joins_and_loops_until_review_passes() {
    let out = research::research("how does pregel schedule nodes").await.unwrap();
    assert_eq!(
        out.notes,
        [
            "plan: nodes (9 words considered)",
            "docs: nodes (7 words considered)",
            "web: 2 (11 words considered)",
            "plan: nodes (9 words considered)",
            "docs: nodes (7 words considered)",
            "web: 5 (11 words considered)",
        ]
    );
    assert_eq!(out.draft, "how does pregel schedule nodes: a draft citing 6 notes");
    assert_eq!(out.llm_calls, 8);
    assert!(research::ResearchAgent::MERMAID.contains("\twrite -.->|More| plan;\n"));
}

#[tokio::test]
async fn the_research_agent_checkpoints_every_step_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("research.db");
    let (out, steps) = research::research_durably("how does pregel schedule nodes", &db, "t")
        .await
        .unwrap();
    assert_eq!(out.draft, "how does pregel schedule nodes: a draft citing 6 notes");
    assert_eq!(
        steps,
        (-1..=6).rev().collect::<Vec<i64>>(),
        "input, start, then two rounds of plan, search, write"
    );
}

#[tokio::test]
async fn map_reduce_runs_one_task_per_subject_then_reduces_once() {
    let out = map_reduce::map_reduce("animals").await.unwrap();
    assert_eq!(
        out.jokes,
        [
            "why did the lions (animals) cross the road? to reach subject 0",
            "why did the elephants (animals) cross the road? to reach subject 1",
            "why did the penguins (animals) cross the road? to reach subject 2",
        ]
    );
    assert_eq!(
        out.best,
        "why did the elephants (animals) cross the road? to reach subject 1"
    );
    assert!(map_reduce::MapReduce::MERMAID.contains("\tgenerate_topics -.->|Send| generate_joke;\n"));
}
