//! A running hash of everything a run did, to test determinism (madsim
//! `check_determinism`): run a seed twice, compare the hashes.
//!
//! FNV-1a 64 over little-endian bytes: tiny, stable across platforms and
//! releases (unlike `std`'s `DefaultHasher`, whose algorithm may change).

use amulet_types::{NodeId, TimeMicros};
use std::fmt::{self, Debug};
use std::hash::{Hash, Hasher};

const FNV_OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01B3;

/// Running 64-bit FNV-1a hash. Also a [`Hasher`] so any `Hash` value can be
/// digested; integer writes are little-endian so the digest does not depend
/// on the platform's byte order or pointer width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceHash {
    state: u64,
    events: u64,
}

impl Default for TraceHash {
    fn default() -> Self {
        TraceHash::new()
    }
}

impl TraceHash {
    /// The hash of nothing.
    pub fn new() -> TraceHash {
        TraceHash {
            state: FNV_OFFSET_BASIS,
            events: 0,
        }
    }

    /// Feeds raw bytes.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.state ^= u64::from(*byte);
            self.state = self.state.wrapping_mul(FNV_PRIME);
        }
    }

    /// Feeds one event: a message `from -> to` at `time` whose content
    /// digests to `digest` (see [`TraceHash::digest`]). For events that are
    /// not messages use a `kind` tag and the node as both ends.
    pub fn event(&mut self, time: TimeMicros, kind: u8, from: NodeId, to: NodeId, digest: u64) {
        self.events += 1;
        self.write_bytes(&[kind]);
        self.write_bytes(&time.0.to_le_bytes());
        self.write_bytes(&from.0.to_le_bytes());
        self.write_bytes(&to.0.to_le_bytes());
        self.write_bytes(&digest.to_le_bytes());
    }

    /// The hash so far.
    pub fn value(&self) -> u64 {
        self.state
    }

    /// How many events were fed.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The FNV-1a digest of a `Hash` value.
    pub fn digest<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut hasher = TraceHash::new();
        value.hash(&mut hasher);
        hasher.value()
    }

    /// The FNV-1a digest of a value's `Debug` text, for message types that
    /// do not implement `Hash` (such as `amulet_wire::Envelope`). Stable as
    /// long as the `Debug` output is (no hash maps inside).
    pub fn digest_debug<T: Debug + ?Sized>(value: &T) -> u64 {
        let mut hasher = TraceHash::new();
        fmt::write(&mut DebugSink(&mut hasher), format_args!("{value:?}"))
            .expect("writing to a hash cannot fail");
        hasher.value()
    }
}

/// Streams `Debug` output into the hash without building a `String`.
struct DebugSink<'a>(&'a mut TraceHash);

impl fmt::Write for DebugSink<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.0.write_bytes(text.as_bytes());
        Ok(())
    }
}

impl Hasher for TraceHash {
    fn finish(&self) -> u64 {
        self.state
    }
    fn write(&mut self, bytes: &[u8]) {
        self.write_bytes(bytes);
    }
    fn write_u16(&mut self, i: u16) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_u128(&mut self, i: u128) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_i16(&mut self, i: i16) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_i32(&mut self, i: i32) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_i64(&mut self, i: i64) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_i128(&mut self, i: i128) {
        self.write_bytes(&i.to_le_bytes());
    }
    fn write_isize(&mut self, i: isize) {
        self.write_i64(i as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_types::{StreamId, ValueId};

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        let mut hash = TraceHash::new();
        assert_eq!(hash.value(), 0xCBF2_9CE4_8422_2325);
        hash.write_bytes(b"a");
        assert_eq!(hash.value(), 0xAF63_DC4C_8601_EC8C);
        let mut foobar = TraceHash::new();
        foobar.write_bytes(b"foobar");
        assert_eq!(foobar.value(), 0x8594_4171_F739_67E8);
    }

    #[test]
    fn events_change_the_hash_and_order_matters() {
        let (a, b) = (NodeId(1), NodeId(2));
        let mut first = TraceHash::new();
        first.event(TimeMicros(1), 0, a, b, 10);
        first.event(TimeMicros(2), 0, b, a, 20);
        let mut second = TraceHash::new();
        second.event(TimeMicros(2), 0, b, a, 20);
        second.event(TimeMicros(1), 0, a, b, 10);
        assert_ne!(first.value(), second.value());
        assert_eq!(first.events(), 2);
    }

    #[test]
    fn digests_are_stable_for_hash_and_debug() {
        let value = ValueId {
            proposer: NodeId(1),
            incarnation: 2,
            sequence: 3,
        };
        assert_eq!(TraceHash::digest(&value), TraceHash::digest(&value));
        assert_ne!(TraceHash::digest(&value), TraceHash::digest(&StreamId(1)));
        let text = format!("{value:?}");
        let mut direct = TraceHash::new();
        direct.write_bytes(text.as_bytes());
        assert_eq!(TraceHash::digest_debug(&value), direct.value());
    }
}
