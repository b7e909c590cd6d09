//! The operator's reconfiguration subcommands (`amulet split`, `merge`,
//! `replace-stream`, `replace-global-stream`, `move`): the change each asks for, built on the
//! freshest map at every attempt, and for a move the wait until the old
//! replicas have handed the partition off.

use crate::client_commands::Op;
use amulet_api::storage_from_name;
use amulet_client::{Bytes, Client};
use amulet_smr::{Reconfiguration, StreamSpec};
use amulet_types::{NodeId, PartitionId, StreamId};
use std::collections::BTreeMap;
use std::time::Duration;

/// The change an operator subcommand asks for, on `map`: ids not given
/// are allocated from it (and above the streams in `configured`).
pub(crate) fn reconfiguration(
    map: &amulet_smr::PartitionMap,
    op: &Op,
    configured: &[StreamId],
) -> anyhow::Result<Reconfiguration> {
    let new_stream = |given: &Option<u32>| {
        given.map_or_else(|| map.next_stream_id(configured.iter().copied()), StreamId)
    };
    let replicas_of = |p: u32| -> anyhow::Result<Vec<NodeId>> {
        map.partitions
            .get(&PartitionId(p))
            .map(|info| info.replicas.clone())
            .ok_or_else(|| anyhow::anyhow!("no partition {p} in map version {}", map.version.0))
    };
    let storage_of = |name: &str| {
        storage_from_name(name)
            .ok_or_else(|| anyhow::anyhow!("storage {name:?}: expected memory, async or sync"))
    };
    Ok(match op {
        Op::Split {
            source,
            new,
            stream,
            at_token,
            at_key,
            storage,
        } => {
            let replicas = replicas_of(*source)?;
            let at_token = match at_token {
                Some(t) => Some(*t),
                None => middle_of_first_segment(map, PartitionId(*source)),
            };
            let mut at_keys = Vec::new();
            for cut in at_key {
                let (name, key) = cut
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--at-key {cut:?}: expected MAP=KEY"))?;
                at_keys.push((name.to_string(), Bytes::from(key.to_string())));
            }
            Reconfiguration::Split {
                source: PartitionId(*source),
                new: new.map_or_else(|| map.next_partition_id(), PartitionId),
                stream: StreamSpec {
                    stream: new_stream(stream),
                    acceptors: replicas,
                    learners: Vec::new(),
                    storage: storage_of(storage)?,
                    base_position: 0,
                },
                at_token,
                at_keys,
            }
        }
        Op::Merge { source, into } => Reconfiguration::Merge {
            source: PartitionId(*source),
            into: PartitionId(*into),
        },
        Op::ReplaceStream {
            partition,
            stream,
            acceptors,
            storage,
        } => {
            let replicas = replicas_of(*partition)?;
            let acceptors = if acceptors.is_empty() {
                replicas.clone()
            } else {
                acceptors.iter().copied().map(NodeId).collect()
            };
            // Replicas that are not acceptors of the new stream learn it.
            let learners = outside(&replicas, &acceptors);
            Reconfiguration::ReplaceStream {
                partition: PartitionId(*partition),
                stream: StreamSpec {
                    stream: new_stream(stream),
                    acceptors,
                    learners,
                    storage: storage_of(storage)?,
                    base_position: 0,
                },
            }
        }
        Op::ReplaceGlobalStream {
            acceptors,
            learners,
            stream,
            storage,
        } => {
            let acceptors: Vec<NodeId> = acceptors.iter().copied().map(NodeId).collect();
            // Every replica merges the global stream: each learns it.
            let mut named: Vec<NodeId> = learners.iter().copied().map(NodeId).collect();
            named.extend(map.hosting_nodes());
            named.sort();
            named.dedup();
            let learners = outside(&named, &acceptors);
            Reconfiguration::ReplaceGlobalStream {
                stream: StreamSpec {
                    stream: new_stream(stream),
                    acceptors,
                    learners,
                    storage: storage_of(storage)?,
                    base_position: 0,
                },
            }
        }
        Op::Move {
            partition,
            to,
            stream,
            storage,
        } => {
            let old = replicas_of(*partition)?;
            let replicas: Vec<NodeId> = to.iter().copied().map(NodeId).collect();
            // The old replicas that go learn the new stream until the new
            // group holds the partition's state.
            let learners = outside(&old, &replicas);
            Reconfiguration::Move {
                partition: PartitionId(*partition),
                replicas: replicas.clone(),
                stream: StreamSpec {
                    stream: new_stream(stream),
                    acceptors: replicas,
                    learners,
                    storage: storage_of(storage)?,
                    base_position: 0,
                },
            }
        }
        _ => unreachable!("only operator subcommands"),
    })
}

