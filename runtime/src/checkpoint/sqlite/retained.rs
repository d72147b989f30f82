//! What the SQLite saver's write connection remembers of the blobs each pruned thread retains,
//! so that the next prune of the thread walks only the chains' links stored since.
//!
//! A prune keeps, in `retained_blobs`, the blobs of pruned checkpoints that kept ones still need:
//! every link of the delta chains that rebuild the kept checkpoints' values. Found by walking
//! those chains from the kept checkpoints, that set costs a row read a link, and a chain holds
//! thousands of links on a long thread (it is rewritten whole only once its deltas outweigh its
//! base). The set a prune retained is a closed one (it holds the whole chain of each of its
//! blobs), and the next prune of a thread that only grew reaches it again through its newest
//! links, its *tips*: then all of it is still needed, and the walk can stop where it meets it.
//! [`Retained`] is that set, kept per namespace of each pruned thread (at most
//! [`THREADS`] threads); a prune that does not reach every tip (a chain rewritten, a fork) walks
//! everything and answers the links it knows from memory.
//!
//! What is remembered only holds while this connection alone writes the file: it is dropped when
//! the file's data version says another connection committed, and it takes effect only once the
//! prune's transaction commits.

use std::collections::{BTreeSet, HashMap};

/// How many threads' retained blobs are remembered at most.
pub(super) const THREADS: usize = 256;

/// The blobs a namespace of a thread retains: what each extends, and the tips.
#[derive(Debug, Default)]
pub(super) struct Retained {
    /// By channel, then by the id of the checkpoint the blob was stored under: the checkpoint
    /// whose blob it extends (`None`: a whole value).
    links: HashMap<String, HashMap<String, Option<String>>>,
    /// The blobs no other retained blob extends, as `(checkpoint id, channel)`.
    tips: BTreeSet<(String, String)>,
}

impl Retained {
    /// The blobs in `links` (`(checkpoint id, channel)` with what each extends), which must
    /// hold the whole chain of each of them.
    pub(super) fn of(links: impl IntoIterator<Item = ((String, String), Option<String>)>) -> Self {
        let mut out = Self::default();
        out.add(links);
        out
    }

    /// Adds blobs whose chains run into this set's (or end at whole values among them).
    pub(super) fn add(&mut self, links: impl IntoIterator<Item = ((String, String), Option<String>)>) {
        let mut extended = Vec::new();
        for ((at, channel), delta_of) in links {
            if let Some(base) = &delta_of {
                extended.push((base.clone(), channel.clone()));
            }
            self.tips.insert((at.clone(), channel.clone()));
            self.links.entry(channel).or_default().insert(at, delta_of);
        }
        for blob in extended {
            self.tips.remove(&blob);
        }
    }

    /// What the blob stored under `at` for `channel` extends, if it is one of these.
    pub(super) fn delta_of(&self, at: &str, channel: &str) -> Option<&Option<String>> {
        self.links.get(channel)?.get(at)
    }

    /// Whether the blob stored under `at` for `channel` is one of these.
    pub(super) fn holds(&self, at: &str, channel: &str) -> bool {
        self.delta_of(at, channel).is_some()
    }

    /// Whether `reached` has every tip: then each of these blobs is on a chain still needed.
    pub(super) fn tips_in(&self, reached: &BTreeSet<(String, String)>) -> bool {
        self.tips.is_subset(reached)
    }

    /// The blobs, as `(checkpoint id, channel)`.
    pub(super) fn blobs(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.links
            .iter()
            .flat_map(|(channel, ats)| ats.keys().map(move |at| (at.clone(), channel.clone())))
    }
}

/// The retained blobs of a thread, by namespace.
pub(super) type OfThread = HashMap<String, Retained>;

/// What the write connection remembers, and what the transaction under way will make of it.
#[derive(Debug, Default)]
pub(super) struct Memo {
    threads: HashMap<String, OfThread>,
    /// The file's data version when the memo was last known to be the file's.
    version: Option<u32>,
    /// What the transaction's prunes retained, by thread: remembered once it commits.
    staged: Vec<(String, OfThread)>,
}

