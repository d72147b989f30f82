//! The behaviours every saver shares, one `async fn(saver)` each: `suite!` (in `main.rs`) makes a test of each
//! for every saver.

mod reads;
mod threads;
mod writes;

pub(crate) use reads::*;
pub(crate) use threads::*;
pub(crate) use writes::*;
