//! The examples' core logic, run as tests.

#[path = "../examples/research.rs"]
mod research;

#[path = "../examples/map_reduce.rs"]
mod map_reduce;

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
