#![deny(unused_must_use)]
use weir::prelude::*;

#[task]
fn save(n: u32) -> u32 {
    n
}

#[entrypoint]
async fn forgets(n: u32) -> u32 {
    // The call starts the task, but its result is never awaited.
    save(n);
    n
}

fn main() {}
