//! Test support: states written by hand against the runtime's `State` trait (what
//! `#[derive(State)]` generates), so the runtime is tested on its own.

#![allow(dead_code, unused_macros)]

use std::sync::{Arc, Mutex};

/// Defines a state struct, its update type and its channels, implementing `State` by hand.
///
/// Each field: `name: Type => ChannelType = channel_init, ChannelKind, |value| write_for_input`.
macro_rules! hand_state {
    (
        struct $name:ident, $upd:ident, $chans:ident {
            $( $field:ident : $ty:ty => $chan:ty = $init:expr, $kind:expr, $wrap:expr );* $(;)?
        }
    ) => {
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $name {
            $( pub $field: $ty, )*
        }

        #[derive(Debug, Clone)]
        pub struct $chans {
            $( $field: $chan, )*
        }

        #[derive(Debug, Clone, Default, ::serde::Serialize, ::serde::Deserialize)]
        pub struct $upd {
            $( pub $field: ::weir::Writes<<$chan as ::weir::channel::Channel<$ty>>::Write>, )*
        }

        #[allow(dead_code)]
        impl $upd {
            $(
                pub fn $field(mut self, w: <$chan as ::weir::channel::Channel<$ty>>::Write) -> Self {
                    self.$field.push(w);
                    self
                }
            )*
        }

        impl ::weir::Update for $upd {
            type State = $name;
            fn is_written(&self, index: usize) -> bool {
                let mut _i = 0;
                $( if _i == index { return self.$field.is_some(); } _i += 1; )*
                false
            }
            fn merge(&mut self, later: Self) {
                $( self.$field.extend(later.$field); )*
            }
        }

        impl ::weir::State for $name {
            type Update = $upd;
            type Channels = $chans;
            const FIELDS: &'static [::weir::FieldInfo] = &[
                $( ::weir::FieldInfo::new(stringify!($field), $kind), )*
            ];
            fn empty() -> (Self, $chans) {
                (Self::default(), $chans { $( $field: $init, )* })
            }
            fn into_update(self) -> $upd {
                let mut u = $upd::default();
                $( u.$field.push(($wrap)(self.$field)); )*
                u
            }
            fn is_available(&self, c: &$chans, index: usize) -> bool {
                let mut _i = 0;
                $(
                    if _i == index {
                        return ::weir::channel::Channel::<$ty>::is_available(&c.$field, &self.$field);
                    }
                    _i += 1;
                )*
                false
            }
            fn apply(
                &mut self,
                c: &mut $chans,
                updates: &mut [$upd],
                bump: bool,
                changed: &mut [bool],
            ) -> Result<(), ::weir::state::FieldError> {
                let mut _i = 0;
                $(
                    changed[_i] = ::weir::state::apply_field(
                        _i, &mut self.$field, &mut c.$field, updates, |u| u.$field.take(), bump,
                    )?;
                    _i += 1;
                )*
                Ok(())
            }
            fn consume(&mut self, c: &mut $chans, index: usize) -> bool {
                let mut _i = 0;
                $(
                    if _i == index {
                        return ::weir::channel::Channel::<$ty>::consume(&mut c.$field, &mut self.$field);
                    }
                    _i += 1;
                )*
                false
            }
            fn finish(&mut self, c: &mut $chans, changed: &mut [bool]) {
                let mut _i = 0;
                $(
                    changed[_i] = ::weir::channel::Channel::<$ty>::finish(&mut c.$field, &mut self.$field);
                    _i += 1;
                )*
            }
            fn save_field(&self, c: &$chans, index: usize) -> Result<Option<Vec<u8>>, ::weir::CodecError> {
                let mut _i = 0;
                $(
                    if _i == index {
                        return ::weir::state::save_field(stringify!($field), &self.$field, &c.$field);
                    }
                    _i += 1;
                )*
                Ok(None)
            }
            fn load_field(&mut self, c: &mut $chans, index: usize, chain: &[Vec<u8>]) -> Result<(), ::weir::CodecError> {
                let mut _i = 0;
                $(
                    if _i == index {
                        return ::weir::state::load_field(stringify!($field), &mut self.$field, &mut c.$field, chain);
                    }
                    _i += 1;
                )*
                Ok(())
            }
        }
    };
}

/// The reducer of `Vec` append fields.
pub fn append<T>(v: &mut Vec<T>, more: Vec<T>) {
    v.extend(more);
}

/// The reducer of `+` fields.
pub fn add<T: std::ops::AddAssign>(v: &mut T, more: T) {
    *v += more;
}

/// A log shared by the nodes of a test: what ran, in which step.
#[derive(Debug, Clone, Default)]
pub struct Log(Arc<Mutex<Vec<(i64, String)>>>);

impl Log {
    pub fn push(&self, step: i64, what: impl Into<String>) {
        self.0.lock().unwrap().push((step, what.into()));
    }
    /// The entries grouped by step, each step's entries sorted (tasks of one step finish in any order).
    pub fn by_step(&self) -> Vec<(i64, Vec<String>)> {
        let mut out: Vec<(i64, Vec<String>)> = Vec::new();
        let mut entries = self.0.lock().unwrap().clone();
        entries.sort();
        for (step, what) in entries {
            match out.last_mut() {
                Some((s, v)) if *s == step => v.push(what),
                _ => out.push((step, vec![what])),
            }
        }
        out
    }
    pub fn count(&self, what: &str) -> usize {
        self.0.lock().unwrap().iter().filter(|(_, w)| w == what).count()
    }
}
