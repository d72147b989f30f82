//! The code `#[derive(State)]` generates: the update type and its builder, the channel table,
//! the `State` and `Update` impls, the field-index consts. After an error, [`fallback`] emits the
//! same items with stub bodies, so that one mistake gives one error (thiserror's `fallback.rs`).
//!
//! Generated code names only `#krate::__private::…` and `::core::…`.

mod codec;
mod debug;
mod fallback;
mod items;
mod migrate;
mod names;
mod plan;
mod table;
mod update;

pub(crate) use debug::debug_print;
pub(crate) use fallback::fallback;
pub(crate) use items::expand;
