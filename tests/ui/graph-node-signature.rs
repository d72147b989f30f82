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

struct Other;

fn summarize(_: &Other) -> DocUpdate {
    DocUpdate::default()
}

fn main() {
    let _ = graph! {
        state: Doc,
        nodes: [search, summarize],
        START -> search -> summarize -> END;
    };
}
