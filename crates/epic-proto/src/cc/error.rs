//! The one error of the control blocks: a configuration they refuse.

use core::fmt;

/// A configuration value of a control block that is out of range. Local
/// API misuse: the blocks never see untrusted bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// The field must not be zero.
    Zero {
        /// Field name, as in the config struct.
        field: &'static str,
    },
    /// Two fields are out of order: `low` must not exceed `high`.
    Inverted {
        /// The field that must be the smaller or equal one.
        low: &'static str,
        /// The field that must be the larger or equal one.
        high: &'static str,
    },
    /// The field exceeds its maximum.
    OutOfRange {
        /// Field name, as in the config struct.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest value allowed.
        max: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ConfigError::Zero { field } => write!(f, "{field} must not be zero"),
            ConfigError::Inverted { low, high } => {
                write!(f, "{low} must not exceed {high}")
            }
            ConfigError::OutOfRange { field, value, max } => {
                write!(f, "{field} = {value} exceeds the maximum {max}")
            }
        }
    }
}

impl core::error::Error for ConfigError {}
