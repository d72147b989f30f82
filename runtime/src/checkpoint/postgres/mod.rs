//! The PostgreSQL saver: for several machines sharing threads.
//!
//! All tables live in one PostgreSQL schema (`weir` unless told otherwise), so several
//! applications, or tests, can share a database without seeing each other. The schema's version
//! is the greatest row of its `weir_schema` table; [`schema`] lists the steps from each
//! version to the next, applied under an advisory lock so two processes starting together migrate
//! once. A schema with a newer version than this weir knows is refused and left untouched.
//!
//! The saver keeps a few connections and hands each call one of them, so calls for different
//! threads run side by side. A put moves the head with
//! `UPDATE heads … WHERE head = $expected` (or an insert that does nothing when a head exists),
//! first in its transaction: a second writer waits on the row lock, then finds the head moved.
//! A checkpoint, or a whole history, is read in one repeatable-read snapshot ([`read`]).
//!
//! `saver` holds the options and the `Checkpointer` methods, `pool` the connections (each with
//! its prepared statements), `write` the transactions that store, `read` those that load whole
//! checkpoints, and `schema` the migrations.

mod pool;
mod prune;
mod read;
mod saver;
mod schema;
mod write;

pub use saver::{PostgresOptions, PostgresSaver};
