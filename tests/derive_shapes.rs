//! `#[derive(State)]` on the shapes of struct users write: generic, `pub(crate)`, beside serde's
//! derives, in a module that shadows prelude names, through a re-exported crate path.

use weir::prelude::*;

/// A generic state: the derive adds the bounds its impls need.
#[derive(State, Clone, Debug, Default)]
struct Pair<T: Clone + Default> {
    #[reducer(append)]
    items: Vec<T>,
    last: T,
    #[reducer(add)]
    total: u64,
}

#[tokio::test]
async fn generic_state_runs_through_a_graph() {
    let mut g = GraphBuilder::<Pair<u32>>::new();
    g.add_node("a", |_: &Pair<u32>| {
        PairUpdate::default().items(vec![1, 2]).last(2).total(3)
    });
    g.add_node("b", |s: &Pair<u32>| {
        PairUpdate::default().items(vec![s.last * 10]).total(4)
    });
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(PairUpdate::<u32>::default().items(vec![0]), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.items, [0, 1, 2, 20]);
    assert_eq!(out.last, 2);
    assert_eq!(out.total, 7);
}

/// A generic reducer given with `with`, over a generic field.
fn longest<T>(acc: &mut Vec<T>, later: Vec<T>) {
    if later.len() > acc.len() {
        *acc = later;
    }
}

#[derive(State, Clone, Debug, Default)]
struct Longest<T>
where
    T: Clone + Default + std::fmt::Debug + Send + Sync + 'static,
{
    #[reducer(with = longest)]
    best: Vec<T>,
}

#[tokio::test]
async fn generic_with_reducer_and_where_clause() {
    let mut g = GraphBuilder::<Longest<char>>::new();
    g.add_node("a", |_: &Longest<char>| LongestUpdate::default().best(vec!['a', 'b']));
    g.add_node("b", |_: &Longest<char>| LongestUpdate::default().best(vec!['c']));
    g.add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(LongestUpdate::default().best(vec!['z']), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.best, ['a', 'b']);
}

mod inner {
    use std::collections::BTreeMap;
    use weir::State;

    /// A crate-visible state with serde's derives and field attributes beside ours.
    #[derive(State, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Doc {
        /// The document's title.
        #[serde(rename = "name")]
        pub(crate) title: String,
        #[reducer(append)]
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub(crate) line_items: Vec<String>,
        #[serde(skip)]
        #[channel(ephemeral)]
        pub(crate) scratch: Option<u8>,
        #[reducer(merge)]
        pub(crate) tags: BTreeMap<String, bool>,
    }
}

#[test]
fn serde_attributes_pass_through_untouched() {
    use inner::{Doc, DocUpdate};
    let doc = Doc {
        title: "t".into(),
        scratch: Some(1),
        ..Doc::default()
    };
    assert_eq!(serde_json::to_string(&doc).unwrap(), r#"{"name":"t","tags":{}}"#);
    let back: Doc = serde_json::from_str(r#"{"name":"u","lineItems":["x"],"tags":{"k":true}}"#).unwrap();
    assert_eq!(back.line_items, ["x"]);
    assert_eq!(back.tags.get("k"), Some(&true));
    let u = DocUpdate::default().title("t".into()).line_items(vec!["a".into()]);
    assert!(u.is_written(Doc::__WEIR_FIELD_title));
    assert!(u.is_written(Doc::__WEIR_FIELD_line_items));
}

/// A module shadowing the names generated code could otherwise pick up by accident.
mod hygiene {
    #![allow(dead_code, non_camel_case_types, non_upper_case_globals)]

    type Result<T> = ::core::result::Result<T, Nope>;
    type Option = ();
    struct Vec;
    struct String;
    struct Box;
    trait Default {}
    trait Clone {}
    trait Debug {}
    trait Send {}
    trait Sync {}
    trait State {}
    trait Update {}
    mod core {}
    mod std {}
    mod weir {}
    mod serde {}
    #[derive(Debug)]
    pub(crate) struct Nope;
    const value: u8 = 0;
    const index: u8 = 0;
    const later: u8 = 0;
    const bump: u8 = 0;

    // The user's own `serde` is a module here; the derives are named by absolute paths.
    #[derive(::weir::State, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default)]
    pub(crate) struct Shadowed {
        pub(crate) name: ::std::string::String,
        #[reducer(append)]
        pub(crate) notes: ::std::vec::Vec<u8>,
        #[reducer(add)]
        pub(crate) count: u32,
        #[channel(topic)]
        pub(crate) events: ::std::vec::Vec<u8>,
        pub(crate) maybe: ::core::option::Option<u8>,
    }

    pub(crate) fn update() -> ShadowedUpdate {
        ShadowedUpdate::default()
            .notes(::std::vec![1])
            .count(2)
            .maybe(::core::option::Option::Some(3))
    }
}

#[tokio::test]
async fn generated_code_does_not_see_the_users_names() {
    use hygiene::{Shadowed, ShadowedUpdate};
    let mut g = GraphBuilder::<Shadowed>::new();
    g.add_node("a", |s: &Shadowed| {
        ShadowedUpdate::default()
            .notes(vec![s.notes.len() as u8])
            .name("a".into())
    });
    g.add_edge(START, "a").add_edge("a", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(hygiene::update(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.notes, [1, 1]);
    assert_eq!(out.count, 2);
    assert_eq!(out.maybe, Some(3));
    assert_eq!(out.name, "a");
}

/// A crate that re-exports weir under another path.
mod reexport {
    pub(crate) use weir as engine;
}

#[derive(weir::State, Clone, Debug, Default)]
#[state(crate = crate::reexport::engine, update = Delta)]
struct Renamed {
    #[reducer(add)]
    n: i64,
}

#[tokio::test]
async fn crate_path_and_update_name_can_be_set() {
    let mut g = GraphBuilder::<Renamed>::new();
    g.add_node("a", |_: &Renamed| Delta::default().n(-2));
    g.add_edge(START, "a").add_edge("a", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(Delta::default().n(5), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.n, 3);
}

#[derive(State, Clone, Debug, Default)]
struct Keywords {
    r#type: String,
    #[reducer(append)]
    r#match: Vec<u8>,
}

#[test]
fn raw_identifier_fields_keep_their_names() {
    let u = KeywordsUpdate::default().r#type("t".into()).overwrite_match(vec![1]);
    assert_eq!(Keywords::FIELDS[0].name, "type");
    assert_eq!(Keywords::FIELDS[1].name, "match");
    assert!(u.is_written(Keywords::__WEIR_FIELD_type));
    assert!(u.is_written(Keywords::__WEIR_FIELD_match));
}

#[derive(State, Clone, Debug, Default)]
struct Empty {}

#[test]
fn a_state_may_have_no_fields() {
    assert!(Empty::FIELDS.is_empty());
    assert_eq!(format!("{:?}", EmptyUpdate::default()), "EmptyUpdate");
}
