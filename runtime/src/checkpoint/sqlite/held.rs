//! The writer connection and the statements every write runs, compiled once for its life.
//!
//! rusqlite's statement cache finds a compiled statement by its SQL: it trims, hashes and copies
//! the text, and moves the statement out of its LRU list and back, about 1.4 k instructions a
//! statement, a tenth of a `--durability sync` step that runs three (`BEGIN`, the insert,
//! `COMMIT`; see `docs/benchmarks.md`). A rusqlite `Statement` borrows its `Connection`, so the
//! two cannot live side by side in one struct; this module keeps SQLite's own statement handles
//! next to the connection they belong to instead, and is the crate's only `unsafe` code. Its
//! interface is safe: the statements live and die with their [`WriteConn`] (finalized before
//! the connection closes), and a [`Binder`] takes only values that outlive the run it binds.
#![allow(unsafe_code)]

use rusqlite::{ffi, Connection};
use std::ffi::{c_int, CStr};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// A connection and statements compiled on it, which live and die with it.
pub(super) struct WriteConn {
    conn: Connection,
    /// Every statement is one of `conn`'s, compiled by [`WriteConn::new`] and finalized only
    /// in `drop`.
    statements: Vec<NonNull<ffi::sqlite3_stmt>>,
}

// SAFETY: rusqlite's `Connection` is `Send`: SQLite (built thread-safe, opened without shared
// cache) lets a connection and its statements move between threads as long as one thread at a
// time uses them. The statements move with their connection, and a `WriteConn` is not `Sync`:
// every use goes through a reference held by one thread.
unsafe impl Send for WriteConn {}

impl WriteConn {
    /// Compiles `sql`, one statement each, on `conn`; [`run(i, …)`](Self::run) runs the
    /// `i`-th.
    pub(super) fn new(conn: Connection, sql: &[&str]) -> rusqlite::Result<Self> {
        let mut held = WriteConn {
            conn,
            statements: Vec::with_capacity(sql.len()),
        };
        for text in sql {
            // On an error, dropping `held` finalizes the statements compiled so far.
            let stmt = held.prepare(text)?;
            held.statements.push(stmt);
        }
        Ok(held)
    }

    /// Compiles `sql` (one statement) as a persistent statement of this connection.
    fn prepare(&self, sql: &str) -> rusqlite::Result<NonNull<ffi::sqlite3_stmt>> {
        let len = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::InvalidQuery)?;
        let (mut stmt, mut tail) = (ptr::null_mut(), ptr::null());
        // SAFETY: the handle is this open connection's; `sql` is valid for `len` bytes, and
        // SQLite writes only the two out-pointers.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                self.conn.handle(),
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT,
                &mut stmt,
                &mut tail,
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        let stmt = NonNull::new(stmt).ok_or(rusqlite::Error::InvalidQuery)?;
        if tail != sql.as_ptr().wrapping_add(sql.len()).cast() {
            // SAFETY: compiled just now, and not kept.
            unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
            return Err(rusqlite::Error::MultipleStatement);
        }
        Ok(stmt)
    }

    /// Runs the `i`-th statement given to [`new`](Self::new) once, with the values `bind`
    /// binds. SQLite reads them where they are, without a copy: they outlive the run (`'v`),
    /// and the statement forgets them when the run ends, whether it ran, failed, or `bind` did.
    /// A statement that returns rows is an error here: these statements only write.
    pub(super) fn run<'v>(
        &self,
        i: usize,
        bind: impl FnOnce(&mut Binder<'_, 'v>) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        /// Resets the statement and clears what was bound, on every way out of `run`.
        struct Forget(NonNull<ffi::sqlite3_stmt>);
        impl Drop for Forget {
            fn drop(&mut self) {
                // SAFETY: a live statement of the connection `run` borrows. After a failed
                // step, reset reports the same error again (taken from the step already).
                unsafe {
                    ffi::sqlite3_reset(self.0.as_ptr());
                    ffi::sqlite3_clear_bindings(self.0.as_ptr());
                }
            }
        }
        let stmt = self.statements[i];
        let _forget = Forget(stmt);
        bind(&mut Binder {
            conn: self,
            stmt,
            values: PhantomData,
        })?;
        // SAFETY: a live statement of this connection; what is bound outlives this call.
        match unsafe { ffi::sqlite3_step(stmt.as_ptr()) } {
            ffi::SQLITE_DONE => Ok(()),
            ffi::SQLITE_ROW => Err(rusqlite::Error::ExecuteReturnedResults),
            rc => Err(self.error(rc)),
        }
    }

    /// How many times the `i`-th statement has run, and how many times SQLite has compiled it
    /// again since it was first compiled (after a schema change, say).
    #[cfg(test)]
    pub(super) fn runs_and_recompiles(&self, i: usize) -> (i32, i32) {
        let status = |op| {
            // SAFETY: a live statement of this connection.
            unsafe { ffi::sqlite3_stmt_status(self.statements[i].as_ptr(), op, 0) }
        };
        (
            status(ffi::SQLITE_STMTSTATUS_RUN),
            status(ffi::SQLITE_STMTSTATUS_REPREPARE),
        )
    }

    /// The error SQLite reported on this connection for result code `rc`.
    fn error(&self, rc: c_int) -> rusqlite::Error {
        // SAFETY: the handle is open; SQLite's message is a NUL-terminated string it owns until
        // the next call on the connection, and is copied at once.
        let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.conn.handle())) };
        rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message.to_string_lossy().into_owned()))
    }
}

