#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use weir::channel::LastValue;
use weir::prelude::*;
use weir::ChannelKind;

hand_state! {
    struct Doc, DocUpdate, DocChannels {
        text: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
    }
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
