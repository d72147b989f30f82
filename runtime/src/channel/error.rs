use std::fmt;

/// Reading a channel that was never written (or was cleared).
///
/// Distinct from a stored `None`: an `Option<T>` field holding `None` is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmptyChannel;

impl fmt::Display for EmptyChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("channel is empty: it was never written")
    }
}

impl std::error::Error for EmptyChannel {}

/// Why a step's writes could not be applied to a channel.
///
/// The message does not name the channel: the loop, which knows the field and the nodes, wraps it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateError {
    /// A last-value channel (or a guarded ephemeral/untracked one) got more than one write.
    TooManyWrites {
        /// How many writes it got (at least two).
        count: usize,
    },
    /// A reducer channel got two overwrites in one step.
    TwoOverwrites,
    /// A barrier got a name it does not wait for.
    UnknownName {
        /// The name, as written.
        name: String,
    },
    /// A reducer panicked: the run fails with this, naming the field.
    ReducerPanicked {
        /// The panic's message.
        message: String,
    },
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyWrites { count } => write!(
                f,
                "can receive only one value per step, got {count}; give the field a reducer to take several"
            ),
            Self::TwoOverwrites => f.write_str("can receive only one overwrite per step"),
            Self::UnknownName { name } => write!(f, "barrier does not wait for `{name}`"),
            Self::ReducerPanicked { message } => write!(f, "reducer panicked: {message}"),
        }
    }
}

impl std::error::Error for UpdateError {}
