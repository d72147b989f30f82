//! [`MemorySaver`](super::MemorySaver)'s prune: under the store's lock, the plan of
//! [`retention`](crate::checkpoint::retention) applied to a thread's namespaces.

use super::Namespace;
use crate::checkpoint::retention::{needed, plan, Plan};
use crate::checkpoint::{Loaded, Pruned, Retention, SaverError, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// The thread's namespaces, by name.
type Thread = BTreeMap<String, Namespace>;

/// The answer to a read of checkpoint `id`, which is not stored: an error if the thread was
/// pruned through it, else nothing.
pub(super) fn not_found(
    thread_id: &str,
    ns: &str,
    id: &str,
    thread: Option<&Thread>,
) -> Result<Option<Loaded>, SaverError> {
    let through = thread
        .and_then(|t| t.get(""))
        .and_then(|root| root.pruned_through.as_deref());
    match through {
        Some(through) if id <= through => Err(SaverError::pruned(thread_id, ns, id, through)),
        _ => Ok(None),
    }
}

/// Applies `policy` to `thread_id` in `store`.
pub(super) fn prune(
    store: &mut BTreeMap<String, Thread>,
    thread_id: &str,
    policy: &Retention,
) -> Result<Pruned, SaverError> {
    let Some(thread) = store.get_mut(thread_id) else {
        return Ok(Pruned::default());
    };
    let root: Vec<_> = thread
        .get("")
        .map(|root| root.checkpoints.iter().map(|r| (r.id.clone(), r.created_at)).collect())
        .unwrap_or_default();
    match plan(&root, policy, Timestamp::now()) {
        Plan::Keep => Ok(Pruned::default()),
        Plan::Delete => {
            let mut out = Pruned {
                threads_deleted: 1,
                ..Pruned::default()
            };
            for space in thread.values() {
                out.checkpoints += space.checkpoints.len() as u64;
                out.pending_writes += writes_through(space, None);
            }
            if !policy.dry_run {
                store.remove(thread_id);
            }
            Ok(out)
        }
        Plan::Through(through) => {
            let mut out = Pruned {
                threads_pruned: 1,
                ..Pruned::default()
            };
            let mut plans = Vec::with_capacity(thread.len());
            for (ns, space) in thread.iter() {
                let records = &space.checkpoints;
                let before = records.count_before(&through);
                let gone = before + usize::from(before < records.len() && *records.at(before).id == *through);
                let kept = (gone..records.len()).map(|k| records.at(k));
                let keep = needed(kept, &through, |at, channel| {
                    Ok(space
                        .blob(at, channel)
                        .map(|b| b.delta_of.as_deref().map(str::to_owned)))
                })?;
                out.checkpoints += gone as u64;
                out.pending_writes += writes_through(space, Some(&through));
                plans.push((ns.clone(), gone, keep));
            }
            if !policy.dry_run {
                for (ns, gone, keep) in plans {
                    let space = thread.get_mut(&ns).expect("planned from the thread");
                    apply(space, gone, &through, keep);
                }
                thread.retain(|_, space| space.checkpoints.len() > 0);
                if let Some(root) = thread.get_mut("") {
                    root.pruned_through = Some(through);
                }
            }
            Ok(out)
        }
    }
}

/// How many pending writes of `space` are against checkpoints up to `through` (all: `None`).
fn writes_through(space: &Namespace, through: Option<&str>) -> u64 {
    let writes = space.writes.iter();
    let gone = writes.filter(|(id, _)| through.is_none_or(|t| id.as_str() <= t));
    gone.map(|(_, w)| w.len() as u64).sum()
}

/// Removes the first `gone` records of `space` (ids up to `through`) and their writes, keeping
/// the blobs in `keep` among the retained ones.
fn apply(space: &mut Namespace, gone: usize, through: &str, keep: BTreeSet<(String, String)>) {
    let retained: BTreeMap<(String, String), _> = keep
        .into_iter()
        .filter_map(|key| {
            let blob = space.blob(&key.0, &key.1)?.clone();
            Some((key, blob))
        })
        .collect();
    space.retained = retained;
    space.checkpoints.drop_first(gone);
    space.writes.retain(|id, _| id.as_str() > through);
}
