//! The in-memory saver's own tests: what a run's record stored in place must hold to.

use super::*;
use crate::checkpoint::{ChannelRef, Source, Timestamp};
use futures::executor::block_on;

/// Checkpoint `id` of thread `t` after `parent`, with channel `a` at `version`: its blob
/// stored here (`bytes`), or under the earlier checkpoint `at`.
fn record(id: &str, parent: Option<&str>, version: u64, value: Result<&str, &str>) -> CheckpointRecord {
    let (at, blobs) = match value {
        Ok(bytes) => (
            id,
            vec![Blob {
                channel: "a".into(),
                delta_of: None,
                bytes: bytes.into(),
            }],
        ),
        Err(at) => (at, vec![]),
    };
    CheckpointRecord {
        thread_id: "t".into(),
        ns: "".into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step: version as i64 - 2,
        source: Source::Loop,
        writes: Arc::default(),
        metadata: BTreeMap::new(),
        created_at: Timestamp::from_unix_micros(version),
        channels: vec![ChannelRef {
            channel: "a".into(),
            version,
            blob: Some(at.into()),
        }],
        body: b"{}".to_vec(),
        blobs,
    }
}

fn put_in_place(saver: &MemorySaver, record: CheckpointRecord, expected: Option<&str>) -> Result<(), SaverError> {
    match saver.try_put_in_place(record, expected, MadeByRun::new()) {
        Ok(stored) => stored,
        Err(back) => panic!("the memory saver handed {} back", back.id),
    }
}

/// A run's records are stored in place, as `put` stores them; what depends on the store is
/// still checked (the head, the order of ids, the blobs a record builds on), and a refused
/// record leaves the store as it was.
#[test]
fn a_record_a_run_made_is_stored_in_place_and_checked_against_the_store() {
    let saver = MemorySaver::new();
    put_in_place(&saver, record("cp-1", None, 1, Ok("1")), None).unwrap();
    let unchanged = record("cp-2", Some("cp-1"), 1, Err("cp-1"));
    put_in_place(&saver, unchanged.clone(), Some("cp-1")).unwrap();
    let loaded = block_on(saver.get("t", "", None)).unwrap().unwrap();
    assert_eq!(
        loaded.record,
        CheckpointRecord {
            blobs: vec![],
            ..unchanged
        }
    );
    assert_eq!(loaded.values, [("a".to_owned(), vec![b"1".to_vec()])]);

    let moved = put_in_place(&saver, record("cp-3", Some("cp-1"), 2, Ok("2")), Some("cp-1")).unwrap_err();
    assert!(moved.is_conflict(), "{moved}");
    let older = put_in_place(&saver, record("cp-0", Some("cp-2"), 2, Ok("2")), Some("cp-2")).unwrap_err();
    assert!(
        older.is_invalid() && older.to_string().contains("`cp-0` is not newer than `cp-2`"),
        "{older}"
    );
    let unstored = put_in_place(&saver, record("cp-3", Some("cp-2"), 1, Err("cp-2")), Some("cp-2")).unwrap_err();
    assert!(
        unstored.is_invalid() && unstored.to_string().contains("which stores no value"),
        "{unstored}"
    );
    assert_eq!(block_on(saver.head("t", "")).unwrap().as_deref(), Some("cp-2"));
    assert_eq!(block_on(saver.usage("t")).unwrap().checkpoints, 2);
}

/// What a run vouches for is not checked again in a release build, but a debug build (the
/// tests') still checks it: a run that made a record that does not hold together fails there.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "a run made records that do not hold together")]
fn a_run_made_record_that_does_not_hold_together_fails_a_debug_build() {
    let blobless = record("cp-1", None, 1, Err("cp-1"));
    let _ = put_in_place(&MemorySaver::new(), blobless, None);
}
