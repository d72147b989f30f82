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

fn main() {
    let _ = graph! {
        state: Doc,
        nodes: [search(timeout(2h), retry(attempts = 3))],
        START -> search -> END;
    };
}
