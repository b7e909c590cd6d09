//! A map's entries: a persistent B-tree (`imbl::OrdSet`) of [`Stored`]
//! entries, each holding its key and value in one shared allocation.
//!
//! Why not `imbl::OrdMap<Bytes, Bytes>`, as before: a tree slot of two
//! `Bytes` is 64 bytes (16 slots a leaf, most of them filled), a key and a
//! value are two allocations, and the first clone of a `Bytes` built from a
//! `Vec` allocates a 24-byte shared header, which a node's checkpoints
//! (copy-on-write clones of every map) did for nearly every key and value:
//! about 470 resident bytes per entry of 24 + 256 bytes against Redis's
//! 415. Here a slot is one `Arc<[u8]>` (16 bytes) and an entry one
//! allocation whose clones only count references (docs/performance.md,
//! "Memory per entry").

use crate::Entry;
use bytes::Bytes;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// Bytes in front of the key: its length, little-endian.
const KEY_LENGTH_BYTES: usize = 4;

/// Values up to this size are copied into a reply; larger ones are lent
/// to it (the reply holds a reference to the entry, not a copy).
const REPLY_COPY_BYTES_MAX: usize = 1024;

/// One entry: `[key length: u32 LE][key][value]` in one allocation.
/// Ordered, compared and borrowed by its key alone, so a set of them is a
/// map from key to value.
#[derive(Clone)]
pub struct Stored(Arc<[u8]>);

impl Stored {
    /// An entry holding copies of `key` and `value`.
    pub fn new(key: &[u8], value: &[u8]) -> Stored {
        let key_length = u32::try_from(key.len()).expect("keys are bounded far below 4 GiB");
        let mut bytes = Vec::with_capacity(KEY_LENGTH_BYTES + key.len() + value.len());
        bytes.extend_from_slice(&key_length.to_le_bytes());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        Stored(Arc::from(bytes))
    }

    fn key_end(&self) -> usize {
        let length: [u8; KEY_LENGTH_BYTES] = self.0[..KEY_LENGTH_BYTES]
            .try_into()
            .expect("every entry starts with its key length");
        KEY_LENGTH_BYTES + u32::from_le_bytes(length) as usize
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.0[KEY_LENGTH_BYTES..self.key_end()]
    }

    /// The value.
    pub fn value(&self) -> &[u8] {
        &self.0[self.key_end()..]
    }

    /// Its key's and value's bytes: what [`Entries::payload_bytes`] sums.
    pub fn payload_bytes(&self) -> u64 {
        (self.0.len() - KEY_LENGTH_BYTES) as u64
    }

    /// The value as a reply carries it.
    pub fn value_bytes(&self) -> Bytes {
        if self.value().len() <= REPLY_COPY_BYTES_MAX {
            Bytes::copy_from_slice(self.value())
        } else {
            Bytes::from_owner(LentValue(self.clone()))
        }
    }

    /// The key and value as a reply carries them.
    pub fn to_entry(&self) -> Entry {
        (Bytes::copy_from_slice(self.key()), self.value_bytes())
    }
}

/// A large value lent to a reply: the reply's `Bytes` keeps the entry
/// alive instead of copying it.
struct LentValue(Stored);

impl AsRef<[u8]> for LentValue {
    fn as_ref(&self) -> &[u8] {
        self.0.value()
    }
}

impl PartialEq for Stored {
    fn eq(&self, other: &Stored) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Stored {}

impl PartialOrd for Stored {
    fn partial_cmp(&self, other: &Stored) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Stored {
    fn cmp(&self, other: &Stored) -> Ordering {
        self.key().cmp(other.key())
    }
}

impl Borrow<[u8]> for Stored {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl fmt::Debug for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} => {:?}",
            Bytes::copy_from_slice(self.key()),
            Bytes::copy_from_slice(self.value())
        )
    }
}

/// A map's entries, ordered bytewise by key. `clone` is O(1) and a clone
/// is an immutable snapshot that shares every unchanged node (and every
/// entry). Keeps the sum of its keys' and values' sizes, which the
/// balancer splits partitions by (`split_bytes`, docs/dynatree.md).
#[derive(Clone, Default)]
pub struct Entries {
    set: imbl::OrdSet<Stored>,
    payload_bytes: u64,
}

impl Entries {
    /// No entries.
    pub fn new() -> Entries {
        Entries::default()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// The bytes of every key and value (no overhead counted).
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The entry of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&Stored> {
        self.set.get(key)
    }

    /// The value of `key`.
    pub fn value(&self, key: &[u8]) -> Option<Bytes> {
        self.get(key).map(Stored::value_bytes)
    }

    /// Whether `key` has an entry.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.set.contains(key)
    }

