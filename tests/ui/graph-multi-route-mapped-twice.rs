use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Doc {
    text: String,
}

fn web(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}
fn docs(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}

enum Search {
    Web,
    Docs,
}

fn which(_: &Doc) -> Vec<Search> {
    vec![Search::Web, Search::Docs]
}

fn main() {
    // `[..]`: the router returns several values, each mapped by the arms.
    let _ = graph! {
        state: Doc,
        nodes: [start = (|_: &Doc| DocUpdate::default()), web, docs],
        START -> start;
        start -> which ? [Search::Web => web, Search::Docs | Search::Web => docs];
        [web, docs] -> END;
    };
}
