//! An object's causal context (DottedDB §IV-C): the biggest counter per
//! replica id of the versions it has seen. Dots are issued per replica, not
//! per key, so the context's counters are rarely contiguous for one key,
//! but the gaps are other keys' dots, so the largest dot per id (a version
//! vector) says the same as the full set.
//!
//! Clients carry it as an opaque context: [`VersionVector::encode`] and
//! the total decoder [`VersionVector::decode`].

use crate::dot::{Dot, ReplicaId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Entries a context decoded from a client may hold (a context names the
/// replicas of one key over its history: a handful, and old ones are
/// stripped).
pub const CONTEXT_ENTRIES_MAX: usize = 1024;

/// First byte of an encoded context (its format version).
const CONTEXT_FORMAT: u8 = 1;

/// A version vector: replica id → largest counter seen (absent = 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VersionVector {
    /// Zero counters are never stored.
    counters: BTreeMap<ReplicaId, u64>,
}

/// Why client context bytes were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContextError {
    /// Not a context this version writes (bad format byte or encoding).
    Malformed(String),
    /// More entries than [`CONTEXT_ENTRIES_MAX`].
    TooLarge(usize),
}

impl std::fmt::Display for ContextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContextError::Malformed(why) => write!(f, "malformed causal context: {why}"),
            ContextError::TooLarge(n) => write!(
                f,
                "causal context with {n} entries (at most {CONTEXT_ENTRIES_MAX})"
            ),
        }
    }
}

impl std::error::Error for ContextError {}

impl VersionVector {
    /// The empty context (a write that saw nothing: a new key, or a blind
    /// write that keeps every version as a sibling).
    pub fn new() -> VersionVector {
        VersionVector::default()
    }

    /// The counter of `id` (0 when absent).
    pub fn get(&self, id: ReplicaId) -> u64 {
        self.counters.get(&id).copied().unwrap_or(0)
    }

    /// Whether the context has seen `dot`.
    pub fn covers(&self, dot: Dot) -> bool {
        dot.counter <= self.get(dot.id)
    }

    /// Raises `id`'s counter to at least `counter`.
    pub fn raise(&mut self, id: ReplicaId, counter: u64) {
        if counter > 0 {
            let c = self.counters.entry(id).or_insert(0);
            *c = (*c).max(counter);
        }
    }

    /// Pointwise maximum with `other`.
    pub fn join(&mut self, other: &VersionVector) {
        for (id, c) in &other.counters {
            self.raise(*id, *c);
        }
    }

    /// Keeps the entries for which `keep(id, counter)` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(ReplicaId, u64) -> bool) {
        self.counters.retain(|id, c| keep(*id, *c));
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    /// The entries, by id.
    pub fn iter(&self) -> impl Iterator<Item = (ReplicaId, u64)> + '_ {
        self.counters.iter().map(|(id, c)| (*id, *c))
    }

    /// The opaque bytes a client gets and gives back.
    pub fn encode(&self) -> Vec<u8> {
        let pairs: Vec<(u64, u64)> = self.counters.iter().map(|(id, c)| (id.0, *c)).collect();
        let mut out = vec![CONTEXT_FORMAT];
        out.extend(postcard::to_allocvec(&pairs).expect("a vector of pairs encodes"));
        out
    }

    /// The context in `bytes` (total: every input is a context or an
    /// error). The empty input is the empty context.
    pub fn decode(bytes: &[u8]) -> Result<VersionVector, ContextError> {
        let Some((&format, body)) = bytes.split_first() else {
            return Ok(VersionVector::new());
        };
        if format != CONTEXT_FORMAT {
            return Err(ContextError::Malformed(format!("format {format}")));
        }
        // The length prefix is checked before postcard allocates for it.
        let (count, _) = postcard::take_from_bytes::<u32>(body)
            .map_err(|e| ContextError::Malformed(e.to_string()))?;
        if count as usize > CONTEXT_ENTRIES_MAX {
            return Err(ContextError::TooLarge(count as usize));
        }
        let (pairs, rest) = postcard::take_from_bytes::<Vec<(u64, u64)>>(body)
            .map_err(|e| ContextError::Malformed(e.to_string()))?;
        if !rest.is_empty() {
            return Err(ContextError::Malformed(format!(
                "{} bytes after the context",
                rest.len()
            )));
        }
        let mut vv = VersionVector::new();
        let mut last = None;
        for (id, c) in pairs {
            if last.is_some_and(|l| l >= id) {
                return Err(ContextError::Malformed("ids out of order".into()));
            }
            if c == 0 {
                return Err(ContextError::Malformed("a zero counter".into()));
            }
            last = Some(id);
            vv.counters.insert(ReplicaId(id), c);
        }
        Ok(vv)
    }
}

impl FromIterator<(ReplicaId, u64)> for VersionVector {
    fn from_iter<I: IntoIterator<Item = (ReplicaId, u64)>>(iter: I) -> VersionVector {
        let mut vv = VersionVector::new();
        for (id, c) in iter {
            vv.raise(id, c);
        }
        vv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_encodes_and_decodes_to_itself() {
        let vv: VersionVector = [(ReplicaId(3), 9), (ReplicaId(1), 4)].into_iter().collect();
        assert_eq!(VersionVector::decode(&vv.encode()), Ok(vv));
        assert_eq!(VersionVector::decode(&[]), Ok(VersionVector::new()));
        assert_eq!(
            VersionVector::decode(&VersionVector::new().encode()),
            Ok(VersionVector::new())
        );
    }

    #[test]
    fn every_damaged_context_is_an_error_not_a_panic() {
        let vv: VersionVector = [(ReplicaId(3), 9), (ReplicaId(1), 4)].into_iter().collect();
        let good = vv.encode();
        for cut in 1..good.len() {
            assert!(VersionVector::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(VersionVector::decode(&trailing).is_err());
        assert!(VersionVector::decode(&[9, 0]).is_err());
        // Out of order, zero counters, too many entries.
        let raw = |pairs: &[(u64, u64)]| {
            let mut b = vec![CONTEXT_FORMAT];
            b.extend(postcard::to_allocvec(pairs).unwrap());
            b
        };
        assert!(VersionVector::decode(&raw(&[(2, 1), (1, 1)])).is_err());
        assert!(VersionVector::decode(&raw(&[(1, 0)])).is_err());
        let many: Vec<(u64, u64)> = (0..CONTEXT_ENTRIES_MAX as u64 + 1)
            .map(|i| (i, 1))
            .collect();
        assert_eq!(
            VersionVector::decode(&raw(&many)),
            Err(ContextError::TooLarge(CONTEXT_ENTRIES_MAX + 1))
        );
        // A length prefix claiming 2^32 entries is refused before any
        // allocation.
        assert!(VersionVector::decode(&[CONTEXT_FORMAT, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
