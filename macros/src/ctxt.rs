//! Collects the errors of one macro invocation so they are all reported at once (serde's
//! `internals/ctxt.rs`).

use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

/// A place to push errors while walking the input. [`Ctxt::check`] must be called before it is
/// dropped: a context dropped with unchecked errors panics, so that no error is lost.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// An error spanning the tokens of `obj`.
    pub(crate) fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// An error at `span`.
    pub(crate) fn error_at<T: Display>(&self, span: proc_macro2::Span, msg: T) {
        self.syn_error(syn::Error::new(span, msg));
    }

    /// An error from syn's parser.
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("context already checked")
            .push(err);
    }

    /// Consumes the context: all the errors combined into one, or `Ok` when there were none.
    pub(crate) fn check(self) -> Result<(), syn::Error> {
        let mut errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("context already checked")
            .into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}
