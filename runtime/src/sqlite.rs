//! What every SQLite file weir keeps (checkpoints, the store, the node cache, the server's
//! tables) does the same way when it is opened: here, once.

use rusqlite::{Connection, ErrorCode};
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
