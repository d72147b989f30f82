use weir_agent::tool;

#[tool]
fn search(query: String) -> String {
    query
}

fn main() {}
