//! How each `#[derive(State)]` attribute merges a step's writes, observed through real graph runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use weir::prelude::*;
use weir::ChannelKind;

/// A `with` reducer whose write type is not the field's: one line at a time.
fn push_line(log: &mut Vec<String>, line: String) {
    log.push(line);
}

/// A `with` reducer over the field's own type.
fn keep_max(best: &mut u32, score: u32) {
    *best = (*best).max(score);
}

#[derive(State, Clone, Debug, Default, PartialEq)]
struct Research {
    question: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    llm_calls: u32,
    #[reducer(merge)]
    scores: BTreeMap<String, u32>,
    #[reducer(with = push_line, update = String)]
    log: Vec<String>,
    #[reducer(with = keep_max)]
    best: u32,
}

type Node = fn(&Research) -> ResearchUpdate;

/// `START -> a -> {b, c} -> END`: `b` and `c` run in the same step. `c` is added before `b` so
/// that the test shows the writes are applied in node-name order, not in the order of `add_node`.
async fn fan_out(a: Node, b: Node, c: Node, input: ResearchUpdate) -> Result<Research, weir::Error> {
    let mut g = GraphBuilder::<Research>::new();
    g.add_node("a", a);
    g.add_node("c", c);
    g.add_node("b", b);
    g.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c");
    g.add_edge("b", END).add_edge("c", END);
    g.compile()
        .expect("a valid graph")
        .invoke(input, &RunConfig::default())
        .await
}

