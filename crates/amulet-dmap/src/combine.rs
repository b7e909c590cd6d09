//! Combining the partial replies of a command that ran in several
//! partitions into the client's reply. Deterministic and independent of
//! the order partials are given in.

use crate::{Entry, MapCommand, MapReply};

/// The reply to `command` given every involved partition's partial reply.
/// A failure in any partition is the reply (failures are decided by
/// replicated state, e.g. an unknown map, so they agree across partitions;
/// the least one is taken so the choice never depends on partial order).
///
/// Panics when `partials` is empty or a partial has a shape `command`
/// cannot produce: both are bugs of the replication layer.
pub fn combine(command: &MapCommand, partials: &[MapReply]) -> MapReply {
    assert!(
        !partials.is_empty(),
        "a command runs in at least one partition"
    );
    if let Some(failure) = partials
        .iter()
        .filter_map(|p| match p {
            MapReply::Failed(e) => Some(e),
            _ => None,
        })
        .min_by_key(|e| e.to_string())
    {
        return MapReply::Failed(failure.clone());
    }
    if partials.len() == 1 {
        return partials[0].clone();
    }
    use MapCommand::*;
    match command {
        Size { .. } => MapReply::Count(partials.iter().map(count).sum()),
        IsEmpty { .. } => MapReply::Flag(partials.iter().all(flag)),
        ContainsValue { .. } => MapReply::Flag(partials.iter().any(flag)),
        FirstEntry { .. } => MapReply::Entry(pick(partials, false)),
        LastEntry { .. } => MapReply::Entry(pick(partials, true)),
        NearestEntry { nearest, .. } => MapReply::Entry(pick(partials, nearest.wants_greatest())),
        Range { range, .. } => merge_ranges(partials, range.limit as usize, range.reverse),
        CreateMap { .. }
        | DropMap { .. }
        | PutAll { .. }
        | Clear { .. }
        | ReleaseSnapshot { .. }
        | RegisterEventualStore { .. }
        | EndTransaction { .. }
        | CreateLog { .. }
        | DropLog { .. } => MapReply::Done,
        MultiAppend { appends } => merge_positions(partials, appends.len()),
        OpenSnapshot { .. } | BeginTransaction { .. } => {
            let first = &partials[0];
            assert!(
                partials.iter().all(|p| p == first),
                "partitions gave one snapshot or read version different ids: {partials:?}"
            );
            first.clone()
        }
        _ => panic!(
            "single-partition command {command:?} got {} partials",
            partials.len()
        ),
    }
}

/// Each entry of a multi-append was appended by the one partition that
/// owns its log: exactly one partial names its position.
fn merge_positions(partials: &[MapReply], entries: usize) -> MapReply {
    let mut positions = vec![None; entries];
    for partial in partials {
        match partial {
            MapReply::Positions(theirs) if theirs.len() == entries => {
                for (mine, theirs) in positions.iter_mut().zip(theirs) {
                    if let Some(position) = theirs {
                        assert!(mine.is_none(), "two partitions appended one entry");
                        *mine = Some(*position);
                    }
                }
            }
            other => panic!("expected {entries} positions, got {other:?}"),
        }
    }
    MapReply::Positions(positions)
}

fn count(partial: &MapReply) -> u64 {
    match partial {
        MapReply::Count(n) => *n,
        other => panic!("expected a count, got {other:?}"),
    }
}

fn flag(partial: &MapReply) -> bool {
    match partial {
        MapReply::Flag(b) => *b,
        other => panic!("expected a flag, got {other:?}"),
    }
}

fn pick(partials: &[MapReply], greatest: bool) -> Option<Entry> {
    let candidates = partials.iter().filter_map(|p| match p {
        MapReply::Entry(e) => e.clone(),
        other => panic!("expected an entry, got {other:?}"),
    });
    if greatest {
        candidates.max_by(|a, b| a.0.cmp(&b.0))
    } else {
        candidates.min_by(|a, b| a.0.cmp(&b.0))
    }
}

fn merge_ranges(partials: &[MapReply], limit: usize, reverse: bool) -> MapReply {
    let mut all: Vec<Entry> = Vec::new();
    let mut more = false;
    for partial in partials {
        match partial {
            MapReply::Entries { entries, more: m } => {
                all.extend(entries.iter().cloned());
                more |= *m;
            }
            other => panic!("expected entries, got {other:?}"),
        }
    }
    // Partitions hold disjoint keys, so sorting by key alone is total.
    all.sort_by(|a, b| {
        if reverse {
            b.0.cmp(&a.0)
        } else {
            a.0.cmp(&b.0)
        }
    });
    if all.len() > limit {
        all.truncate(limit);
        more = true;
    }
    MapReply::Entries { entries: all, more }
}
