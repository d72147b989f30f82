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

enum Verdict {
    More,
    Done,
}

fn review(_: &Doc) -> Verdict {
    Verdict::Done
}

fn main() {
    let _ = graph! {
        state: Doc,
        nodes: [search, write],
        START -> search -> write;
        write -> review ? {
            Verdict::More => search,
            Verdict::Done => END,
            Verdict::More => write,
        };
    };
}
