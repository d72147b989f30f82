//! The savers under test, and the temporary files and schemas they live in. Also used by
//! `tests/load.rs` and `tests/approval.rs` (through `#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use weir::checkpoint::{new_checkpoint_id, Checkpointer, MemorySaver, SqliteSaver};

/// A saver under test, and whatever must live as long as it (and be cleaned up after it).
pub struct Harness {
    pub saver: Arc<dyn Checkpointer>,
    _cleanup: Option<Box<dyn Send>>,
}

pub async fn memory() -> Harness {
    Harness {
        saver: Arc::new(MemorySaver::new()),
        _cleanup: None,
    }
}

pub async fn sqlite() -> Harness {
    let dir = TempDir::new("ckpt");
    let saver = SqliteSaver::open(dir.path().join("weir.db")).unwrap();
    Harness {
        saver: Arc::new(saver),
        _cleanup: Some(Box::new(dir)),
    }
}

#[cfg(feature = "postgres")]
pub async fn postgres() -> Harness {
    let schema = Schema::fresh("weir_test");
    let saver = weir::checkpoint::PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    Harness {
        saver: Arc::new(saver),
        _cleanup: Some(Box::new(schema)),
    }
}

/// A thread id of its own.
pub fn thread(name: &str) -> String {
    format!("{name}-{}", &new_checkpoint_id()[12..])
}

/// A directory of its own under the system's temp directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("weir-{what}-{}-{}", std::process::id(), new_checkpoint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub use weir_test_support::Schema;