    /// Sets `key` to `value`; the previous value.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> Option<Bytes> {
        self.insert_stored(Stored::new(key, value))
            .map(|old| old.value_bytes())
    }

    /// Inserts `entry`; the entry it replaced.
    fn insert_stored(&mut self, entry: Stored) -> Option<Stored> {
        self.payload_bytes += entry.payload_bytes();
        let old = self.set.insert(entry);
        if let Some(old) = &old {
            self.payload_bytes -= old.payload_bytes();
        }
        old
    }

    /// Removes `key`; its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<Bytes> {
        let old = self.set.remove(key)?;
        self.payload_bytes -= old.payload_bytes();
        Some(old.value_bytes())
    }

    /// Every entry, ascending.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Stored> + '_ {
        self.set.iter()
    }

    /// The entries with keys within `bounds`, ascending (reversible).
    /// Bounds that cross, or are equal and not both included, are
    /// refused by the tree (a panic): callers check first.
    pub fn range<'a>(
        &'a self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
    ) -> impl DoubleEndedIterator<Item = &'a Stored> + 'a {
        self.set.range::<_, [u8]>(bounds)
    }

    /// The entry with the least key.
    pub fn first(&self) -> Option<&Stored> {
        self.set.get_min()
    }

    /// The entry with the greatest key.
    pub fn last(&self) -> Option<&Stored> {
        self.set.get_max()
    }

    /// These entries and `other`'s (`other`'s value where both hold a key).
    /// O(smaller · log larger).
    pub fn union(self, other: Entries) -> Entries {
        if self.len() >= other.len() {
            let mut all = self;
            for entry in other.set {
                all.insert_stored(entry);
            }
            all
        } else {
            let mut all = other;
            for entry in self.set {
                if !all.contains_key(entry.key()) {
                    all.insert_stored(entry);
                }
            }
            all
        }
    }

    /// The entries `keep` holds for, sharing them with these.
    pub fn filtered(&self, keep: impl Fn(&[u8]) -> bool) -> Entries {
        let set: imbl::OrdSet<Stored> =
            self.set.iter().filter(|e| keep(e.key())).cloned().collect();
        let payload_bytes = set.iter().map(Stored::payload_bytes).sum();
        Entries { set, payload_bytes }
    }

    /// The key of the first entry at which the entries before it hold at
    /// least `payload_bytes` bytes of keys and values (a walk in key
    /// order): where a partition splits by size.
    pub fn key_after_bytes(&self, payload_bytes: u64) -> Option<&[u8]> {
        let mut before = 0;
        for entry in self.set.iter() {
            if before >= payload_bytes {
                return Some(entry.key());
            }
            before += entry.payload_bytes();
        }
        None
    }
}

impl FromIterator<Entry> for Entries {
    fn from_iter<I: IntoIterator<Item = Entry>>(entries: I) -> Entries {
        let mut all = Entries::new();
        for (key, value) in entries {
            all.insert(&key, &value);
        }
        all
    }
}

impl PartialEq for Entries {
    fn eq(&self, other: &Entries) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| a.key() == b.key() && a.value() == b.value())
    }
}

impl Eq for Entries {}

impl fmt::Debug for Entries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Bytes serialized as serde bytes (as `Bytes` serializes).
struct AsBytes<'a>(&'a [u8]);

impl Serialize for AsBytes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

/// As a map of bytes to bytes: the encoding `imbl::OrdMap<Bytes, Bytes>`
/// had, so checkpoint files written before this type read back.
impl Serialize for Entries {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for entry in self.iter() {
            map.serialize_entry(&AsBytes(entry.key()), &AsBytes(entry.value()))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Entries, D::Error> {
        struct EntriesVisitor;

        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of byte strings to byte strings")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut access: M) -> Result<Entries, M::Error> {
                let mut entries = Entries::new();
                while let Some((key, value)) = access.next_entry::<Bytes, Bytes>()? {
                    entries.insert(&key, &value);
                }
                Ok(entries)
            }
        }

