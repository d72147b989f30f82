//! A public state in a crate that denies warnings and asks for docs: the generated items add
//! neither a warning nor an undocumented public item.

#![deny(warnings, missing_docs, missing_debug_implementations, unreachable_pub, unused_qualifications)]
#![deny(clippy::all)]

use std::collections::BTreeMap;
use weir::prelude::*;

/// The state.
pub mod model {
    use std::collections::BTreeMap;
    use weir::State;

    /// Keeps the larger score.
    pub fn keep_max(best: &mut f64, score: f64) {
        *best = best.max(score);
    }

    /// A research state.
    #[derive(State, Clone, Debug, Default, PartialEq)]
    pub struct Research {
        /// The question.
        pub question: String,
        /// Notes, appended.
        #[reducer(append)]
        pub notes: Vec<String>,
        /// Calls, added.
        #[reducer(add)]
        pub llm_calls: u32,
        /// Scores, merged.
        #[reducer(merge)]
        pub scores: BTreeMap<String, f64>,
        /// The best score.
        #[reducer(with = keep_max)]
        pub best: f64,
        /// Scratch space.
        #[channel(ephemeral)]
        pub scratch: Option<String>,
        /// Events of one step.
        #[channel(topic)]
        pub events: Vec<String>,
        /// Every event.
        #[channel(topic, accumulate)]
        pub history: Vec<String>,
        /// Anything.
        #[channel(any)]
        pub anything: String,
        /// Not checkpointed.
        #[channel(untracked)]
        pub cache: Option<u64>,
        /// After the finish.
        #[channel(after_finish)]
        pub summary: String,
    }

    /// A generic state.
    #[derive(State, Clone, Debug, Default)]
    pub struct Pair<T: Clone + Default, const N: usize> {
        /// Items.
        #[reducer(append)]
        pub items: Vec<T>,
        /// Arrays.
        pub arrays: Vec<[u8; N]>,
    }

    /// A state visible in the crate only.
    #[derive(State, Clone, Debug, Default)]
    pub(crate) struct Private {
        #[reducer(add)]
        pub(crate) n: u32,
    }
}

use model::{Pair, PairUpdate, Private, PrivateUpdate, Research, ResearchUpdate};

fn main() {
    let update = ResearchUpdate::default()
        .question("q".into())
        .notes(vec!["n".into()])
        .llm_calls(1)
        .scores(BTreeMap::new())
        .best(0.5)
        .overwrite_best(1.0)
        .scratch(None)
        .events(vec![])
        .history(vec![])
        .anything(String::new())
        .cache(Some(1))
        .summary(String::new());
    assert!(update.is_written(Research::__WEIR_FIELD_summary));
    let _ = GraphBuilder::<Research>::new();
    let _ = PairUpdate::<u8, 2>::default().items(vec![1]).arrays(vec![[0, 1]]);
    let _ = GraphBuilder::<Pair<u8, 2>>::new();
    let _ = PrivateUpdate::default().n(1);
    let _ = GraphBuilder::<Private>::new();
}
