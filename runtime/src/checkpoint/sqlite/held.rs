//! The writer connection and the statements every write runs, compiled once for its life.
//!
//! rusqlite's statement cache finds a compiled statement by its SQL: it trims, hashes and copies
//! the text, and moves the statement out of its LRU list and back, about 1.4 k instructions a
//! statement, a tenth of a `--durability sync` step that runs three (`BEGIN`, the insert,
//! `COMMIT`; see `docs/benchmarks.md`). A rusqlite `Statement` borrows its `Connection`, so the
//! two cannot live side by side in one struct; this module keeps SQLite's own statement handles
//! next to the connection they belong to instead, and is the crate's only `unsafe` code. Its
//! interface is safe: a [`Held`] statement exists only while its [`WriteConn`] does, and the
//! statements are finalized before the connection closes.
#![allow(unsafe_code)]

use rusqlite::{ffi, Connection};
use std::ffi::{c_int, CStr};
use std::ptr::{self, NonNull};

/// A connection and statements compiled on it, which live and die with it.
pub(super) struct WriteConn {
    conn: Connection,
    /// Every statement is one of `conn`'s, compiled by [`WriteConn::new`] and finalized only
    /// in `drop`.
    statements: Box<[NonNull<ffi::sqlite3_stmt>]>,
}

// SAFETY: rusqlite's `Connection` is `Send`: SQLite (built thread-safe, opened without shared
// cache) lets a connection and its statements move between threads as long as one thread at a
// time uses them. The statements move with their connection, and a `WriteConn` is not `Sync`:
// every use goes through a reference held by one thread.
unsafe impl Send for WriteConn {}

impl WriteConn {
    /// Compiles `sql`, one statement each, on `conn`; [`statement(i)`](Self::statement) is the
    /// `i`-th.
    pub(super) fn new(conn: Connection, sql: &[&str]) -> rusqlite::Result<Self> {
        let mut held = WriteConn {
            conn,
            statements: Box::default(),
        };
        let mut statements = Vec::with_capacity(sql.len());
        for text in sql {
            match held.prepare(text) {
                Ok(s) => statements.push(s),
                Err(e) => {
                    held.statements = statements.into();
                    return Err(e);
                }
            }
        }
        held.statements = statements.into();
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

    /// The `i`-th statement given to [`new`](Self::new), with no values bound.
    pub(super) fn statement(&self, i: usize) -> Held<'_> {
        Held {
            conn: self,
            stmt: self.statements[i],
        }
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

/// A statement of a [`WriteConn`]: bind its parameters (numbered from 1), then
/// [`execute`](Self::execute). Every call is on SQLite's statement, which stays valid while the
/// connection it borrows does; SQLite itself refuses a bind while the statement runs.
pub(super) struct Held<'c> {
    conn: &'c WriteConn,
    stmt: NonNull<ffi::sqlite3_stmt>,
}

impl Held<'_> {
    /// Binds text, which SQLite copies.
    pub(super) fn text(&mut self, at: usize, value: &str) -> rusqlite::Result<()> {
        // An empty value still needs a pointer: a null one would bind NULL.
        let (bytes, destructor) = if value.is_empty() {
            ("".as_ptr(), ffi::SQLITE_STATIC())
        } else {
            (value.as_ptr(), ffi::SQLITE_TRANSIENT())
        };
        // SAFETY: `bytes` is valid for `value.len()` bytes of UTF-8 for the call, and SQLite
        // copies them (the empty text is static).
        self.check(unsafe {
            ffi::sqlite3_bind_text64(
                self.stmt.as_ptr(),
                index(at),
                bytes.cast(),
                value.len() as u64,
                destructor,
                ffi::SQLITE_UTF8 as u8,
            )
        })
    }

    /// Binds a blob, which SQLite copies.
    pub(super) fn blob(&mut self, at: usize, value: &[u8]) -> rusqlite::Result<()> {
        // SAFETY: `value` is valid for its length for the call, and SQLite copies it; an
        // empty blob is bound as a zero-length blob, with no pointer.
        self.check(unsafe {
            if value.is_empty() {
                ffi::sqlite3_bind_zeroblob(self.stmt.as_ptr(), index(at), 0)
            } else {
                ffi::sqlite3_bind_blob64(
                    self.stmt.as_ptr(),
                    index(at),
                    value.as_ptr().cast(),
                    value.len() as u64,
                    ffi::SQLITE_TRANSIENT(),
                )
            }
        })
    }

    /// Binds an integer.
    pub(super) fn int(&mut self, at: usize, value: i64) -> rusqlite::Result<()> {
        // SAFETY: a live statement of this connection.
        self.check(unsafe { ffi::sqlite3_bind_int64(self.stmt.as_ptr(), index(at), value) })
    }

    /// Binds text, or NULL for `None`.
    pub(super) fn text_or_null(&mut self, at: usize, value: Option<&str>) -> rusqlite::Result<()> {
        match value {
            Some(value) => self.text(at, value),
            // SAFETY: a live statement of this connection.
            None => self.check(unsafe { ffi::sqlite3_bind_null(self.stmt.as_ptr(), index(at)) }),
        }
    }

    /// Runs the statement to its end, then resets it and clears its bindings for the next run:
    /// it keeps no copy of a checkpoint's bytes in between. A statement that returns rows is an
    /// error here: these statements only write.
    pub(super) fn execute(&mut self) -> rusqlite::Result<()> {
        // SAFETY: a live statement of this connection, stepped then reset by this thread.
        let rc = unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) };
        let outcome = match rc {
            ffi::SQLITE_DONE => Ok(()),
            ffi::SQLITE_ROW => Err(rusqlite::Error::ExecuteReturnedResults),
            rc => Err(self.conn.error(rc)),
        };
        // SAFETY: as above. After a failed step, reset reports the same error again.
        unsafe {
            ffi::sqlite3_reset(self.stmt.as_ptr());
            ffi::sqlite3_clear_bindings(self.stmt.as_ptr());
        }
        outcome
    }

    /// How many times SQLite has compiled this statement again since it was first compiled
    /// (after a schema change, say).
    #[cfg(test)]
    pub(super) fn recompiled(&self) -> i32 {
        // SAFETY: a live statement of this connection.
        unsafe { ffi::sqlite3_stmt_status(self.stmt.as_ptr(), ffi::SQLITE_STMTSTATUS_REPREPARE, 0) }
    }

    /// How many times the statement has run.
    #[cfg(test)]
    pub(super) fn runs(&self) -> i32 {
        // SAFETY: a live statement of this connection.
        unsafe { ffi::sqlite3_stmt_status(self.stmt.as_ptr(), ffi::SQLITE_STMTSTATUS_RUN, 0) }
    }

    /// `Ok` for SQLite's `SQLITE_OK`, else the connection's error.
    fn check(&self, rc: c_int) -> rusqlite::Result<()> {
        match rc {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(self.conn.error(rc)),
        }
    }
}

/// A parameter's number as SQLite takes it (a statement has at most 32,766).
fn index(at: usize) -> c_int {
    c_int::try_from(at).unwrap_or(c_int::MAX)
}
