//! The SQLite saver's prunes with what its write connection remembers of the retained blobs
//! (`retained.rs`): they keep exactly the blobs a prune that walks every chain keeps, and read
//! only the links stored since the last prune.

use super::*;
use crate::checkpoint::{Blob, ChannelRef, Retention, Source, Timestamp};
use std::sync::atomic::Ordering;

/// A directory of its own, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("weir-sqlite-prune-{}", crate::checkpoint::new_checkpoint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn id(step: u64) -> String {
    format!("cp-{step:05}")
}

/// A thread whose channel `m` is a list stored as a delta a step and whole every 40th, and whose
/// channel `c` is stored once.
struct Chat {
    step: u64,
    head: Option<String>,
    /// Where each step stored `m`.
    m_at: Vec<String>,
}

impl Chat {
    /// The next checkpoint; its `m` extends the one of `steps_back` steps ago (1: the head's).
    fn next(&mut self, steps_back: usize) -> CheckpointRecord {
        self.step += 1;
        let at = id(self.step);
        let extends = self.m_at.len().checked_sub(steps_back).map(|k| self.m_at[k].clone());
        let delta_of = extends.filter(|_| self.step % 40 != 1);
        let mut blobs = vec![Blob {
            channel: "m".into(),
            bytes: format!("m{}", self.step).into_bytes(),
            delta_of: delta_of.map(Into::into),
        }];
        if self.step == 1 {
            blobs.push(Blob {
                channel: "c".into(),
                delta_of: None,
                bytes: b"config".to_vec(),
            });
        }
        let channel = |name: &str, blob: &str| ChannelRef {
            channel: name.into(),
            version: self.step,
            blob: Some(blob.into()),
        };
        let record = CheckpointRecord {
            thread_id: "t".into(),
            ns: "".into(),
            id: at.as_str().into(),
            parent_id: self.head.as_deref().map(Into::into),
            step: self.step as i64,
            source: Source::Loop,
            writes: Arc::default(),
            metadata: Default::default(),
            created_at: Timestamp::now(),
            channels: vec![channel("c", &id(1)), channel("m", &at)],
            body: b"{}".to_vec(),
            blobs,
        };
        self.m_at.push(at.clone());
        self.head = Some(at);
        record
    }
}

/// The retained blobs of a file, in order.
fn retained(db: &Path) -> Vec<(String, String, Option<String>, Vec<u8>)> {
    let conn = Connection::open(db).unwrap();
    let mut rows = conn
        .prepare("SELECT checkpoint_id, channel, delta_of, bytes FROM retained_blobs ORDER BY checkpoint_id, channel")
        .unwrap();
    rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn links_read(saver: &SqliteSaver) -> u64 {
    saver.inner.writer.stats().links_read.load(Ordering::Relaxed)
}

/// Two files get the same thread and the same prunes; before each prune of the second, another
/// connection writes to it, so its saver forgets what it retained and walks every chain. The
/// thread forks twice (a checkpoint extends an older one's list, as after time travel), and its
/// list is rewritten whole every 40 steps, so some prunes leave chains no kept checkpoint needs.
#[tokio::test]
async fn a_prune_walks_only_the_links_stored_since_the_last_and_keeps_what_a_whole_walk_keeps() {
    let dir = TempDir::new();
    let (remembers, forgets) = (dir.0.join("remembers.db"), dir.0.join("forgets.db"));
    let a = SqliteSaver::open(&remembers).unwrap();
    let b = SqliteSaver::open(&forgets).unwrap();
    let other = Connection::open(&forgets).unwrap();
    let mut chat = Chat {
        step: 0,
        head: None,
        m_at: Vec::new(),
    };
    let policy = Retention::new().keep_last(6);
    let (mut most_read, mut most_read_walking_all) = (0, 0);
    for step in 1..=300u64 {
        let steps_back = if step == 150 || step == 233 { 3 } else { 1 };
        let r = chat.next(steps_back);
        let head = r.parent_id.clone();
        a.put(r.clone(), head.as_deref()).await.unwrap();
        b.put(r, head.as_deref()).await.unwrap();
        if step % 5 == 0 {
            other.pragma_update(None, "user_version", step as i64).unwrap();
            let (read_a, read_b) = (links_read(&a), links_read(&b));
            let pruned = a.prune("t", &policy).await.unwrap();
            assert_eq!(b.prune("t", &policy).await.unwrap(), pruned);
            let (read_a, read_b) = (links_read(&a) - read_a, links_read(&b) - read_b);
            if step > 5 {
                most_read = most_read.max(read_a);
            }
            most_read_walking_all = most_read_walking_all.max(read_b);
            assert_eq!(
                retained(&remembers),
                retained(&forgets),
                "after the prune at step {step}"
            );
            // Every kept checkpoint loads whole.
            for kept in step.saturating_sub(5).max(1)..=step {
                let loaded = a.get("t", "", Some(&id(kept))).await.unwrap();
                let loaded = loaded.unwrap_or_else(|| panic!("checkpoint {kept} is kept"));
                assert_eq!(loaded.values.len(), 2, "checkpoint {kept}: {:?}", loaded.values);
            }
        }
    }
    assert_eq!(a.usage("t").await.unwrap(), b.usage("t").await.unwrap());
    // The kept checkpoints' links (6 of `m`, 6 of `c`'s single blob) and the 5 pruned since, at
    // most; a whole walk reads the chain, up to 40 links.
    assert!(most_read <= 2 * (6 + 5), "a prune read {most_read} links");
    assert!(
        most_read_walking_all >= 30,
        "a whole walk read at most {most_read_walking_all} links"
    );
}
