//! The file's owner: an embedded server's tables belong to one process at a time. Their run
//! queue is that process's own (its wakes, its claims, and at its start the requeue of every run
//! left running, whose worker died with the process before), so a second process serving the
//! same file would take the first one's running runs back as it starts, and run them beside it.
//! `<file>.lock`, beside the file, holds an OS lock for as long as the tables are open, which
//! the OS drops when the process ends however it ends, and the id of the process that holds it.

use crate::db::DbError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock on a file's server tables, held while this lives.
#[derive(Debug)]
pub(super) struct Owner {
    _locked: File,
}

impl Owner {
    /// Takes the lock on `path`'s server tables, or names the process that holds it.
    pub(super) fn take(path: &Path) -> Result<Self, DbError> {
        let lock_path = lock_path(path);
        let failed = |e: std::io::Error| {
            DbError::Backend(format!(
                "cannot take `{}`, the lock on the server tables of `{}`: {e}",
                lock_path.display(),
                path.display()
            ))
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => String::new(),
                    pid => format!(" (process {pid})"),
                };
                return Err(DbError::Backend(format!(
                    "`{}` is served by another process{holder}: an embedded server's tables belong to \
                     one process at a time. Stop that one, or use another file; to serve one \
                     deployment from several processes, scale out on PostgreSQL and Redis",
                    path.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(failed(e)),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| write!(file, "{}", std::process::id()))
            .map_err(failed)?;
        Ok(Owner { _locked: file })
    }
}

/// `<path>.lock`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}
