//! The disk filling up mid-run: a graph whose checkpoints grow runs on a SQLite file on a 1 MB
//! tmpfs until a write fails. The run ends with an error that says the disk is full (no panic, no
//! hang); the file is still a readable database whose history is whole up to the last committed
//! step; once there is room again the thread resumes, on the same saver or a new one, to the
//! state of a run that never ran out of room.
//!
//! Mounting a tmpfs needs root: the test is ignored for a plain `cargo test` and `.ci/run` runs
//! it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use weir::checkpoint::{new_checkpoint_id, Checkpointer, MemorySaver, SqliteSaver};
use weir::prelude::*;
use weir::NodeRef;

const STEPS: usize = 150;

#[derive(State, Clone, Debug, Default, PartialEq)]
struct Pages {
    #[reducer(append)]
    pages: Vec<String>,
}

/// START -> write, looping until `STEPS` pages of 16 KB each (one step's checkpoint stores one).
fn graph(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Pages> {
    let mut g = GraphBuilder::<Pages>::new();
    let write = g.add_node("write", |s: &Pages| {
        let n = s.pages.len();
        PagesUpdate::default().pages(vec![format!("{n:05}").repeat(16 * 1024 / 5)])
    });
    let again = write.id();
    g.add_edge(START, &write);
    g.add_router(
        &write,
        move |s: &Pages| {
            if s.pages.len() < STEPS {
                Goto::from(again)
            } else {
                Goto::End
            }
        },
        [NodeRef::from(again), NodeRef::End],
    );
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("weir-full-{}", new_checkpoint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "mounting a {size} tmpfs at {} failed: this test needs root",
            dir.display()
        );
        Tmpfs(dir)
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remounting {} failed", self.0.display());
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // A saver's writer thread may still be closing the file: a few tries.
        for _ in 0..50 {
            let unmounted = Command::new("umount")
                .arg(&self.0)
                .stderr(std::process::Stdio::null())
                .status();
            if unmounted.is_ok_and(|s| s.success()) {
                let _ = std::fs::remove_dir(&self.0);
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("{} stays mounted: it is still in use", self.0.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a 1 MB tmpfs: needs root, run with --include-ignored (.ci/run does)"]
async fn a_full_disk_fails_the_run_and_leaves_a_readable_database_that_resumes_once_there_is_room() {
    let fs = Tmpfs::mount("1m");
    let db = fs.path().join("weir.db");
    let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(&db).unwrap());
    let app = graph(saver.clone());
    let cfg = RunConfig::thread("pages")
        .recursion_limit(STEPS + 10)
        .durability(Durability::Sync);

    let err = app.invoke(PagesUpdate::default(), &cfg).await.unwrap_err().to_string();
    assert!(
        err.contains("database or disk is full"),
        "the error says the disk is full: {err}"
    );

    // A new saver reads the file: the history is whole up to the last committed step.
    let reader = graph(Arc::new(SqliteSaver::open(&db).unwrap()));
    let history = reader.get_state_history(&cfg, None).await.unwrap();
    let committed = history[0].values.pages.len();
    assert!(
        committed > 0 && committed < STEPS,
        "{committed} pages committed before the disk was full"
    );
    for pair in history.windows(2) {
        assert_eq!(pair[0].parent_id.as_deref(), Some(pair[1].checkpoint_id.as_str()));
        // One page a step after the start node's, which takes the (empty) input.
        let added = usize::from(pair[1].step >= 0);
        assert_eq!(
            pair[0].values.pages.len(),
            pair[1].values.pages.len() + added,
            "one page a step"
        );
    }

    // Room again: the same saver resumes the thread to the end.
    fs.resize("64m");
    let out = app.resume(&cfg).await.unwrap();
    let expected = graph(Arc::new(MemorySaver::new()))
        .invoke(
            PagesUpdate::default(),
            &RunConfig::thread("reference").recursion_limit(STEPS + 10),
        )
        .await
        .unwrap();
    assert_eq!(out.state(), &expected);
    let st = reader.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.pages.len(), STEPS);
    println!("the disk was full after {committed} of {STEPS} steps: {err}");
    drop((app, reader, saver));
}
