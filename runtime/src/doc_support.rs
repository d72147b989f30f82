//! A small state written by hand, for the examples in this crate's docs (the `weir` crate's
//! `#[derive(State)]` writes the same code).

/// Defines `Doc { text: String }` (a last-value field) and `DocUpdate`, by hand.
#[macro_export]
#[doc(hidden)]
macro_rules! __doc_state {
    () => {
        #[derive(Debug, Clone, Default, PartialEq)]
        struct Doc {
            text: String,
        }
        #[derive(Debug, Clone, Default, $crate::__serde::Serialize, $crate::__serde::Deserialize)]
        #[serde(crate = "weir_runtime::__serde")]
        struct DocUpdate {
            text: $crate::Writes<String>,
        }
        impl DocUpdate {
            fn text(mut self, v: String) -> Self {
                self.text.push(v);
                self
            }
        }
        impl $crate::Update for DocUpdate {
            type State = Doc;
            fn is_written(&self, i: usize) -> bool {
                i == 0 && self.text.is_some()
            }
            fn merge(&mut self, later: Self) {
                self.text.extend(later.text);
            }
        }
        impl $crate::State for Doc {
            type Update = DocUpdate;
            type Channels = ($crate::channel::LastValue,);
            const FIELDS: &'static [$crate::FieldInfo] =
                &[$crate::FieldInfo::new("text", $crate::ChannelKind::LastValue)];
            fn empty() -> (Self, Self::Channels) {
                (Self::default(), ($crate::channel::LastValue::new(),))
            }
            fn into_update(self) -> DocUpdate {
                DocUpdate::default().text(self.text)
            }
            fn is_available(&self, c: &Self::Channels, i: usize) -> bool {
                i == 0 && $crate::channel::Channel::is_available(&c.0, &self.text)
            }
            fn apply(
                &mut self,
                c: &mut Self::Channels,
                u: &mut [DocUpdate],
                bump: bool,
                changed: &mut [bool],
            ) -> Result<(), $crate::state::FieldError> {
                changed[0] = $crate::state::apply_field(0, &mut self.text, &mut c.0, u, |u| u.text.take(), bump)?;
                Ok(())
            }
            fn consume(&mut self, c: &mut Self::Channels, i: usize) -> bool {
                i == 0 && $crate::channel::Channel::consume(&mut c.0, &mut self.text)
            }
            fn finish(&mut self, c: &mut Self::Channels, changed: &mut [bool]) {
                changed[0] = $crate::channel::Channel::finish(&mut c.0, &mut self.text);
            }
            fn save_field(&self, c: &Self::Channels, _: usize) -> Result<Option<Vec<u8>>, $crate::CodecError> {
                $crate::state::save_field("text", &self.text, &c.0)
            }
            fn load_field(
                &mut self,
                c: &mut Self::Channels,
                _: usize,
                chain: &[Vec<u8>],
            ) -> Result<(), $crate::CodecError> {
                $crate::state::load_field("text", &mut self.text, &mut c.0, chain)
            }
        }
    };
}
