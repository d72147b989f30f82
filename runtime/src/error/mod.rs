//! The errors of building and running a graph: a leaf of the crate, naming the loop's types
//! (pauses, a parent command) only through [`crate::signal`], never the loop itself.

mod build;
mod kind;
mod make;
mod run;
pub(crate) mod typed;

pub use build::BuildError;
pub use kind::BoxError;
pub use run::Error;
