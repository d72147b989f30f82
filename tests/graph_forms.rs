//! `graph!`: every passing form, run.

use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    question: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    llm_calls: i64,
}

fn note(x: &str) -> ResearchUpdate {
    ResearchUpdate::default().notes(vec![x.to_owned()]).llm_calls(1)
}

async fn plan(s: &Research) -> ResearchUpdate {
    note(&format!("plan {}", s.notes.len()))
}
fn search_web(_: &Research) -> ResearchUpdate {
    note("web")
}
fn search_docs(_: &Research, c: &Context) -> ResearchUpdate {
    note(&format!("docs@{}", c.step()))
}
fn write(s: &Research) -> Result<ResearchUpdate, std::io::Error> {
    Ok(note(&format!("write {}", s.notes.len())))
}

#[derive(Debug)]
enum Verdict {
    More,
    Done,
}

fn review(s: &Research) -> Verdict {
    if s.notes.len() > 6 {
        Verdict::Done
    } else {
        Verdict::More
    }
}

#[tokio::test]
async fn the_design_example_runs_without_a_nodes_list() {
    let app = graph! {
        state: Research,
        START -> plan;
        plan -> [search_web, search_docs];
        [search_web, search_docs] -> write;
        write -> review ? {
            Verdict::More => plan,
            Verdict::Done => END,
        };
    }
    .compile()
    .unwrap();
    let out = app.invoke(Research::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(
        out.notes,
        ["plan 0", "docs@2", "web", "write 3", "plan 4", "docs@5", "web", "write 7"]
    );
    assert_eq!(out.llm_calls, 8);
}

graph! {
    struct ResearchGraph;
    state: Research,
    nodes: [
        plan,
        web = search_web (writes(notes, llm_calls)),
        docs = self::search_docs (writes(notes, llm_calls)),
        write (writes(notes, llm_calls)),
    ],
    START -> plan -> [web, docs];
    [web, docs] -> write;
    write -> review ? { Verdict::More => plan, Verdict::Done => END };
}

#[tokio::test]
async fn the_item_form_names_the_graph_and_draws_it() {
    assert_eq!(ResearchGraph::NODES, ["plan", "web", "docs", "write"]);
    let out = ResearchGraph::compile()
        .unwrap()
        .invoke(Research::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.llm_calls, 8);
    println!("{}", ResearchGraph::MERMAID);
}

#[test]
fn the_mermaid_drawing_matches_its_snapshot() {
    assert_eq!(
        ResearchGraph::MERMAID,
        "\
graph TD;
\t__start__([<p>__start__</p>]):::first
\tplan(plan)
\tweb(web)
\tdocs(docs)
\twrite(write)
\t__end__([<p>__end__</p>]):::last
\t__start__ --> plan;
\tplan --> web;
\tplan --> docs;
\tweb --> write;
\tdocs --> write;
\twrite -.->|More| plan;
\twrite -.->|Done| __end__;
\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc
"
    );
}

fn sneaky_write(_: &Research) -> ResearchUpdate {
    note("sneaky").question("changed".into())
}

#[tokio::test]
async fn a_write_outside_the_declared_fields_fails_the_run_naming_node_and_field() {
    let app = graph! {
        state: Research,
        nodes: [sneaky = sneaky_write (writes(notes, llm_calls))],
        START -> sneaky -> END;
    }
    .compile()
    .unwrap();
    let err = app
        .invoke(Research::default(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `sneaky` wrote field `question` at step 1, which is not among the fields it declares in `writes(..)`"
    );
}

#[derive(Clone, Copy)]
enum Search {
    Web,
    Docs,
}

fn which(s: &Research) -> Vec<Search> {
    match s.question.as_str() {
        "both" => vec![Search::Docs, Search::Web],
        "web" => vec![Search::Web],
        _ => vec![],
    }
}

#[tokio::test]
async fn a_multi_route_fans_out_to_the_chosen_nodes_or_none() {
    for (question, expected) in [("both", vec!["docs@2", "web"]), ("web", vec!["web"]), ("none", vec![])] {
        let app = graph! {
            state: Research,
            nodes: [start = (|_: &Research| ()), web = search_web, docs = search_docs],
            START -> start;
            start -> which ? [Search::Web => web, Search::Docs => docs];
            [web] -> END;
        }
        .compile()
        .unwrap();
        let out = app
            .invoke(
                Research {
                    question: question.into(),
                    ..Default::default()
                },
                &RunConfig::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.notes, expected, "question {question}");
    }
}

fn topics(s: &Research) -> Vec<(usize, String)> {
    s.question.split(',').map(str::to_owned).enumerate().collect()
}

async fn research_topic(topic: &(usize, String), c: &Context) -> ResearchUpdate {
    note(&format!("{}:{}@{}", topic.0, topic.1, c.step()))
}

fn summarize(s: &Research) -> ResearchUpdate {
    ResearchUpdate::default().question(format!("{} notes", s.notes.len()))
}

#[tokio::test]
async fn a_send_route_runs_one_task_per_payload_then_a_deferred_node_once() {
    let app = graph! {
        state: Research,
        nodes: [plan = (|_: &Research| ()), research_topic, summarize(defer)],
        START -> plan;
        plan -> topics ?> research_topic;
        research_topic -> summarize -> END;
    }
    .compile()
    .unwrap();
    let out = app
        .invoke(
            Research {
                question: "rust,pregel,graphs".into(),
                ..Default::default()
            },
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.notes, ["0:rust@2", "1:pregel@2", "2:graphs@2"]);
    assert_eq!(out.llm_calls, 3);
    assert_eq!(out.question, "3 notes");
}

#[tokio::test]
async fn a_join_with_a_single_predecessor_waits_for_it() {
    let app = graph! {
        state: Research,
        START -> search_web;
        [search_web] -> write;
        write -> END;
    }
    .compile()
    .unwrap();
    let out = app.invoke(Research::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.notes, ["web", "write 1"]);
}

static FLAKY_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn flaky(_: &Research) -> Result<ResearchUpdate, String> {
    match FLAKY_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
        0 | 1 => Err("rate limited".to_owned()),
        n => Ok(note(&format!("attempt {}", n + 1))),
    }
}

async fn slow(_: &Research) -> ResearchUpdate {
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    note("slow")
}

#[tokio::test]
async fn retry_and_timeout_options_reach_the_runtime() {
    let app = graph! {
        state: Research,
        nodes: [flaky(retry(max_attempts = 3, initial_interval = 1ms, backoff_factor = 2.0, max_interval = 10ms, jitter = false))],
        START -> flaky -> END;
    }
    .compile()
    .unwrap();
    let out = app.invoke(Research::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.notes, ["attempt 3"]);

    let app = graph! {
        state: Research,
        nodes: [slow(timeout(20ms))],
        START -> slow -> END;
    }
    .compile()
    .unwrap();
    let err = app
        .invoke(Research::default(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.node_name(), Some("slow"));
}

#[tokio::test]
async fn interrupt_options_pause_the_run_before_and_after_the_node() {
    // The facade does not re-export the savers and outcomes yet.
    use weir::__private::{checkpoint::MemorySaver, Outcome, PauseKind};
    let app = graph! {
        state: Research,
        nodes: [plan = (|_: &Research| note("plan")), write(interrupt_before, interrupt_after)],
        START -> plan -> write -> END;
    }
    .with_checkpointer(MemorySaver::new())
    .compile()
    .unwrap();
    let config = RunConfig::thread("t-1");
    let paused = app.run(Research::default(), &config).await.unwrap();
    let kinds = |o: &Outcome<Research>| o.pauses().iter().map(|p| (p.node.clone(), p.kind)).collect::<Vec<_>>();
    assert_eq!(kinds(&paused), [("write".to_owned(), PauseKind::Before)]);
    assert_eq!(paused.state().notes, ["plan"]);
    let paused = app.resume(&config).await.unwrap();
    assert_eq!(kinds(&paused), [("write".to_owned(), PauseKind::After)]);
    assert_eq!(paused.state().notes, ["plan", "write 1"]);
    let done = app.resume(&config).await.unwrap();
    assert!(!done.is_paused());
}

#[test]
fn the_compiled_graph_draws_the_same_shape_as_the_const() {
    let drawn = ResearchGraph::compile().unwrap().mermaid();
    // The runtime does not know the variants' names: its route edges are unlabelled.
    let unlabelled = ResearchGraph::MERMAID
        .replace("-.->|More| ", "-.-> ")
        .replace("-.->|Done| ", "-.-> ");
    assert_eq!(drawn, unlabelled);
}

mod goto_option {
    use weir::prelude::*;

    #[derive(State, Clone, Debug, Default)]
    pub struct Ticket {
        pub urgent: bool,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    fn triage(s: &Ticket) -> Command<Ticket> {
        let next = if s.urgent { "page" } else { "reply" };
        Command::new()
            .update(TicketUpdate::default().log(vec![format!("triage -> {next}")]))
            .goto(next)
    }
    fn page(_: &Ticket) -> TicketUpdate {
        TicketUpdate::default().log(vec!["paged".into()])
    }
    fn reply(_: &Ticket) -> TicketUpdate {
        TicketUpdate::default().log(vec!["replied".into()])
    }

    // `goto(..)` declares where a node's `Command`s may go: checked at compile time (a typo is
    // an unknown node, see tests/ui/graph-goto-unknown-node.rs), reachable for the checks, drawn.
    #[tokio::test]
    async fn a_command_goes_to_a_node_declared_in_goto() {
        let app = graph! {
            state: Ticket,
            nodes: [triage(goto(page, reply)), page, reply],
            START -> triage;
        }
        .compile()
        .unwrap();
        let urgent = app
            .invoke(TicketUpdate::default().urgent(true), &RunConfig::default())
            .await
            .unwrap();
        assert_eq!(urgent.log, ["triage -> page", "paged"]);
        let calm = app.invoke(Ticket::default(), &RunConfig::default()).await.unwrap();
        assert_eq!(calm.log, ["triage -> reply", "replied"]);
        assert!(app.mermaid().contains("triage -.-> page;"), "{}", app.mermaid());
    }
}
