//! `graph!`: every passing form, run.

#[macro_use]
#[path = "common/mod.rs"]
mod common;

use common::{add, append};
use weir::channel::{BinaryOperatorAggregate, LastValue, ReducerWrite};
use weir::prelude::*;
use weir::ChannelKind;

type Append = BinaryOperatorAggregate<Vec<String>, Vec<String>>;
type Add = BinaryOperatorAggregate<i64, i64>;

hand_state! {
    struct Research, ResearchUpdate, ResearchChannels {
        question: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        notes: Vec<String> => Append = Append::new(append), ChannelKind::Reducer, ReducerWrite::Reduce;
        llm_calls: i64 => Add = Add::new(add), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

fn note(x: &str) -> ResearchUpdate {
    ResearchUpdate::default()
        .notes(ReducerWrite::Reduce(vec![x.to_owned()]))
        .llm_calls(ReducerWrite::Reduce(1))
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
    let out = app
        .invoke(Research::default(), &RunConfig::default())
        .await
        .unwrap();
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
