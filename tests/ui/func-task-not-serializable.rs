use weir::prelude::*;

struct Handle(u32);

#[task]
async fn open(handle: Handle) -> u32 {
    handle.0
}

#[task]
fn make(n: u32) -> Handle {
    Handle(n)
}

fn main() {}
