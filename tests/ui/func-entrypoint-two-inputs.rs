use weir::prelude::*;

#[entrypoint]
async fn greet(name: String, times: u32, previous: Option<String>) -> String {
    format!("{name} x{times} after {previous:?}")
}

fn main() {}
