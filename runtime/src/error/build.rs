//! The error of building a graph.

use std::fmt;

/// A graph could not be built: every problem found, each naming the node or edge at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    problems: Vec<String>,
}

impl BuildError {
    pub(crate) fn new(problems: Vec<String>) -> Self {
        Self { problems }
    }
    /// Each problem, as a sentence.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => f.write_str(one),
            many => {
                write!(f, "{} problems in the graph:", many.len())?;
                for p in many {
                    write!(f, "\n- {p}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BuildError {}