fn nothing(_: &Research) -> ResearchUpdate {
    ResearchUpdate::default()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn fields_table_lists_every_field_in_declaration_order() {
    let fields: Vec<(&str, ChannelKind)> = Research::FIELDS.iter().map(|f| (f.name(), f.kind)).collect();
    assert_eq!(
        fields,
        [
            ("question", ChannelKind::LastValue),
            ("notes", ChannelKind::Reducer),
            ("llm_calls", ChannelKind::Reducer),
            ("scores", ChannelKind::Reducer),
            ("log", ChannelKind::Reducer),
            ("best", ChannelKind::Reducer),
        ]
    );
    assert_eq!(Research::__WEIR_FIELD_question, 0);
    assert_eq!(Research::__WEIR_FIELD_notes, 1);
    assert_eq!(Research::__WEIR_FIELD_best, 5);
}

#[tokio::test]
async fn append_concatenates_a_fan_out_in_node_name_order() {
    let out = fan_out(
        |_| ResearchUpdate::default().notes(strings(&["a1", "a2"])),
        |_| ResearchUpdate::default().notes(strings(&["b"])),
        |_| ResearchUpdate::default().notes(strings(&["c1", "c2"])),
        ResearchUpdate::default().notes(strings(&["input"])),
    )
    .await
    .unwrap();
    assert_eq!(out.notes, ["input", "a1", "a2", "b", "c1", "c2"]);
}

#[tokio::test]
async fn add_sums_the_writes_of_every_step() {
    let out = fan_out(
        |_| ResearchUpdate::default().llm_calls(1),
        |_| ResearchUpdate::default().llm_calls(2),
        |_| ResearchUpdate::default().llm_calls(4),
        ResearchUpdate::default().llm_calls(10),
    )
    .await
    .unwrap();
    assert_eq!(out.llm_calls, 17);
}

#[tokio::test]
async fn with_reducer_folds_writes_of_another_type() {
    let out = fan_out(
        |_| ResearchUpdate::default().log("a".into()).log("a again".into()),
        |_| ResearchUpdate::default().log("b".into()),
        |_| ResearchUpdate::default().log("c".into()),
        ResearchUpdate::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.log, ["a", "a again", "b", "c"]);
}

#[tokio::test]
async fn with_reducer_of_the_field_type_folds_writes() {
    let out = fan_out(
        |_| ResearchUpdate::default().best(3),
        |_| ResearchUpdate::default().best(7),
        |_| ResearchUpdate::default().best(5),
        ResearchUpdate::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.best, 7);
}

#[tokio::test]
async fn whole_state_input_overwrites_a_reducer_of_another_write_type() {
    // The input is a whole state: `log` (a `Vec<String>` taking `String` writes) is overwritten
    // with the input's value, the other reducers fold the input's value in.
    let input = Research {
        question: "q".into(),
        notes: strings(&["n"]),
        llm_calls: 2,
        log: strings(&["x", "y"]),
        ..Research::default()
    };
    let mut g = GraphBuilder::<Research>::new();
    g.add_node("a", |s: &Research| {
        ResearchUpdate::default()
            .log(format!("{} lines", s.log.len()))
            .llm_calls(1)
    });
    g.add_edge(START, "a").add_edge("a", END);
    let out = g.compile().unwrap().invoke(input, &RunConfig::default()).await.unwrap();
    assert_eq!(out.question, "q");
    assert_eq!(out.notes, ["n"]);
    assert_eq!(out.llm_calls, 3);
    assert_eq!(out.log, ["x", "y", "2 lines"]);
}

#[tokio::test]
async fn merge_keeps_every_key_and_later_writes_win() {
    fn map(entries: &[(&str, u32)]) -> BTreeMap<String, u32> {
        entries.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }
    let out = fan_out(
        |_| ResearchUpdate::default().scores(map(&[("a", 1), ("shared", 1)])),
        |_| ResearchUpdate::default().scores(map(&[("b", 2), ("shared", 2)])),
        |_| ResearchUpdate::default().scores(map(&[("c", 3), ("shared", 3)])),
        ResearchUpdate::default().scores(map(&[("input", 0), ("shared", 0)])),
    )
    .await
    .unwrap();
    assert_eq!(
        out.scores,
        map(&[("a", 1), ("b", 2), ("c", 3), ("input", 0), ("shared", 3)])
    );
}

#[tokio::test]
async fn overwrite_bypasses_the_reducer_and_ignores_the_later_writes_of_its_step() {
    // `b` overwrites, `c` (applied after `b`) appends: `c`'s write is ignored in that step.
    let out = fan_out(
        |_| ResearchUpdate::default().notes(strings(&["a"])),
        |_| {
            ResearchUpdate::default()
                .overwrite_notes(strings(&["fresh"]))
                .llm_calls(1)
        },
        |_| {
            ResearchUpdate::default()
                .notes(strings(&["c"]))
                .overwrite_llm_calls(100)
        },
        ResearchUpdate::default().notes(strings(&["input"])).llm_calls(5),
    )
    .await
    .unwrap();
    assert_eq!(out.notes, ["fresh"]);
    // `b` added 1 to 5, then `c` overwrote the sum.
    assert_eq!(out.llm_calls, 100);
}

#[tokio::test]
async fn two_overwrites_in_one_step_fail_naming_the_field() {
    let err = fan_out(
        nothing,
        |_| ResearchUpdate::default().overwrite_notes(strings(&["b"])),
        |_| ResearchUpdate::default().overwrite_notes(strings(&["c"])),
        ResearchUpdate::default().question("q".into()),
    )
    .await
    .unwrap_err();
    assert!(err.is_invalid_update());
    assert_eq!(err.field(), Some("notes"));
    assert_eq!(err.step(), Some(2));
    assert_eq!(
        err.to_string(),
        "field `notes` at step 2: can receive only one overwrite per step (written by nodes `b` and `c`)"
    );
}

#[tokio::test]
async fn two_writes_to_a_last_value_in_one_step_fail_naming_the_field() {
    let err = fan_out(
        nothing,
        |_| ResearchUpdate::default().question("from b".into()),
        |_| ResearchUpdate::default().question("from c".into()),
        ResearchUpdate::default().question("q".into()),
    )
    .await
    .unwrap_err();
    assert!(err.is_invalid_update());
    assert_eq!(err.field(), Some("question"));
    assert_eq!(err.node_name(), Some("b"));
}

#[tokio::test]
async fn one_write_to_a_last_value_replaces_it() {
    let out = fan_out(
        |_| ResearchUpdate::default().question("from a".into()),
        |s| ResearchUpdate::default().question(format!("{} then b", s.question)),
        nothing,
        ResearchUpdate::default().question("q".into()),
    )
    .await
    .unwrap();
    assert_eq!(out.question, "from a then b");
}

#[tokio::test]
async fn update_merge_appends_a_later_update_field_by_field() {
    let mut first = ResearchUpdate::default().notes(strings(&["1"])).llm_calls(1);
    first.merge(ResearchUpdate::default().notes(strings(&["2"])).question("q".into()));
    assert!(first.is_written(Research::__WEIR_FIELD_question));
    assert!(!first.is_written(Research::__WEIR_FIELD_scores));
    let seen = Arc::new(Mutex::new(None));
    let mut g = GraphBuilder::<Research>::new();
    let update = first.clone();
    g.add_node("a", move |_: &Research| update.clone());
    let record = seen.clone();
    g.add_node("b", move |s: &Research| {
        *record.lock().unwrap() = Some(s.clone());
        ResearchUpdate::default()
    });
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(ResearchUpdate::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.notes, ["1", "2"]);
    assert_eq!(out.llm_calls, 1);
    assert_eq!(out.question, "q");
    assert_eq!(seen.lock().unwrap().as_ref(), Some(&out));
}

#[test]
fn update_debug_shows_the_written_fields_only() {
    let u = ResearchUpdate::default().llm_calls(2).overwrite_notes(strings(&["x"]));
    assert_eq!(
        format!("{u:?}"),
        r#"ResearchUpdate { notes: One(Overwrite(["x"])), llm_calls: One(Reduce(2)) }"#
    );
    assert_eq!(format!("{:?}", ResearchUpdate::default()), "ResearchUpdate");
}
