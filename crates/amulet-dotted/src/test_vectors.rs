//! The clock library's notation for test vectors (`ricardobcl/ServerWideClocks`
//! eunit tests): replica ids as characters, clock entries as `{base,
//! bitmap}` where bit `i` of the bitmap is counter `base + 1 + i`.

use crate::clock_entry::ClockEntry;
use crate::dot::ReplicaId;
use crate::node_clock::NodeClock;

/// The replica id written as `name`.
pub(crate) fn id(name: char) -> ReplicaId {
    ReplicaId(name as u64)
}

/// The entry `{base, bitmap}` (normalised).
pub(crate) fn entry(base: u64, bitmap: u64) -> ClockEntry {
    let mut e = ClockEntry::from_base(base);
    for i in 0..64 {
        if bitmap & (1 << i) != 0 {
            e.add(base + 1 + i);
        }
    }
    e
}

/// The clock `[{id, {base, bitmap}}, ...]`.
pub(crate) fn clock(entries: &[(char, u64, u64)]) -> NodeClock {
    let mut c = NodeClock::new();
    for &(name, base, bitmap) in entries {
        c.join_entry(id(name), &entry(base, bitmap));
    }
    c
}
