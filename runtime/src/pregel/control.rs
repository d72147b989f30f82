//! The loop's internal channels ("controls"): what triggers nodes besides the state's fields.
//! A branch channel per node (`branch:to:<node>`, for the start node the input), a barrier per
//! join (`join:<a>+<b>:<node>`), and their deferred kinds; what a checkpoint keeps of each.

use super::body::SavedControl;
use crate::channel::{Channel, EphemeralValue, LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish};
use crate::graph::compile::ControlSpec;

/// An internal channel's state.
#[derive(Debug, Clone)]
pub(crate) enum Control {
    Branch(EphemeralValue),
    Deferred(LastValueAfterFinish),
    Join(NamedBarrierValue<u32>),
    DeferredJoin(NamedBarrierValueAfterFinish<u32>),
}

impl Control {
    pub(crate) fn new(spec: &ControlSpec) -> Self {
        match spec {
            ControlSpec::Branch { deferred: false } => Self::Branch(EphemeralValue::unguarded()),
            ControlSpec::Branch { deferred: true } => Self::Deferred(LastValueAfterFinish::new()),
            ControlSpec::Join {
                sources,
                deferred: false,
            } => Self::Join(NamedBarrierValue::new(sources.iter().copied())),
            ControlSpec::Join {
                sources,
                deferred: true,
            } => Self::DeferredJoin(NamedBarrierValueAfterFinish::new(sources.iter().copied())),
        }
    }
    pub(crate) fn is_available(&self) -> bool {
        match self {
            Self::Branch(c) => c.is_available(&()),
            Self::Deferred(c) => Channel::<()>::is_available(c, &()),
            Self::Join(c) => c.is_available(&()),
            Self::DeferredJoin(c) => c.is_available(&()),
        }
    }
    /// `update` with `count` branch writes, or the barrier `names`.
    pub(crate) fn update(&mut self, count: usize, names: &[u32]) -> bool {
        let changed = match self {
            Self::Branch(c) => c.update(&mut (), std::iter::repeat_n((), count)),
            Self::Deferred(c) => c.update(&mut (), std::iter::repeat_n((), count)),
            Self::Join(c) => c.update(&mut (), names.iter().copied()),
            Self::DeferredJoin(c) => c.update(&mut (), names.iter().copied()),
        };
        // Internal channels are written only with names they wait for: they cannot refuse.
        changed.unwrap_or(false)
    }
    pub(crate) fn consume(&mut self) -> bool {
        match self {
            Self::Branch(c) => c.consume(&mut ()),
            Self::Deferred(c) => c.consume(&mut ()),
            Self::Join(c) => c.consume(&mut ()),
            Self::DeferredJoin(c) => c.consume(&mut ()),
        }
    }
    pub(crate) fn finish(&mut self) -> bool {
        match self {
            Self::Branch(c) => c.finish(&mut ()),
            Self::Deferred(c) => c.finish(&mut ()),
            Self::Join(c) => c.finish(&mut ()),
            Self::DeferredJoin(c) => c.finish(&mut ()),
        }
    }
}

impl Control {
    /// The bookkeeping of an internal channel, if it holds any.
    pub(crate) fn saved(&self) -> Option<SavedControl> {
        use crate::channel::Channel;
        match self {
            Self::Branch(c) => Channel::<()>::checkpoint(c, &()).map(|()| SavedControl::Flag(true)),
            Self::Deferred(c) => Channel::<()>::checkpoint(c, &()).map(SavedControl::Flag),
            Self::Join(c) => c.checkpoint(&()).map(|seen| SavedControl::Seen(seen, None)),
            Self::DeferredJoin(c) => c
                .checkpoint(&())
                .map(|(seen, finished)| SavedControl::Seen(seen, Some(finished))),
        }
    }

    pub(crate) fn restore(
        &self,
        saved: &serde_json::Value,
        node_ids: &std::collections::HashMap<String, u32>,
    ) -> Result<Self, String> {
        use crate::channel::Channel;
        let ids = |v: &serde_json::Value| -> Result<Vec<u32>, String> {
            let names: Vec<String> = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            Ok(names.iter().filter_map(|n| node_ids.get(n).copied()).collect())
        };
        Ok(match self {
            Self::Branch(c) => Self::Branch(Channel::<()>::from_checkpoint(c, Some(()))),
            Self::Deferred(c) => Self::Deferred(Channel::<()>::from_checkpoint(
                c,
                Some(saved.as_bool().unwrap_or(false)),
            )),
            Self::Join(c) => Self::Join(c.from_checkpoint(Some(ids(saved)?))),
            Self::DeferredJoin(c) => {
                let seen = ids(&saved[0])?;
                Self::DeferredJoin(c.from_checkpoint(Some((seen, saved[1].as_bool().unwrap_or(false)))))
            }
        })
    }
}
