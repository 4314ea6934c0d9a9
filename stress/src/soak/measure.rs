//! What a soak check measures, and in which unit: the text shows each figure in its
//! unit (RSS in MiB) by the measure's type, and the JSON says it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A figure a soak check bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SoakMeasure {
    /// Open fds at quiesce.
    OpenFds,
    /// Tasks at quiesce.
    Tasks,
    /// Pool chunks held at quiesce, after the warm-up.
    ChunksHeld,
    /// RSS at quiesce: the median of the last third of the samples after the
    /// warm-up against that of the first third.
    RssMedian,
    /// Pool chunks held at quiesce over every interval, the warm-up included.
    ChunksHeldWarmUpIncluded,
}

impl SoakMeasure {
    /// The unit of its figures.
    pub fn unit(self) -> Unit {
        match self {
            SoakMeasure::RssMedian => Unit::Bytes,
            SoakMeasure::OpenFds
            | SoakMeasure::Tasks
            | SoakMeasure::ChunksHeld
            | SoakMeasure::ChunksHeldWarmUpIncluded => Unit::Count,
        }
    }
}

impl fmt::Display for SoakMeasure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SoakMeasure::OpenFds => "open fds at quiesce",
            SoakMeasure::Tasks => "tasks at quiesce",
            SoakMeasure::ChunksHeld => "pool chunks held at quiesce",
            SoakMeasure::RssMedian => "RSS at quiesce, last third's median over the first's",
            SoakMeasure::ChunksHeldWarmUpIncluded => {
                "pool chunks held at quiesce, warm-up included"
            }
        })
    }
}

/// The unit of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unit {
    /// A number of things.
    Count,
    /// Bytes (shown in MiB).
    Bytes,
}

impl Unit {
    /// `v` in this unit, for people.
    pub fn show(self, v: u64) -> String {
        match self {
            Unit::Count => v.to_string(),
            Unit::Bytes => format!("{:.1} MiB", v as f64 / (1024.0 * 1024.0)),
        }
    }
}
