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

#[derive(Clone, Copy)]
enum Go {
    Web,
    Write,
}

fn pick(_: &Doc) -> Vec<Go> {
    vec![Go::Web, Go::Write]
}

fn fan_out(_: &Doc) -> Vec<u32> {
    vec![1, 2]
}

async fn worker(_: &u32, _: &Context) -> Result<DocUpdate, BoxError> {
    Ok(DocUpdate::default())
}

graph! {
    pub(crate) struct Forms;
    state: Doc;
    nodes: [
        start_here = search,
        web = self::search (defer),
        write (writes(text)),
        worker,
        single = (|_: &Doc| DocUpdate::default()),
    ];
    START -> start_here;
    start_here -> pick ? [Go::Web => web, Go::Write => write];
    [web] -> single;
    write -> fan_out ?> worker;
    [single, worker] -> END;
}

fn main() {
    let _ = Forms::compile().unwrap();
    let _: &str = Forms::MERMAID;
}
