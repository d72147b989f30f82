//! Retention: the policy a prune applies ([`Retention`]), what it reports ([`Pruned`]), and the
//! decisions every saver's prune shares — which checkpoints of a thread go, and which blobs
//! stored under them the kept checkpoints still need.
//!
//! A prune of a thread takes its root namespace's checkpoints in id order and finds the greatest
//! id the policy drops (never the newest): every checkpoint of the thread with an id up to it,
//! in every namespace (ids compare in creation order across namespaces, so a subgraph's
//! checkpoints go with the steps of its parent that ran them), goes with its pending writes. The
//! pruned checkpoints are always the oldest part of a thread, and the thread remembers the id
//! it was pruned through, so that asking for one of them is an error saying so
//! ([`SaverError::is_pruned`]) rather than "no such checkpoint".
//!
//! Storage is O(delta): a kept checkpoint may point at a blob stored under a pruned one (an
//! unchanged channel), or hold a delta whose chain runs through pruned ones. Those blobs stay
//! (in a saver's table of retained blobs, or its blob table), every other blob of a pruned
//! checkpoint goes; the kept checkpoints load exactly as before. Chains are short (a run writes
//! a whole value once its deltas outgrow the base), so what stays is at most a chain per channel.

use super::{CheckpointRecord, SaverError, Timestamp};
use std::collections::BTreeSet;
use std::ops::AddAssign;
use std::time::Duration;

/// What a prune keeps: the last `keep_last` checkpoints of a thread, those younger than
/// `max_age`, and threads updated within `thread_ttl`. A checkpoint goes when either of the
/// first two rules drops it; the newest checkpoint of a thread always stays (only the thread
/// TTL deletes a whole thread). A policy with no rule set prunes nothing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use weir_runtime::checkpoint::Retention;
///
/// let policy = Retention::new().keep_last(100).max_age(Duration::from_secs(30 * 86_400));
/// assert_eq!(policy.keep_last, Some(100));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep at most this many checkpoints of each thread's root graph (the newest; at least 1).
    pub keep_last: Option<usize>,
    /// Drop checkpoints made longer ago than this.
    pub max_age: Option<Duration>,
    /// Delete a whole thread whose newest checkpoint was made longer ago than this.
    pub thread_ttl: Option<Duration>,
    /// Count what would go, and remove nothing.
    pub dry_run: bool,
}

impl Retention {
    /// A policy that keeps everything; set its rules with the other methods.
    pub fn new() -> Self {
        Self::default()
    }
    /// Keeps the last `n` checkpoints of a thread (`0` counts as 1: the newest always stays).
    pub fn keep_last(mut self, n: usize) -> Self {
        self.keep_last = Some(n);
        self
    }
    /// Drops checkpoints older than `age`.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }
    /// Deletes threads not updated for `ttl`.
    pub fn thread_ttl(mut self, ttl: Duration) -> Self {
        self.thread_ttl = Some(ttl);
        self
    }
    /// Counts what the policy would remove, removing nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }
}

/// What a prune removed (or, in a dry run, would remove).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Threads deleted whole by the thread TTL.
    pub threads_deleted: u64,
    /// Threads that lost checkpoints but stay.
    pub threads_pruned: u64,
    /// Checkpoints removed, all namespaces together (those of deleted threads too).
    pub checkpoints: u64,
    /// Pending writes removed.
    pub pending_writes: u64,
}

impl AddAssign for Pruned {
    fn add_assign(&mut self, other: Self) {
        self.threads_deleted += other.threads_deleted;
        self.threads_pruned += other.threads_pruned;
        self.checkpoints += other.checkpoints;
        self.pending_writes += other.pending_writes;
    }
}

/// What a prune does to one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Nothing to remove.
    Keep,
    /// The thread outlived its TTL: delete it whole.
    Delete,
    /// Remove every checkpoint with an id up to this one.
    Through(String),
}

/// What `policy` does, `now`, to a thread whose root namespace holds `root`: `(id, created_at)`
/// in id order, oldest first. A thread without root checkpoints is kept.
pub(crate) fn plan<I: AsRef<str>>(root: &[(I, Timestamp)], policy: &Retention, now: Timestamp) -> Plan {
    let Some((_, newest)) = root.last() else {
        return Plan::Keep;
    };
    let before = |age: Duration| {
        now.unix_micros()
            .saturating_sub(age.as_micros().min(u64::MAX as u128) as u64)
    };
    if let Some(ttl) = policy.thread_ttl {
        if newest.unix_micros() < before(ttl) {
            return Plan::Delete;
        }
    }
    let n = root.len();
    let by_count = policy.keep_last.map_or(0, |k| n.saturating_sub(k.max(1)));
    let cutoff = policy.max_age.map(before);
    let dropped = root[..n - 1]
        .iter()
        .enumerate()
        .filter(|(i, (_, at))| *i < by_count || cutoff.is_some_and(|c| at.unix_micros() < c))
        .map(|(_, (id, _))| id.as_ref())
        .last();
    match dropped {
        Some(id) => Plan::Through(id.to_owned()),
        None => Plan::Keep,
    }
}

