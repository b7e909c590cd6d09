//! A running digest of the merged delivery order, so separate processes
//! can show they delivered the same values in the same order.

use amulet_multicast::Merged;
use serde::{Deserialize, Serialize};

/// A checkpoint of the digest is kept every this many values, so two
/// nodes that stopped at different points can compare a common prefix.
pub const CHECKPOINT_EVERY_VALUES: u64 = 1024;

/// Digest of the first `count` delivered values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestPoint {
    /// Values covered.
    pub count: u64,
    /// FNV-1a chain over (stream, proposer, incarnation, sequence) of each.
    pub digest: u64,
}

/// The running digest and its checkpoints.
#[derive(Clone, Debug, Default)]
pub struct DeliveryDigest {
    current: DigestPoint,
    checkpoints: Vec<DigestPoint>,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl DeliveryDigest {
    /// Adds one delivered value.
    pub fn push(&mut self, merged: &Merged) {
        let id = merged.value.id;
        let mut hash = if self.current.count == 0 {
            FNV_OFFSET
        } else {
            self.current.digest
        };
        let fields = [
            u64::from(merged.stream.0),
            u64::from(id.proposer.0),
            u64::from(id.incarnation),
            id.sequence,
        ];
        for field in fields {
            for byte in field.to_le_bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(FNV_PRIME);
            }
        }
        self.current = DigestPoint {
            count: self.current.count + 1,
            digest: hash,
        };
        if self.current.count.is_multiple_of(CHECKPOINT_EVERY_VALUES) {
            self.checkpoints.push(self.current);
        }
    }

    /// The digest of everything delivered so far.
    pub fn current(&self) -> DigestPoint {
        self.current
    }

    /// Digests every [`CHECKPOINT_EVERY_VALUES`] values.
    pub fn checkpoints(&self) -> &[DigestPoint] {
        &self.checkpoints
    }
}

/// Compares the delivery digests of several nodes (each a list of points,
/// e.g. checkpoints plus the final digest). Returns the longest prefix all
/// of them cover and agree on, or the first count at which two differ.
pub fn common_prefix(nodes: &[Vec<DigestPoint>]) -> Result<DigestPoint, String> {
    let Some((first, rest)) = nodes.split_first() else {
        return Ok(DigestPoint::default());
    };
    let mut agreed = DigestPoint::default();
    for point in first {
        let mut everywhere = true;
        for other in rest {
            match other.iter().find(|p| p.count == point.count) {
                Some(p) if p.digest != point.digest => {
                    return Err(format!(
                        "delivery orders differ within the first {} values",
                        point.count
                    ))
                }
                Some(_) => {}
                None => everywhere = false,
            }
        }
        if everywhere && point.count > agreed.count {
            agreed = *point;
        }
    }
    Ok(agreed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(count: u64, digest: u64) -> DigestPoint {
        DigestPoint { count, digest }
    }

    #[test]
    fn common_prefix_is_the_longest_shared_agreeing_point() {
        let a = vec![point(1024, 7), point(2048, 8), point(2500, 1)];
        let b = vec![point(1024, 7), point(2048, 8), point(3072, 9)];
        assert_eq!(common_prefix(&[a.clone(), b]).unwrap(), point(2048, 8));
        let c = vec![point(1024, 7), point(2048, 5)];
        assert!(common_prefix(&[a, c]).is_err());
    }
}
