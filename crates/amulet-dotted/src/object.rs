//! A per-key object (DottedDB §IV-C; the clock library's dotted causal
//! container): the current versions, each a value tagged with the dot of
//! the update that wrote it (a delete writes no value), and the causal
//! context of versions seen and superseded.
//!
//! Stored objects are *stripped* of the context entries the node clock
//! already covers and *filled* again when read (Alg. 2), so at rest an
//! object usually holds its versions and nothing else.

use crate::dot::{Dot, ReplicaId};
use crate::node_clock::NodeClock;
use crate::version_vector::VersionVector;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An object: versions (dot → value, `None` for a delete) and a context.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Object {
    /// Concurrent versions (siblings); one after a write that saw the rest.
    versions: BTreeMap<Dot, Option<Bytes>>,
    /// What the object has seen, beyond its versions' own dots.
    context: VersionVector,
}

impl Object {
    /// The object of a key never written (or deleted and stripped).
    pub fn new() -> Object {
        Object::default()
    }

    /// An object of one version and a context.
    pub fn of(dot: Dot, value: Option<Bytes>, context: VersionVector) -> Object {
        Object {
            versions: BTreeMap::from([(dot, value)]),
            context,
        }
    }

    /// The versions, by dot.
    pub fn versions(&self) -> &BTreeMap<Dot, Option<Bytes>> {
        &self.versions
    }

    /// The causal context.
    pub fn context(&self) -> &VersionVector {
        &self.context
    }

    /// The values of the current versions (deletes left out): siblings
    /// when several.
    pub fn values(&self) -> Vec<Bytes> {
        self.versions.values().flatten().cloned().collect()
    }

    /// The context a client gets with a read: the object's context and
    /// its versions' dots, so a write with it supersedes every version
    /// read.
    pub fn read_context(&self) -> VersionVector {
        let mut vv = self.context.clone();
        for dot in self.versions.keys() {
            vv.raise(dot.id, dot.counter);
        }
        vv
    }

    /// Merge (Alg. 2 `merge`): the versions in both, plus each side's
    /// versions the other side has not seen; the contexts joined.
    pub fn merge(&self, other: &Object) -> Object {
        let mut versions = BTreeMap::new();
        for (dot, value) in &self.versions {
            if other.versions.contains_key(dot) || !other.context.covers(*dot) {
                versions.insert(*dot, value.clone());
            }
        }
        for (dot, value) in &other.versions {
            if !self.versions.contains_key(dot) && !self.context.covers(*dot) {
                versions.insert(*dot, value.clone());
            }
        }
        let mut context = self.context.clone();
        context.join(&other.context);
        Object { versions, context }
    }

    /// Drops the versions `context` has seen and joins it into the
    /// object's context (what a write does with the client's context).
    pub fn discard(&mut self, context: &VersionVector) {
        self.versions.retain(|dot, _| !context.covers(*dot));
        self.context.join(context);
    }

    /// Adds the version `dot` (a new dot of this coordinator, after
    /// [`Object::discard`]) and raises the context to it.
    pub fn add(&mut self, dot: Dot, value: Option<Bytes>) {
        self.versions.insert(dot, value);
        self.context.raise(dot.id, dot.counter);
    }

    /// Strip (Alg. 2): drops the context entries the node clock's bases
    /// cover; they come back with [`Object::fill`].
    pub fn strip(&mut self, clock: &NodeClock) {
        self.context.retain(|id, c| c > clock.base(id));
    }

    /// Fill (Alg. 2): raises the context to the node clock's base for
    /// each of the key's replica ids. Everything it adds is either an
    /// older version of this key the clock saw or another key's dot, so a
    /// filled context is never wrong, only larger.
    pub fn fill(&mut self, clock: &NodeClock, replicas: &[ReplicaId]) {
        for &id in replicas {
            self.context.raise(id, clock.base(id));
        }
    }

    /// Raises the context entry of `id` to at least `counter`.
    pub(crate) fn raise_context(&mut self, id: ReplicaId, counter: u64) {
        self.context.raise(id, counter);
    }

    /// Keeps the context entries for which `keep` holds.
    pub(crate) fn retain_context(&mut self, keep: impl FnMut(ReplicaId, u64) -> bool) {
        self.context.retain(keep);
    }

    /// Whether storage may forget the object (Alg. 2 `store`): no value
    /// and no context left after stripping; the node clock is its
    /// tombstone.
    pub fn is_forgettable(&self) -> bool {
        self.versions.values().all(Option::is_none) && self.context.is_empty()
    }

    /// Bytes of the object's clock as metrics count it: 16 per version dot
    /// and per context entry.
    pub fn clock_bytes(&self) -> usize {
        16 * (self.versions.len() + self.context.len())
    }

