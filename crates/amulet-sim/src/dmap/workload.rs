//! The operations simulated clients draw: a small key space (so whole-map
//! operations stay checkable) and every kind of map command.

use crate::dmap::MapOp;
use crate::rng::Rng;
use amulet_dmap::{KeyBound, MapCommand, MapName, Nearest, RangeQuery};
use bytes::Bytes;

/// Keys are single letters `a..=f`.
const KEYS: u64 = 6;
/// Values are `0..4`.
const VALUES: u64 = 4;

/// The simulated map.
pub fn map_name() -> MapName {
    MapName::new("sim").expect("valid name")
}

fn key(rng: &mut Rng) -> Bytes {
    Bytes::from(vec![b'a' + rng.below(KEYS) as u8])
}

fn value(rng: &mut Rng) -> Bytes {
    Bytes::from(vec![b'0' + rng.below(VALUES) as u8])
}

fn bound(rng: &mut Rng) -> Option<KeyBound> {
    rng.chance(0.7).then(|| KeyBound {
        key: key(rng),
        inclusive: rng.chance(0.5),
    })
}

/// Draws the next operation.
pub fn draw(rng: &mut Rng) -> MapOp {
    let map = map_name();
    let command = match rng.below(100) {
        0..=21 => MapCommand::Put {
            map,
            key: key(rng),
            value: value(rng),
        },
        22..=35 => MapCommand::Get { map, key: key(rng) },
        36..=42 => MapCommand::Remove { map, key: key(rng) },
        43..=48 => MapCommand::PutIfAbsent {
            map,
            key: key(rng),
            value: value(rng),
        },
        49..=52 => MapCommand::Replace {
            map,
            key: key(rng),
            value: value(rng),
        },
        53..=56 => MapCommand::ReplaceIfEquals {
            map,
            key: key(rng),
            expected: value(rng),
            value: value(rng),
        },
        57..=59 => MapCommand::RemoveIfEquals {
            map,
            key: key(rng),
            expected: value(rng),
        },
        60..=62 => MapCommand::ContainsKey { map, key: key(rng) },
        63..=67 => {
            let entries = (0..rng.range(1, 3))
                .map(|_| (key(rng), value(rng)))
                .collect();
            MapCommand::PutAll { map, entries }
        }
        68..=72 => MapCommand::Size { map },
        73..=74 => MapCommand::IsEmpty { map },
        75..=76 => MapCommand::ContainsValue {
            map,
            value: value(rng),
        },
        77 => MapCommand::Clear { map },
        78..=79 => MapCommand::FirstEntry { map },
        80..=81 => MapCommand::LastEntry { map },
        82..=86 => {
            let nearest = *rng
                .pick(&[
                    Nearest::Floor,
                    Nearest::Ceiling,
                    Nearest::Higher,
                    Nearest::Lower,
                ])
                .expect("not empty");
            MapCommand::NearestEntry {
                map,
                key: key(rng),
                nearest,
            }
        }
        87..=93 => {
            let (mut from, mut to) = (bound(rng), bound(rng));
            if let (Some(f), Some(t)) = (&from, &to) {
                if f.key > t.key {
                    std::mem::swap(&mut from, &mut to);
                }
            }
            MapCommand::Range {
                map,
                range: RangeQuery {
                    from,
                    to,
                    limit: rng.range(1, 4) as u32,
                    reverse: rng.chance(0.3),
                },
            }
        }
        _ => return MapOp::Scan,
    };
    MapOp::Command(command)
}

/// Field names are `x`, `y` and `z`.
const FIELDS: u64 = 3;

fn field_name(rng: &mut Rng) -> Bytes {
    Bytes::from(vec![b'x' + rng.below(FIELDS) as u8])
}

/// A field record of up to three fields (docs/field-records.md).
fn record(rng: &mut Rng) -> Bytes {
    let fields: amulet_dmap::field_record::Fields = (0..rng.below(FIELDS + 1))
        .map(|_| (field_name(rng), value(rng)))
        .collect();
    Bytes::from(amulet_dmap::field_record::encode(&fields))
}

/// Draws the next operation of a client that also uses field records: a
/// third are puts of records or merges of one to three fields (set or
/// removed; a name may repeat, which the edge refuses), the rest as
/// [`draw`]. Plain values stay among the keys, so merges meet values that
/// are not records too.
pub fn draw_with_fields(rng: &mut Rng) -> MapOp {
    let map = map_name();
    let command = match rng.below(6) {
        0 => MapCommand::Put {
            map,
            key: key(rng),
            value: record(rng),
        },
        1 => MapCommand::MergeFields {
            map,
            key: key(rng),
            fields: (0..rng.range(1, 4))
                .map(|_| (field_name(rng), rng.chance(0.75).then(|| value(rng))))
                .collect(),
        },
        _ => return draw(rng),
    };
    MapOp::Command(command)
}

/// The logs of `amulet-sim --logs`, created before the run.
pub fn log_names() -> Vec<MapName> {
    ["la", "lb"]
        .iter()
        .map(|n| MapName::new(*n).expect("valid name"))
        .collect()
}

fn log_name(rng: &mut Rng) -> MapName {
    log_names()[rng.below(2) as usize].clone()
}

/// Draws the next operation of a client that also uses logs (DLog,
/// docs/logs.md): half are log commands (appends, multi-appends over one
/// or both logs, reads and trims at positions near the logs' small
/// ends, so some are trimmed or past the end, and bounds), the rest as
/// [`draw`].
pub fn draw_with_logs(rng: &mut Rng) -> MapOp {
    let log = log_name(rng);
    let command = match rng.below(12) {
        0..=2 => MapCommand::Append {
            log,
            value: value(rng),
        },
        3 => MapCommand::MultiAppend {
            appends: (0..rng.range(1, 4))
                .map(|_| (log_name(rng), value(rng)))
                .collect(),
        },
        4 => MapCommand::ReadLog {
            log,
            from: rng.below(12),
            max_entries: rng.range(1, 5) as u32,
        },
        5 => {
            if rng.chance(0.3) {
                MapCommand::TrimLog {
                    log,
                    below: rng.below(10),
                }
            } else {
                MapCommand::LogBounds { log }
            }
        }
        _ => return draw(rng),
    };
    MapOp::Command(command)
}

/// Creates or drops one of two other maps: each changes the partition
/// map's version, so every client's in-flight command meets a stale map.
pub fn draw_map_churn(rng: &mut Rng) -> MapCommand {
    let map = MapName::new(format!("churn-{}", rng.below(2))).expect("valid name");
    if rng.chance(0.5) {
        MapCommand::CreateMap {
            map,
            layout: amulet_smr::Layout::Hash,
        }
    } else {
        MapCommand::DropMap { map }
    }
}
