//! Field records: a value made of named fields, which `MergeFields` changes
//! in place in one ordered command (a YCSB update, a document's partial
//! update) instead of a read followed by a compare-and-set.
//!
//! Encoding (docs/field-records.md): the fields in ascending bytewise
//! order of their names, names unique, each as
//! `[name length: u32 BE][name][value length: u32 BE][value]`. The empty
//! value is the record with no fields. The decoder is total: anything
//! else is refused as [`MapError::NotARecord`] and nothing changes.

use crate::MapError;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Bytes of each length prefix.
const LENGTH_BYTES: usize = 4;

/// A record's fields by name.
pub type Fields = BTreeMap<Bytes, Bytes>;

/// The fields of `value`, or why it is not a record.
pub fn decode(value: &[u8]) -> Result<Fields, MapError> {
    let mut fields = Fields::new();
    let mut rest = value;
    let mut last: Option<&[u8]> = None;
    while !rest.is_empty() {
        let (name, after_name) = take(rest, "a field name")?;
        let (field, after_value) = take(after_name, "a field value")?;
        if last.is_some_and(|last| last >= name) {
            return Err(not_a_record(
                "field names are not unique and in ascending order",
            ));
        }
        last = Some(name);
        fields.insert(Bytes::copy_from_slice(name), Bytes::copy_from_slice(field));
        rest = after_value;
    }
    Ok(fields)
}

/// One length-prefixed part of `bytes`, and what follows it.
fn take<'a>(bytes: &'a [u8], what: &str) -> Result<(&'a [u8], &'a [u8]), MapError> {
    let Some((length, rest)) = bytes.split_first_chunk::<LENGTH_BYTES>() else {
        return Err(not_a_record(&format!("{what}'s length is cut short")));
    };
    let length = u32::from_be_bytes(*length) as usize;
    if rest.len() < length {
        return Err(not_a_record(&format!(
            "{what} of {length} bytes with {} left",
            rest.len()
        )));
    }
    Ok(rest.split_at(length))
}

fn not_a_record(why: &str) -> MapError {
    MapError::NotARecord(why.to_string())
}

/// The encoding of `fields` (ascending by name, as a `BTreeMap` iterates).
pub fn encode(fields: &Fields) -> Vec<u8> {
    let size = fields
        .iter()
        .map(|(name, value)| 2 * LENGTH_BYTES + name.len() + value.len())
        .sum();
    let mut out = Vec::with_capacity(size);
    for (name, value) in fields {
        out.extend_from_slice(&length(name).to_be_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&length(value).to_be_bytes());
        out.extend_from_slice(value);
    }
    out
}

fn length(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.len()).expect("fields are bounded by the value limit, far below 4 GiB")
}

/// `record` with `changes` applied in order: a field with a value is set,
/// one without is removed.
pub fn merge(record: &[u8], changes: &[(Bytes, Option<Bytes>)]) -> Result<Vec<u8>, MapError> {
    let mut fields = decode(record)?;
    for (name, value) in changes {
        match value {
            Some(value) => {
                fields.insert(name.clone(), value.clone());
            }
            None => {
                fields.remove(name);
            }
        }
    }
    Ok(encode(&fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn a_merge_sets_and_removes_fields_and_keeps_the_others() {
        let record = encode(&[(b("a"), b("1")), (b("b"), b("2"))].into_iter().collect());
        let merged = merge(
            &record,
            &[
                (b("c"), Some(b("3"))),
                (b("a"), None),
                (b("b"), Some(b("two"))),
            ],
        )
        .unwrap();
        let fields = decode(&merged).unwrap();
        assert_eq!(
            fields.into_iter().collect::<Vec<_>>(),
            [(b("b"), b("two")), (b("c"), b("3"))]
        );
        assert_eq!(decode(b"").unwrap(), Fields::new(), "the empty record");
    }

    #[test]
    fn what_is_not_a_record_is_refused() {
        let one = encode(&[(b("a"), b("1"))].into_iter().collect());
        for bad in [
            &one[..one.len() - 1],                    // value cut short
            &one[..3],                                // length cut short
            &[one.clone(), one.clone()].concat()[..], // name twice
        ] {
            assert!(
                matches!(decode(bad), Err(MapError::NotARecord(_))),
                "{bad:?}"
            );
        }
        let descending = [
            encode(&[(b("b"), b("2"))].into_iter().collect()),
            encode(&[(b("a"), b("1"))].into_iter().collect()),
        ]
        .concat();
        assert!(matches!(decode(&descending), Err(MapError::NotARecord(_))));
    }

    proptest! {
        #[test]
        fn decode_is_total_and_inverts_encode(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                              fields in proptest::collection::btree_map(
                                                  proptest::collection::vec(any::<u8>(), 0..8),
                                                  proptest::collection::vec(any::<u8>(), 0..8), 0..6)) {
            let _ = decode(&bytes);
            let fields: Fields = fields.into_iter().map(|(k, v)| (Bytes::from(k), Bytes::from(v))).collect();
            prop_assert_eq!(decode(&encode(&fields)).unwrap(), fields);
        }
    }
}
