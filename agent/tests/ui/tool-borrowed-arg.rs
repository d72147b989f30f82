use weir_agent::tool;

/// Searches.
#[tool]
fn search(query: &str, limit: u32) -> String {
    format!("{query} {limit}")
}

fn main() {}
