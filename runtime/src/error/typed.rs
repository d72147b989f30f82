//! A node error's kind: the short name of the Rust type a node's `Result` failed with, kept
//! from where the runtime boxes the error to the run's [`Error`](super::Error). A node
//! returning `Err(ValueError(..))` fails the run with kind `"ValueError"`, as a Python node
//! raising `ValueError` shows its exception's class. Errors with no type of their own (a
//! `Box<dyn Error>`, a `String`, a `&str`) and the runtime's own signals have no kind.
//!
//! The kind travels inside the box as a private wrapper that [`unwrap`] takes off before
//! anyone can see it: the run's error, retry predicates and error handlers get the node's
//! own error back, so downcasts to it work as before.

use super::kind::BoxError;
use std::fmt;

/// A node's error with its type's short name.
pub(crate) struct Typed {
    kind: &'static str,
    source: BoxError,
}

impl fmt::Debug for Typed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.source, f)
    }
}

impl fmt::Display for Typed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}

impl std::error::Error for Typed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

/// Boxes a node's error `e`, keeping its type's short name when it has one.
pub(crate) fn box_typed<E: Into<BoxError>>(e: E) -> BoxError {
    match kind_of(std::any::type_name::<E>()) {
        Some(kind) => Box::new(Typed { kind, source: e.into() }),
        None => e.into(),
    }
}

/// The node's own error and its kind, the wrapper taken off.
pub(crate) fn unwrap(e: BoxError) -> (BoxError, Option<&'static str>) {
    match e.downcast::<Typed>() {
        Ok(t) => (t.source, Some(t.kind)),
        Err(e) => (e, None),
    }
}

/// The node's own error, seen through the wrapper.
pub(crate) fn inner(e: &BoxError) -> &BoxError {
    match e.downcast_ref::<Typed>() {
        Some(t) => &t.source,
        None => e,
    }
}

/// The short name of the type named `full` (`my_app::errors::ValueError` → `ValueError`, its
/// generic arguments dropped), `None` for the standard library's boxes and strings and for the
/// runtime's own `Error` and signals.
pub(crate) fn kind_of(full: &'static str) -> Option<&'static str> {
    // The runtime's own signals (a pause, a subgraph's error or command) are not a node's kind.
    let no_kind = [
        "&",
        "alloc::",
        "core::",
        "dyn ",
        "weir_runtime::error::run::",
        "weir_runtime::signal::",
    ];
    if no_kind.iter().any(|p| full.starts_with(p)) {
        return None;
    }
    let path = full.split('<').next().unwrap_or(full);
    let short = path.rsplit("::").next().unwrap_or(path).trim();
    (!short.is_empty()).then_some(short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct ValueError;
    impl fmt::Display for ValueError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("bad value")
        }
    }
    impl std::error::Error for ValueError {}

    #[test]
    fn a_named_error_keeps_its_short_name_and_unwraps_to_itself() {
        let (e, kind) = unwrap(box_typed(ValueError));
        assert_eq!(kind, Some("ValueError"));
        assert!(e.downcast_ref::<ValueError>().is_some());
        assert_eq!(e.to_string(), "bad value");
    }

    #[test]
    fn boxes_and_strings_have_no_kind() {
        assert_eq!(unwrap(box_typed("plain")).1, None);
        assert_eq!(unwrap(box_typed(String::from("plain"))).1, None);
        let boxed: BoxError = Box::new(ValueError);
        assert_eq!(unwrap(box_typed(boxed)).1, None);
        assert_eq!(kind_of("std::io::error::Error"), Some("Error"));
        assert_eq!(kind_of("my::Wrapper<other::Inner>"), Some("Wrapper"));
        assert_eq!(kind_of(std::any::type_name::<crate::Error>()), None);
        assert_eq!(kind_of(std::any::type_name::<crate::signal::Interrupt>()), None);
    }
}