impl std::ops::Deref for WriteConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for WriteConn {
    fn drop(&mut self) {
        for stmt in self.statements.iter() {
            // SAFETY: each statement is this connection's and was not finalized before; the
            // connection closes after this, when its field drops (SQLite would refuse to
            // close a connection with live statements).
            unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
        }
    }
}

/// Binds the parameters of a [`WriteConn::run`] (numbered from 1) to values that live for `'v`,
/// longer than the run.
pub(super) struct Binder<'c, 'v> {
    conn: &'c WriteConn,
    stmt: NonNull<ffi::sqlite3_stmt>,
    /// Invariant in `'v`: a binder cannot be made to accept values that live less.
    values: PhantomData<fn(&'v ()) -> &'v ()>,
}

impl<'v> Binder<'_, 'v> {
    /// Binds text.
    pub(super) fn text(&mut self, at: usize, value: &'v str) -> rusqlite::Result<()> {
        // Empty text points at a real byte: an empty `str` may dangle, and a null pointer
        // would bind NULL.
        let bytes = if value.is_empty() {
            NOTHING.as_ptr()
        } else {
            value.as_ptr()
        };
        // SAFETY: a live statement of this connection; `bytes` is valid UTF-8 for
        // `value.len()` bytes and stays valid and unchanged until the run clears it from the
        // statement (`SQLITE_STATIC`: no copy).
        self.check(unsafe {
            ffi::sqlite3_bind_text64(
                self.stmt.as_ptr(),
                index(at),
                bytes.cast(),
                value.len() as u64,
                ffi::SQLITE_STATIC(),
                ffi::SQLITE_UTF8 as u8,
            )
        })
    }

    /// Binds text, or NULL for `None`.
    pub(super) fn text_or_null(&mut self, at: usize, value: Option<&'v str>) -> rusqlite::Result<()> {
        match value {
            Some(value) => self.text(at, value),
            // SAFETY: a live statement of this connection.
            None => self.check(unsafe { ffi::sqlite3_bind_null(self.stmt.as_ptr(), index(at)) }),
        }
    }

    /// Binds a blob (an empty one as a zero-length blob, not NULL).
    pub(super) fn blob(&mut self, at: usize, value: &'v [u8]) -> rusqlite::Result<()> {
        let rc = if value.is_empty() {
            // SAFETY: a live statement of this connection; an empty blob takes no pointer.
            unsafe { ffi::sqlite3_bind_zeroblob(self.stmt.as_ptr(), index(at), 0) }
        } else {
            // SAFETY: a live statement of this connection; `value` stays valid and unchanged
            // until the run clears it from the statement (`SQLITE_STATIC`: no copy).
            unsafe {
                ffi::sqlite3_bind_blob64(
                    self.stmt.as_ptr(),
                    index(at),
                    value.as_ptr().cast(),
                    value.len() as u64,
                    ffi::SQLITE_STATIC(),
                )
            }
        };
        self.check(rc)
    }

    /// Binds an integer.
    pub(super) fn int(&mut self, at: usize, value: i64) -> rusqlite::Result<()> {
        // SAFETY: a live statement of this connection.
        self.check(unsafe { ffi::sqlite3_bind_int64(self.stmt.as_ptr(), index(at), value) })
    }

    /// `Ok` for SQLite's `SQLITE_OK`, else the connection's error.
    fn check(&self, rc: c_int) -> rusqlite::Result<()> {
        match rc {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(self.conn.error(rc)),
        }
    }
}

/// What empty text is bound to.
static NOTHING: [u8; 1] = [0];

/// A parameter's number as SQLite takes it (a statement has at most 32,766).
fn index(at: usize) -> c_int {
    c_int::try_from(at).unwrap_or(c_int::MAX)
}
