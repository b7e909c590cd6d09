//! Read versions shared by the transactions of one client
//! (docs/transactions.md). A read version is a `BeginTransaction` ordered
//! on the global stream with the signal exchange, the dearest part of a
//! transaction; as FoundationDB's clients batch GetReadVersion, a client
//! has at most one begin in flight, and the transactions that ask for a
//! read version meanwhile gather into the next one, sent when the one in
//! flight returns. Sharing keeps strict serializability: a transaction
//! only gets a version from a begin sent after it asked.
//!
//! Versions no transaction uses any more are ended in the next begin (it
//! carries them), so a busy client holds few read versions open and
//! orders nothing extra to end them; an idle client's last ones end by
//! their lease.

use crate::{Client, Error};
use amulet_dmap::{MapCommand, MapReply};
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
    /// Held by the begin in flight until its answer: the next one waits.
    sending: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    /// The begin not sent yet, which transactions asking now join.
    gathering: Option<(u64, Begun)>,
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
    /// A read version for a transaction asking now: from the begin not
    /// sent yet (joining the transactions that asked since the last one
    /// was sent), which goes out once the begin in flight has returned.
    pub(crate) async fn acquire(&self, client: &Client, lease_micros: u64) -> Result<Held, Error> {
        let (id, begun) = {
            let mut state = self.state.lock().expect("read versions lock");
            let (id, begun) = match &state.gathering {
                Some((id, begun)) => (*id, begun.clone()),
                None => {
                    let id = state.next_id;
                    state.next_id += 1;
                    let begun: Begun = Arc::new(OnceCell::new());
                    state.gathering = Some((id, begun.clone()));
                    (id, begun)
                }
            };
            state.holders.entry(id).or_insert((begun.clone(), 0)).1 += 1;
            (id, begun)
        };
        let result = begun
            .get_or_init(|| async {
                // One begin in flight: wait for the one before to return.
                let _turn = self.sending.lock().await;
                let end = {
                    let mut state = self.state.lock().expect("read versions lock");
                    // Sent now: later askers gather into the next one.
                    if state.gathering.as_ref().is_some_and(|(g, _)| *g == id) {
                        state.gathering = None;
                    }
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