/// The nodes of `nodes` not in `group`, in `nodes`' order: a new stream's
/// learners are the nodes it must reach that are not its acceptors.
fn outside(nodes: &[NodeId], group: &[NodeId]) -> Vec<NodeId> {
    nodes
        .iter()
        .copied()
        .filter(|n| !group.contains(n))
        .collect()
}

/// The token in the middle of `partition`'s first segment of the token
/// ring (`None` if it owns no segment wider than one token).
fn middle_of_first_segment(map: &amulet_smr::PartitionMap, partition: PartitionId) -> Option<u32> {
    let ring = &map.token_ring;
    let at = ring.iter().position(|e| e.1 == partition)?;
    let start = u64::from(ring[at].0);
    let end = ring.get(at + 1).map_or(1u64 << 32, |e| u64::from(e.0));
    (end - start > 1).then(|| u32::try_from(start + (end - start) / 2).expect("inside the ring"))
}

/// Sends `change`, then shows every node reaching the new map version.
pub(crate) async fn reconfigure(
    client: &Client,
    op: &Op,
    configured: &[StreamId],
    timeout_secs: u64,
) -> anyhow::Result<()> {
    let (from, change) = client
        .reconfigure_with(|map| {
            reconfiguration(map, op, configured)
                .map_err(|e| amulet_client::Error::InvalidArgument(e.to_string()))
        })
        .await?;
    println!("requested {change:?}");
    println!("accepted at map version {from}; waiting for every node to apply it at its fence");
    let mut last = String::new();
    let done = client
        .wait_for_map_version(
            from + 1,
            Duration::from_secs(timeout_secs.max(30)),
            |seen| {
                let at = seen
                    .iter()
                    .filter(|(_, v)| v.is_some_and(|v| v > from))
                    .count();
                let line = format!(
                    "[{}{}] {at}/{} nodes at map version {}",
                    "#".repeat(at),
                    ".".repeat(seen.len() - at),
                    seen.len(),
                    from + 1
                );
                if line != last {
                    println!("{line}");
                    last = line;
                }
            },
        )
        .await;
    anyhow::ensure!(
        done,
        "not every node applied the change in time (see `amulet status`)"
    );
    if let Reconfiguration::Move {
        partition,
        replicas,
        stream,
    } = &change
    {
        let leaving = outside(&stream.members(), replicas);
        wait_for_hand_off(client, *partition, replicas, &leaving, timeout_secs).await?;
    }
    println!("done");
    Ok(())
}

/// After a move's fence: shows the state transfer, until every new
/// replica runs the partition (it fetched a peer's checkpoint) and every
/// replica that goes has dropped it (a majority of the new group holds a
/// durable checkpoint of it).
async fn wait_for_hand_off(
    client: &Client,
    partition: PartitionId,
    replicas: &[NodeId],
    leaving: &[NodeId],
    timeout_secs: u64,
) -> anyhow::Result<()> {
    let addresses = client.node_addresses();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout_secs.max(30));
    let mut last = String::new();
    loop {
        let mut runs = BTreeMap::new();
        for node in replicas.iter().chain(leaving) {
            let Some(address) = addresses.get(node) else {
                continue;
            };
            if let Ok(s) = client.status(address).await {
                let here = s.replicas.iter().any(|r| r.partition == partition.0);
                runs.insert(*node, here);
            }
        }
        let arrived = replicas
            .iter()
            .filter(|n| runs.get(n) == Some(&true))
            .count();
        let gone = leaving
            .iter()
            .filter(|n| runs.get(n) == Some(&false))
            .count();
        let line = format!(
            "[{}{}] {arrived}/{} new replicas hold partition {}; [{}{}] {gone}/{} old ones handed it off",
            "#".repeat(arrived),
            ".".repeat(replicas.len() - arrived),
            replicas.len(),
            partition.0,
            "#".repeat(gone),
            ".".repeat(leaving.len() - gone),
            leaving.len(),
        );
        if line != last {
            println!("{line}");
            last = line;
        }
        if arrived == replicas.len() && gone == leaving.len() {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "partition {} has not finished moving in time (see `amulet status`)",
            partition.0
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
