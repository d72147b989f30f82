//! One suite of checkpoint-saver behaviours, run against every saver: `MemorySaver`,
//! `SqliteSaver` (feature `sqlite`) and `PostgresSaver` (feature `postgres`). The PostgreSQL
//! tests are ignored unless asked for (`-- --include-ignored`, as `.ci/run` does), and then need
//! `WEIR_POSTGRES_URL` to name a database, e.g. `postgres://postgres@127.0.0.1:5432/test`:
//! asked for without one, they fail.
//! Then the behaviours particular to one saver: files, schema versions, several processes.

mod behaviours;
mod records;

use behaviours::*;
use records::*;

use std::sync::Arc;
use weir_runtime::checkpoint::{CheckpointRecord, Checkpointer, Loaded, MemorySaver, PendingWrite, Usage};

/// Generates one test per behaviour for a saver, given an async constructor of a [`Harness`].
/// `ignore = "why"` marks every test of the saver ignored, for a saver that needs a server:
/// `cargo test` lists them as ignored, and `-- --include-ignored` runs them.
macro_rules! suite {
    ($saver:ident: $harness:path $(, ignore = $why:literal)?) => {
        mod $saver {
            suite!(@tests $harness $(, $why)?;
                put_then_get_latest_and_by_id
                list_is_newest_first_with_limit_and_before
                a_long_history_is_found_by_id_and_listed_from_anywhere
                unchanged_channel_points_at_an_older_blob_and_is_not_rewritten
                delta_chains_rebuild_in_order_and_forks_do_not_mix
                get_holding_returns_the_links_after_the_blob_held
                invalid_records_are_refused_and_store_nothing
                put_many_stores_a_run_of_heads_all_or_none
                put_many_of_a_long_run_stores_each_record_and_names_a_repeated_id
                put_writes_replaces_a_tasks_writes_and_orders_by_path_task_idx
                delete_thread_removes_every_namespace_and_nothing_else
                a_put_after_its_thread_was_deleted_finds_no_head
                two_writers_with_one_expected_head_exactly_one_wins
                many_threads_put_concurrently_keep_complete_ordered_histories
                history_is_each_listed_checkpoint_as_get_reads_it
                copy_thread_copies_every_namespace_with_its_writes_and_the_copy_lives_apart
                copy_thread_refuses_a_taken_target_a_missing_source_and_itself
            );
        }
    };
    (@tests $harness:path; $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let harness = $harness().await;
                super::$test(harness.saver.clone()).await;
            }
        )*
    };
    (@tests $harness:path, $why:literal; $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn $test() {
                let harness = $harness().await;
                super::$test(harness.saver.clone()).await;
            }
        )*
    };
}

/// A saver under test, and whatever must live as long (and be cleaned up after) it.
struct Harness {
    saver: Arc<dyn Checkpointer>,
    _cleanup: Option<Box<dyn Send>>,
}

async fn memory_harness() -> Harness {
    Harness {
        saver: Arc::new(MemorySaver::new()),
        _cleanup: None,
    }
}

suite!(memory: super::memory_harness);

/// A [`MemorySaver`] behind the trait's defaults (`put`, `history`, `copy_thread`,
/// `get_holding`): what a saver of another crate gets, which the whole suite runs against too.
#[derive(Debug)]
struct Defaults(MemorySaver);

type Saved<'a, T> = futures::future::BoxFuture<'a, Result<T, weir_runtime::checkpoint::SaverError>>;

impl Checkpointer for Defaults {
    fn put_many<'a>(&'a self, records: Vec<CheckpointRecord>, expected: Option<&'a str>) -> Saved<'a, ()> {
        self.0.put_many(records, expected)
    }
    fn get<'a>(&'a self, thread: &'a str, ns: &'a str, id: Option<&'a str>) -> Saved<'a, Option<Loaded>> {
        self.0.get(thread, ns, id)
    }
    fn head<'a>(&'a self, thread: &'a str, ns: &'a str) -> Saved<'a, Option<String>> {
        self.0.head(thread, ns)
    }
    fn list<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> Saved<'a, Vec<CheckpointRecord>> {
        self.0.list(thread, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        checkpoint: &'a str,
        task: &'a str,
        writes: Vec<PendingWrite>,
    ) -> Saved<'a, ()> {
        self.0.put_writes(thread, ns, checkpoint, task, writes)
    }
    fn delete_thread<'a>(&'a self, thread: &'a str) -> Saved<'a, ()> {
        self.0.delete_thread(thread)
    }
    fn threads(&self) -> Saved<'_, Vec<String>> {
        self.0.threads()
    }
    fn usage<'a>(&'a self, thread: &'a str) -> Saved<'a, Usage> {
        self.0.usage(thread)
    }
    fn namespaces<'a>(&'a self, thread: &'a str) -> Saved<'a, Vec<String>> {
        self.0.namespaces(thread)
    }
}

async fn defaults_harness() -> Harness {
    Harness {
        saver: Arc::new(Defaults(MemorySaver::new())),
        _cleanup: None,
    }
}

suite!(defaults: super::defaults_harness);

// ---------------------------------------------------------------------------------------------
// SQLite

#[cfg(feature = "sqlite")]
mod sqlite_support {
    use std::path::{Path, PathBuf};
    use weir_runtime::checkpoint::new_checkpoint_id;

    /// A directory of its own under the system's temp directory, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new() -> Self {
            let dir = std::env::temp_dir().join(format!("weir-savers-{}-{}", std::process::id(), new_checkpoint_id()));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite_harness() -> Harness {
    let dir = sqlite_support::TempDir::new();
    let saver = weir_runtime::checkpoint::SqliteSaver::open(dir.path().join("weir.db")).unwrap();
    Harness {
        saver: Arc::new(saver),
        _cleanup: Some(Box::new(dir)),
    }
}

#[cfg(feature = "sqlite")]
suite!(sqlite: super::sqlite_harness);

#[cfg(feature = "sqlite")]
#[cfg(feature = "sqlite")]
mod sqlite_file;

// ---------------------------------------------------------------------------------------------
// PostgreSQL

#[cfg(feature = "postgres")]
async fn postgres_harness() -> Harness {
    let schema = weir_test_support::Schema::fresh("weir_test");
    let saver = weir_runtime::checkpoint::PostgresSaver::options()
        .schema(schema.name.clone())
        .connections(8)
        .connect(&schema.url)
        .await
        .unwrap();
    Harness {
        saver: Arc::new(saver),
        _cleanup: Some(Box::new(schema)),
    }
}

#[cfg(feature = "postgres")]
suite!(postgres: super::postgres_harness, ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored");

#[cfg(feature = "postgres")]
mod postgres_schema;
