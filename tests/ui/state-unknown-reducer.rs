use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(apend)]
    notes: Vec<String>,
    #[reducer(add)]
    llm_calls: u32,
}

fn main() {
    // After the error the update type and its builder still exist: no second error here.
    let _ = ResearchUpdate::default().notes(vec!["x".into()]).llm_calls(1);
    let _ = GraphBuilder::<Research>::new();
}