impl Memo {
    /// A transaction begins on a file at data `version`: what another connection may have
    /// changed is forgotten.
    pub(super) fn begin(&mut self, version: Option<u32>) {
        self.staged.clear();
        if version.is_none() || version != self.version {
            self.threads.clear();
        }
    }

    /// Takes out what is remembered of `thread`, which a write of the transaction changes:
    /// until the transaction commits, it is not known.
    pub(super) fn take(&mut self, thread: &str) -> OfThread {
        self.staged.retain(|(t, _)| t != thread);
        self.threads.remove(thread).unwrap_or_default()
    }

    /// What a prune of `thread` retained, remembered if the transaction commits.
    pub(super) fn stage(&mut self, thread: String, retained: OfThread) {
        self.staged.retain(|(t, _)| *t != thread);
        self.staged.push((thread, retained));
    }

    /// The transaction committed, leaving the file at data `version`.
    pub(super) fn committed(&mut self, version: Option<u32>) {
        for (thread, retained) in self.staged.drain(..) {
            if self.threads.len() >= THREADS && !self.threads.contains_key(&thread) {
                let evicted = self.threads.keys().next().cloned();
                if let Some(evicted) = evicted {
                    self.threads.remove(&evicted);
                }
            }
            self.threads.insert(thread, retained);
        }
        self.version = version;
    }

    /// The transaction was rolled back: its prunes retained nothing.
    pub(super) fn abandoned(&mut self) {
        self.staged.clear();
    }

    /// How many threads are remembered.
    #[cfg(test)]
    pub(super) fn threads(&self) -> usize {
        self.threads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(at: &str, channel: &str, delta_of: Option<&str>) -> ((String, String), Option<String>) {
        ((at.into(), channel.into()), delta_of.map(str::to_owned))
    }

    fn blob(at: &str, channel: &str) -> (String, String) {
        (at.into(), channel.into())
    }

    #[test]
    fn the_tips_are_the_blobs_nothing_retained_extends() {
        let mut r = Retained::of([
            link("1", "m", None),
            link("2", "m", Some("1")),
            link("3", "m", Some("2")),
            link("2", "n", None),
        ]);
        assert_eq!(r.tips, BTreeSet::from([blob("3", "m"), blob("2", "n")]));
        assert!(r.holds("2", "m") && !r.holds("2", "x") && !r.holds("4", "m"));
        assert_eq!(r.delta_of("3", "m"), Some(&Some("2".into())));
        r.add([link("5", "m", Some("3")), link("4", "m", Some("3"))]);
        // Two blobs extend 3 (a fork): both are tips.
        assert_eq!(r.tips, BTreeSet::from([blob("4", "m"), blob("5", "m"), blob("2", "n")]));
        assert!(!r.tips_in(&BTreeSet::from([blob("5", "m"), blob("2", "n")])));
        assert!(r.tips_in(&BTreeSet::from([blob("4", "m"), blob("5", "m"), blob("2", "n")])));
        assert_eq!(r.blobs().count(), 6);
    }

    #[test]
    fn a_memo_holds_what_committed_transactions_retained_while_no_one_else_writes() {
        let retained = || OfThread::from([(String::new(), Retained::of([link("1", "m", None)]))]);
        let mut memo = Memo::default();
        memo.begin(Some(1));
        memo.stage("t".into(), retained());
        memo.abandoned();
        memo.committed(Some(2));
        assert_eq!(memo.threads(), 0, "a rolled back prune retained nothing");

        memo.begin(Some(2));
        memo.stage("t".into(), retained());
        memo.committed(Some(3));
        assert_eq!(memo.threads(), 1);
        memo.begin(Some(3));
        assert_eq!(memo.take("t").len(), 1);
        assert!(memo.take("t").is_empty(), "taken out until a prune stages it again");
        memo.committed(Some(4));

        memo.begin(Some(4));
        memo.stage("t".into(), retained());
        memo.committed(Some(5));
        memo.begin(Some(9));
        assert_eq!(memo.threads(), 0, "another connection wrote the file");

        memo.begin(Some(9));
        for t in 0..THREADS + 10 {
            memo.stage(t.to_string(), retained());
        }
        memo.committed(Some(10));
        assert_eq!(memo.threads(), THREADS);
    }
}