/// The blobs stored under checkpoints with ids up to `through` that the `kept` records of one
/// namespace still need, as `(checkpoint id, channel)`: those their channels point at, and the
/// links of the delta chains that rebuild them. `delta_of(at, channel)` says what the blob
/// stored under `at` for `channel` extends (`Some(None)`: a whole value; `None`: no such blob,
/// which is corruption).
pub(crate) fn needed<'r>(
    kept: impl IntoIterator<Item = &'r CheckpointRecord>,
    through: &str,
    delta_of: impl FnMut(&str, &str) -> Result<Option<Option<String>>, SaverError>,
) -> Result<BTreeSet<(String, String)>, SaverError> {
    needed_until(kept, through, |_, _| false, delta_of).map(|walk| walk.needed)
}

/// What [`needed_until`] found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// The blobs walked, with ids up to `through`.
    pub(crate) needed: BTreeSet<(String, String)>,
    /// The blobs `known` holds that the walks reached.
    pub(crate) reached: BTreeSet<(String, String)>,
}

/// [`needed`], with walks that stop at the blobs `known(at, channel)` holds, which are then
/// counted as reached rather than walked: a saver that remembers the blobs it kept at its last
/// prune (each with its whole chain) walks only what was stored since.
pub(crate) fn needed_until<'r>(
    kept: impl IntoIterator<Item = &'r CheckpointRecord>,
    through: &str,
    known: impl Fn(&str, &str) -> bool,
    mut delta_of: impl FnMut(&str, &str) -> Result<Option<Option<String>>, SaverError>,
) -> Result<Walk, SaverError> {
    let mut walk = Walk::default();
    let seen = &mut walk.needed;
    for record in kept {
        for c in &record.channels {
            let Some(mut at) = c.blob.as_deref().map(str::to_owned) else {
                continue;
            };
            loop {
                if known(&at, &c.channel) {
                    walk.reached.insert((at, c.channel.to_string()));
                    break;
                }
                if !seen.insert((at.clone(), c.channel.to_string())) {
                    break;
                }
                match delta_of(&at, &c.channel)? {
                    Some(Some(base)) => at = base,
                    Some(None) => break,
                    None => {
                        let detail = format!(
                            "the value of channel `{}` needs the blob stored under checkpoint `{at}`, which is missing",
                            c.channel
                        );
                        return Err(SaverError::corrupt(&record.thread_id, &record.id, detail));
                    }
                }
            }
        }
    }
    seen.retain(|(at, _)| at.as_str() <= through);
    Ok(walk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Timestamp {
        Timestamp::from_unix_micros(s * 1_000_000)
    }

    #[test]
    fn plan_keeps_the_last_n_and_the_young_and_always_the_newest() {
        let root: Vec<(String, Timestamp)> = (1..=5).map(|i| (format!("c{i}"), at(100 * i))).collect();
        let now = at(1000);
        assert_eq!(plan(&root, &Retention::new(), now), Plan::Keep);
        assert_eq!(
            plan(&root, &Retention::new().keep_last(2), now),
            Plan::Through("c3".into())
        );
        assert_eq!(
            plan(&root, &Retention::new().keep_last(0), now),
            Plan::Through("c4".into())
        );
        assert_eq!(plan(&root, &Retention::new().keep_last(9), now), Plan::Keep);
        // Made before 1000 - 750 = 250: c1 and c2.
        let young = Retention::new().max_age(Duration::from_secs(750));
        assert_eq!(plan(&root, &young, now), Plan::Through("c2".into()));
        // Everything is old, but the newest stays.
        let old = Retention::new().max_age(Duration::from_secs(1));
        assert_eq!(plan(&root, &old, now), Plan::Through("c4".into()));
        // Either rule drops: keep 4 says c1, the age says c1 and c2.
        assert_eq!(
            plan(&root, &young.clone().keep_last(4), now),
            Plan::Through("c2".into())
        );
        let ttl = Retention::new().thread_ttl(Duration::from_secs(400));
        assert_eq!(plan(&root, &ttl, now), Plan::Delete);
        let ttl = Retention::new().thread_ttl(Duration::from_secs(600));
        assert_eq!(plan(&root, &ttl, now), Plan::Keep);
        assert_eq!(plan::<String>(&[], &Retention::new().keep_last(1), now), Plan::Keep);
    }
}
