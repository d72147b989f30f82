use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Doc {
    text: String,
}

fn search(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}
fn write(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}

fn fan_out(_: &Doc) -> Vec<String> {
    vec![]
}

fn worker(_: &u32) -> DocUpdate {
    DocUpdate::default()
}

fn main() {
    let _ = graph! {
        state: Doc,
        nodes: [search, worker],
        START -> search;
        search -> fan_out ?> worker;
        worker -> END;
    };
}