    /// Bytes of values held (for metrics and sync budgets).
    pub fn value_bytes(&self) -> usize {
        self.versions.values().flatten().map(Bytes::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{clock, id};

    fn vv(entries: &[(char, u64)]) -> VersionVector {
        entries.iter().map(|&(n, c)| (id(n), c)).collect()
    }

    fn obj(versions: &[(char, u64, &'static str)], context: &[(char, u64)]) -> Object {
        Object {
            versions: versions
                .iter()
                .map(|&(n, c, v)| (Dot::new(id(n), c), Some(Bytes::from_static(v.as_bytes()))))
                .collect(),
            context: vv(context),
        }
    }

    // Vectors from the authors' clock library (swc_kv's eunit tests: d1
    // to d5, sync, discard, strip, fill, add).

    fn d3() -> Object {
        obj(
            &[
                ('a', 1, "black"),
                ('a', 3, "red"),
                ('b', 1, "green"),
                ('b', 2, "green"),
            ],
            &[('a', 4), ('b', 7)],
        )
    }

    fn d4() -> Object {
        obj(
            &[
                ('a', 2, "gray"),
                ('a', 3, "red"),
                ('a', 5, "red"),
                ('b', 2, "green"),
            ],
            &[('a', 5), ('b', 5)],
        )
    }

    fn d5() -> Object {
        obj(&[('a', 5, "gray")], &[('a', 5), ('b', 5), ('c', 4)])
    }

    #[test]
    fn dotteddb_iv_f_merge_keeps_what_the_other_side_has_not_seen() {
        assert_eq!(d3().merge(&d3()), d3());
        assert_eq!(d4().merge(&d4()), d4());
        let d34 = obj(
            &[('a', 3, "red"), ('a', 5, "red"), ('b', 2, "green")],
            &[('a', 5), ('b', 7)],
        );
        assert_eq!(d3().merge(&d4()), d34);
        assert_eq!(d4().merge(&d3()), d34);
    }

    #[test]
    fn dotteddb_iv_e_a_write_discards_the_versions_its_context_saw() {
        let mut d = d3();
        d.discard(&VersionVector::new());
        assert_eq!(d, d3());
        let mut d = d3();
        d.discard(&vv(&[('a', 2), ('b', 15), ('c', 15)]));
        assert_eq!(
            d,
            obj(&[('a', 3, "red")], &[('a', 4), ('b', 15), ('c', 15)])
        );
        let mut d = d3();
        d.discard(&vv(&[('a', 3), ('b', 15), ('c', 15)]));
        assert_eq!(d, obj(&[], &[('a', 4), ('b', 15), ('c', 15)]));
    }

    #[test]
    fn dotteddb_iv_c_strip_drops_what_the_node_clock_base_covers() {
        let strip = |c: NodeClock| {
            let mut d = d5();
            d.strip(&c);
            d
        };
        assert_eq!(strip(clock(&[('a', 4, 4)])), d5());
        assert_eq!(
            strip(clock(&[('a', 5, 0)])),
            obj(&[('a', 5, "gray")], &[('b', 5), ('c', 4)])
        );
        assert_eq!(
            strip(clock(&[('a', 15, 0)])),
            obj(&[('a', 5, "gray")], &[('b', 5), ('c', 4)])
        );
        assert_eq!(
            strip(clock(&[('a', 15, 4), ('b', 1, 2)])),
            obj(&[('a', 5, "gray")], &[('b', 5), ('c', 4)])
        );
        assert_eq!(
            strip(clock(&[('b', 15, 4), ('c', 1, 2)])),
            obj(&[('a', 5, "gray")], &[('a', 5), ('c', 4)])
        );
        assert_eq!(
            strip(clock(&[('a', 15, 4), ('b', 15, 4), ('c', 5, 2)])),
            obj(&[('a', 5, "gray")], &[])
        );
    }

    #[test]
    fn dotteddb_iv_c_fill_raises_the_context_to_the_node_clock_base() {
        let all = [id('a'), id('b'), id('c'), id('d'), id('f')];
        let fill = |c: NodeClock, ids: &[ReplicaId]| {
            let mut d = d5();
            d.fill(&c, ids);
            d
        };
        let gray = [('a', 5, "gray")];
        assert_eq!(fill(clock(&[('a', 4, 4)]), &all), d5());
        assert_eq!(fill(clock(&[('a', 5, 0)]), &all), d5());
        assert_eq!(
            fill(clock(&[('a', 6, 0)]), &all),
            obj(&gray, &[('a', 6), ('b', 5), ('c', 4)])
        );
        assert_eq!(
            fill(clock(&[('a', 15, 12)]), &all),
            obj(&gray, &[('a', 15), ('b', 5), ('c', 4)])
        );
        assert_eq!(
            fill(clock(&[('b', 15, 12)]), &all),
            obj(&gray, &[('a', 5), ('b', 15), ('c', 4)])
        );
        assert_eq!(
            fill(clock(&[('d', 15, 12)]), &all),
            obj(&gray, &[('a', 5), ('b', 5), ('c', 4), ('d', 15)])
        );
        let two = clock(&[('a', 9, 6), ('d', 15, 12)]);
        assert_eq!(
            fill(two.clone(), &all),
            obj(&gray, &[('a', 9), ('b', 5), ('c', 4), ('d', 15)])
        );
        assert_eq!(
            fill(two.clone(), &[id('a')]),
            obj(&gray, &[('a', 9), ('b', 5), ('c', 4)])
        );
        assert_eq!(
            fill(two.clone(), &[id('b'), id('a')]),
            obj(&gray, &[('a', 9), ('b', 5), ('c', 4)])
        );
        assert_eq!(
            fill(two.clone(), &[id('d'), id('a')]),
            obj(&gray, &[('a', 9), ('b', 5), ('c', 4), ('d', 15)])
        );
        assert_eq!(fill(two.clone(), &[id('b')]), d5());
        assert_eq!(fill(two, &[id('f')]), d5());
    }

    #[test]
    fn dotteddb_iv_f_a_delete_with_no_context_left_is_forgettable() {
        let mut deleted = Object::of(Dot::new(id('a'), 3), None, vv(&[('a', 3)]));
        assert!(!deleted.is_forgettable(), "its context is not stripped yet");
        deleted.strip(&clock(&[('a', 3, 0)]));
        assert!(deleted.is_forgettable());
        assert!(!d5().is_forgettable());
        assert!(Object::new().is_forgettable());
    }
}