        deserializer.deserialize_map(EntriesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn an_entry_is_ordered_and_found_by_its_key_alone() {
        let mut entries = Entries::new();
        assert_eq!(entries.insert(b"b", b"2"), None);
        assert_eq!(entries.insert(b"a", b"1"), None);
        assert_eq!(entries.insert(b"", b"empty key"), None);
        assert_eq!(entries.insert(b"b", b"two"), Some(b("2")));
        assert_eq!(entries.value(b"b"), Some(b("two")));
        assert_eq!(entries.value(b"c"), None);
        let keys: Vec<&[u8]> = entries.iter().map(Stored::key).collect();
        assert_eq!(keys, [&b""[..], b"a", b"b"]);
        assert_eq!(entries.first().unwrap().value(), b"empty key");
        assert_eq!(entries.last().unwrap().to_entry(), (b("b"), b("two")));
        assert_eq!(entries.remove(b"a"), Some(b("1")));
        assert_eq!(entries.len(), 2);
    }

    #[test]
    fn a_clone_shares_entries_and_changes_alone() {
        let mut entries: Entries = [(b("k"), b("v"))].into_iter().collect();
        let snapshot = entries.clone();
        entries.insert(b"k", b"changed");
        assert_eq!(snapshot.value(b"k"), Some(b("v")));
        assert_eq!(entries.value(b"k"), Some(b("changed")));
    }

    #[test]
    fn large_values_are_lent_to_replies_small_ones_copied() {
        let mut entries = Entries::new();
        let large = vec![7u8; REPLY_COPY_BYTES_MAX + 1];
        entries.insert(b"large", &large);
        entries.insert(b"small", b"v");
        let stored = entries.get(b"large").unwrap().value().as_ptr();
        assert_eq!(entries.value(b"large").unwrap().as_ptr(), stored, "lent");
        let small = entries.get(b"small").unwrap().value().as_ptr();
        assert_ne!(entries.value(b"small").unwrap().as_ptr(), small, "copied");
        assert_eq!(entries.value(b"large").unwrap(), &large[..]);
    }

    #[test]
    fn the_encoding_is_the_one_checkpoints_had() {
        let before: imbl::OrdMap<Bytes, Bytes> =
            [(b("a"), b("1")), (b("b"), b(""))].into_iter().collect();
        let encoded = postcard::to_allocvec(&before).unwrap();
        let now: Entries = postcard::from_bytes(&encoded).unwrap();
        assert_eq!(now.value(b"a"), Some(b("1")));
        assert_eq!(now.value(b"b"), Some(b("")));
        assert_eq!(postcard::to_allocvec(&now).unwrap(), encoded);
    }

    #[test]
    fn range_bounds_follow_the_keys() {
        let entries: Entries = ["a", "b", "c", "d"].iter().map(|k| (b(k), b(k))).collect();
        let keys = |from, to| -> Vec<Vec<u8>> {
            entries
                .range((from, to))
                .map(|e| e.key().to_vec())
                .collect()
        };
        assert_eq!(
            keys(Bound::Excluded(&b"a"[..]), Bound::Included(&b"c"[..])),
            [b"b".to_vec(), b"c".to_vec()]
        );
        let back: Vec<&[u8]> = entries
            .range((Bound::Unbounded, Bound::Excluded(&b"c"[..])))
            .rev()
            .map(Stored::key)
            .collect();
        assert_eq!(back, [&b"b"[..], b"a"]);
    }

    proptest::proptest! {
        /// The byte count is the sum of the keys' and values' sizes after
        /// any inserts, overwrites, removes, unions, filters and
        /// decodes; the byte cut point splits it.
        #[test]
        fn payload_bytes_are_the_keys_and_values_held(
            ops in proptest::collection::vec(
                (proptest::bool::ANY, 0u8..32, proptest::collection::vec(0u8..255, 0..40)),
                0..200,
            ),
            other in proptest::collection::vec((0u8..48, 0usize..20), 0..40),
            cut in 0u64..4000,
        ) {
            let sum = |e: &Entries| -> u64 {
                e.iter().map(|x| (x.key().len() + x.value().len()) as u64).sum()
            };
            let mut entries = Entries::new();
            for (remove, key, value) in ops {
                if remove {
                    entries.remove(&[key]);
                } else {
                    entries.insert(&[key], &value);
                }
                proptest::prop_assert_eq!(entries.payload_bytes(), sum(&entries));
            }
            let other: Entries = other
                .into_iter()
                .map(|(k, n)| (Bytes::from(vec![k; 2]), Bytes::from(vec![k; n])))
                .collect();
            let both = entries.clone().union(other.clone());
            proptest::prop_assert_eq!(both.payload_bytes(), sum(&both));
            let both = other.union(entries.clone());
            proptest::prop_assert_eq!(both.payload_bytes(), sum(&both));
            let odd = entries.filtered(|k| k.first().is_some_and(|b| b % 2 == 1));
            proptest::prop_assert_eq!(odd.payload_bytes(), sum(&odd));
            let decoded: Entries =
                postcard::from_bytes(&postcard::to_allocvec(&entries).unwrap()).unwrap();
            proptest::prop_assert_eq!(decoded.payload_bytes(), entries.payload_bytes());
            if let Some(at) = entries.key_after_bytes(cut) {
                let before: u64 = entries
                    .iter()
                    .take_while(|e| e.key() < at)
                    .map(Stored::payload_bytes)
                    .sum();
                proptest::prop_assert!(before >= cut);
                let last = entries.iter().take_while(|e| e.key() < at).last();
                proptest::prop_assert!(last.is_none_or(|l| before - l.payload_bytes() < cut));
            } else {
                proptest::prop_assert!(
                    entries.payload_bytes() - entries.last().map_or(0, Stored::payload_bytes) < cut
                        || entries.is_empty()
                );
            }
        }
    }
}
