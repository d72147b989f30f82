//! Procedural macros of weir.
