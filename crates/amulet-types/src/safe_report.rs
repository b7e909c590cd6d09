//! A node's safe instance of a stream, as reported to the stream's members
//! (thesis §3.4.2), with the map version it was computed against.

use crate::{Instance, MapVersion};
use serde::{Deserialize, Serialize};

/// Everything of a stream below `below` is reflected in a durable
/// checkpoint of every subscriber (partition replica) the sender runs, by
/// the sender's partition map of version `map_version`: a node names in
/// its report which subscribers it covers.
///
/// Why the version: the global stream is subscribed by every partition,
/// and a node given a partition by a move reports 0 only from the moment
/// it learns the move. A report sent before then covers the partitions
/// the node ran, not the new one, and counted for the new one it let
/// acceptors trim the global stream past the moved partition's only state
/// (simulator, DMap seed 9000706). A receiver counts a report only when
/// it was computed at its own map's version or later.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SafeReport {
    /// The stream below this instance is held in durable checkpoints.
    pub below: Instance,
    /// The version of the map whose subscribers the report covers.
    pub map_version: MapVersion,
}

impl SafeReport {
    /// What the report says the sender holds, read by a node whose map is
    /// at `version`: nothing (instance 0) if the report predates it.
    pub fn held_at(&self, version: MapVersion) -> Instance {
        if self.map_version >= version {
            self.below
        } else {
            Instance(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_3_4_2_a_report_older_than_the_readers_map_holds_nothing() {
        let report = SafeReport {
            below: Instance(616),
            map_version: MapVersion(12),
        };
        assert_eq!(report.held_at(MapVersion(11)), Instance(616));
        assert_eq!(report.held_at(MapVersion(12)), Instance(616));
        assert_eq!(report.held_at(MapVersion(13)), Instance(0));
    }
}
