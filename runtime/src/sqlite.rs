//! What every SQLite file weir keeps (checkpoints, the store, the node cache, the server's
//! tables) does the same way, here once: turning its write-ahead log on when it is opened, and
//! taking turns with the process's other writers to the file.

use rusqlite::{Connection, ErrorCode};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Turns the file's write-ahead log on and answers the journal mode it is in after (`wal`, or
/// `memory` for an in-memory database).
///
/// SQLite answers "database is locked" to this pragma at once, without waiting out the busy
/// timeout, while another connection is setting the same new file up: processes that open one
/// file at the same moment (a server and a CLI, a test and its child) would fail at random.
/// This tries again, pausing a little longer each time, until `wait` has passed.
///
/// # Errors
/// SQLite's, once `wait` has passed or when the failure is not a busy database.
pub fn turn_wal_on(conn: &Connection, wait: Duration) -> rusqlite::Result<String> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            answer => return answer,
        }
    }
}

/// A lock the writers of one process take around each write transaction on one file, whatever
/// connection they write through (the checkpointer's, the store's, the server's tables').
///
/// Two connections to one file that both begin a write at the same moment would otherwise meet
/// in SQLite's own lock, where the one that comes second sleeps a whole millisecond at least
/// (then 2, 5, 10 …) before it looks again, though a write transaction holds the lock for tens
/// of microseconds: under load the writers of one process spent more time asleep than writing.
/// Waiting here, the second goes on as soon as the first commits. Writers in other processes
/// still meet in SQLite's lock and its busy timeout.
#[derive(Debug, Clone)]
pub struct WriteGate(Arc<Mutex<()>>);

impl WriteGate {
    /// The gate of the database file at `path` (an existing file: its canonical path names
    /// it); a gate of its own when the path names no file (an in-memory database).
    pub fn for_file(path: &Path) -> Self {
        static GATES: Mutex<Option<HashMap<PathBuf, Weak<Mutex<()>>>>> = Mutex::new(None);
        let Ok(file) = path.canonicalize() else {
            return Self(Arc::default());
        };
        let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
        let gates = gates.get_or_insert_with(HashMap::new);
        if let Some(gate) = gates.get(&file).and_then(Weak::upgrade) {
            return Self(gate);
        }
        // The files no writer holds any more are forgotten as another is added.
        gates.retain(|_, gate| gate.strong_count() > 0);
        let gate = Arc::default();
        gates.insert(file, Arc::downgrade(&gate));
        Self(gate)
    }

    /// Holds the gate until the guard is dropped: from before `BEGIN` to after `COMMIT` (or
    /// `ROLLBACK`).
    pub fn enter(&self) -> MutexGuard<'_, ()> {
        // The lock guards no data: a writer that panicked holding it left nothing half made.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_has_one_gate_however_its_path_is_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
        drop(Connection::open(&a).unwrap());
        drop(Connection::open(&b).unwrap());
        let gate = WriteGate::for_file(&a);
        let held = gate.enter();
        // The same file through `.` and a link: the same gate, taken.
        let link = dir.path().join("link.db");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let same = WriteGate::for_file(&dir.path().join(".").join("a.db"));
        assert!(Arc::ptr_eq(&gate.0, &WriteGate::for_file(&link).0));
        assert!(Arc::ptr_eq(&gate.0, &same.0));
        assert!(same.0.try_lock().is_err());
        // Another file, and a path that names no file (an in-memory database): gates of their own.
        assert!(WriteGate::for_file(&b).0.try_lock().is_ok());
        assert!(WriteGate::for_file(Path::new("")).0.try_lock().is_ok());
        drop(held);
        assert!(same.0.try_lock().is_ok());
    }

    /// With no busy timeout at all, SQLite fails a write that meets another's lock at once:
    /// writers of one process that hold the gate never meet there.
    #[test]
    fn writers_holding_the_gate_never_meet_in_sqlites_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).unwrap();
        turn_wal_on(&conn, Duration::from_secs(5)).unwrap();
        conn.execute_batch("CREATE TABLE t (writer INTEGER, n INTEGER)")
            .unwrap();
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut conn = Connection::open(&path).unwrap();
                    conn.busy_timeout(Duration::ZERO).unwrap();
                    let gate = WriteGate::for_file(&path);
                    for n in 0..200 {
                        let _held = gate.enter();
                        let tx = conn
                            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                            .unwrap();
                        tx.execute("INSERT INTO t VALUES (?1, ?2)", [w, n]).unwrap();
                        tx.commit().unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let rows: i64 = conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 800);
    }
}
