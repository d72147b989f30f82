use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[channel(ephemral)]
    scratch: Option<String>,
}

fn main() {
    let _ = ResearchUpdate::default().scratch(None);
}
