//! The keys a read looked at: a transaction's read conflict ranges
//! (docs/transactions.md).

use crate::{KeyBound, KeyRange, MapCommand, MapReply, Nearest};
use bytes::Bytes;

/// The keys read-only `command` looks at (all of its map for `size`,
/// `first`, ...): its read conflict range in a transaction, before a
/// limit cuts it short.
pub fn read_range(command: &MapCommand) -> KeyRange {
    use MapCommand::*;
    let bound = |key: &Bytes, inclusive| {
        Some(KeyBound {
            key: key.clone(),
            inclusive,
        })
    };
    match command {
        Get { key, .. } | ContainsKey { key, .. } => KeyRange::single(key.clone()),
        Range { range, .. } => KeyRange {
            from: range.from.clone(),
            to: range.to.clone(),
        },
        NearestEntry { key, nearest, .. } => match nearest {
            Nearest::Floor => KeyRange {
                from: None,
                to: bound(key, true),
            },
            Nearest::Lower => KeyRange {
                from: None,
                to: bound(key, false),
            },
            Nearest::Ceiling => KeyRange {
                from: bound(key, true),
                to: None,
            },
            Nearest::Higher => KeyRange {
                from: bound(key, false),
                to: None,
            },
        },
        _ => KeyRange {
            from: None,
            to: None,
        },
    }
}

/// The keys read-only `command` looked at to give `reply`: its read
/// conflict range in a transaction. A range read the limit cut short
/// covers its range only up to the last entry returned; first, last and
/// the neighbours of a key cover up to the entry found (FoundationDB's
/// rule: what was not looked at cannot conflict).
pub fn conflict_range(command: &MapCommand, reply: &MapReply) -> KeyRange {
    use MapCommand::*;
    let bound = |key: &Bytes, inclusive| {
        Some(KeyBound {
            key: key.clone(),
            inclusive,
        })
    };
    let found = match reply {
        MapReply::Entry(Some((key, _))) => Some(key),
        _ => None,
    };
    match (command, found) {
        (FirstEntry { .. }, Some(key)) => KeyRange {
            from: None,
            to: bound(key, true),
        },
        (LastEntry { .. }, Some(key)) => KeyRange {
            from: bound(key, true),
            to: None,
        },
        (NearestEntry { key, nearest, .. }, Some(found)) => match nearest {
            Nearest::Floor => KeyRange {
                from: bound(found, true),
                to: bound(key, true),
            },
            Nearest::Lower => KeyRange {
                from: bound(found, true),
                to: bound(key, false),
            },
            Nearest::Ceiling => KeyRange {
                from: bound(key, true),
                to: bound(found, true),
            },
            Nearest::Higher => KeyRange {
                from: bound(key, false),
                to: bound(found, true),
            },
        },
        (Range { range, .. }, _) => match reply {
            MapReply::Entries {
                entries,
                more: true,
            } if !entries.is_empty() => {
                let last = &entries[entries.len() - 1].0;
                if range.reverse {
                    KeyRange {
                        from: bound(last, true),
                        to: range.to.clone(),
                    }
                } else {
                    KeyRange {
                        from: range.from.clone(),
                        to: bound(last, true),
                    }
                }
            }
            _ => read_range(command),
        },
        _ => read_range(command),
    }
}
