//! Read versions shared by the transactions of one client
//! (docs/transactions.md). A read version is a `BeginTransaction` ordered
//! on the global stream with the signal exchange, the dearest part of a
//! transaction; transactions that start while one is being asked for wait
//! for the next and share it, as FoundationDB's clients batch their
//! GetReadVersion calls. Sharing keeps strict serializability: a
//! transaction only uses a begin sent after it started.
//!
//! Versions no transaction uses any more are ended in the next begin (it
//! carries them), so a busy client holds few read versions open and
//! orders nothing extra to end them; an idle client's last ones end by
//! their lease.

use crate::{Client, Error};
use amulet_dmap::{MapCommand, MapReply};
use amulet_types::TimeMicros;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// Versions waiting to be ended in the next begin, at most (the rest end
/// by their lease).
const ENDED_PER_BEGIN_MAX: usize = 1024;

type Begun = Arc<OnceCell<Result<u64, Error>>>;

/// The read versions of one client.
#[derive(Default)]
pub(crate) struct ReadVersions {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The begin last created: later starters may still join it until it
    /// completes.
    current: Option<(u64, TimeMicros, Begun)>,
    /// Begins in use, by id: the transactions holding each.
    holders: BTreeMap<u64, (Begun, usize)>,
    /// Versions no transaction holds, to end in the next begin.
    done: Vec<u64>,
    next_id: u64,
}

/// A transaction's hold on a shared read version.
#[derive(Debug)]
pub(crate) struct Held {
    id: u64,
    /// The read version.
    pub(crate) version: u64,
}

impl ReadVersions {
    /// A read version for a transaction that started at `started_at`:
    /// one begun at or after that time, shared with the transactions
    /// that started before it was sent.
    pub(crate) async fn acquire(
        &self,
        client: &Client,
        started_at: TimeMicros,
        lease_micros: u64,
    ) -> Result<Held, Error> {
        let (id, begun) = {
            let mut state = self.state.lock().expect("read versions lock");
            let joinable = state
                .current
                .as_ref()
                .filter(|(_, sent_at, begun)| *sent_at >= started_at && !begun.initialized());
            let (id, begun) = match joinable {
                Some((id, _, begun)) => (*id, begun.clone()),
                None => {
                    let id = state.next_id;
                    state.next_id += 1;
                    let begun: Begun = Arc::new(OnceCell::new());
                    state.current = Some((id, client.now(), begun.clone()));
                    (id, begun)
                }
            };
            state.holders.entry(id).or_insert((begun.clone(), 0)).1 += 1;
            (id, begun)
        };
        let result = begun
            .get_or_init(|| async {
                let end = {
                    let mut state = self.state.lock().expect("read versions lock");
                    let keep = state.done.len().saturating_sub(ENDED_PER_BEGIN_MAX);
                    state.done.split_off(keep)
                };
                let command = MapCommand::BeginTransaction { lease_micros, end };
                match client.execute(command).await {
                    Ok(MapReply::ReadVersion(version)) => Ok(version),
                    Ok(other) => Err(Error::Protocol(format!("a begin answered {other:?}"))),
                    Err(e) => Err(e),
                }
            })
            .await
            .clone();
        match result {
            Ok(version) => Ok(Held { id, version }),
            Err(e) => {
                self.release_id(id);
                Err(e)
            }
        }
    }

    /// A transaction is done with its read version.
    pub(crate) fn release(&self, held: &Held) {
        self.release_id(held.id);
    }

    fn release_id(&self, id: u64) {
        let mut state = self.state.lock().expect("read versions lock");
        let Some((begun, holders)) = state.holders.get_mut(&id) else {
            return;
        };
        *holders -= 1;
        if *holders > 0 {
            return;
        }
        let version = begun.get().and_then(|r| r.as_ref().ok()).copied();
        state.holders.remove(&id);
        if let Some(version) = version {
            state.done.push(version);
        }
    }
}
