use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    #[channel(topic)]
    notes: Vec<String>,
    #[channel(any, ephemeral)]
    scratch: Option<String>,
}

fn main() {
    let _ = ResearchUpdate::default().notes(vec![]).overwrite_notes(vec![]);
}
