//! Carrying out the host's commands with TCP, files and blocking tasks.

use super::EventLoop;
use crate::log_segment_store::Spilled;
use amulet_host::{CheckpointFile, Command, Durability, WriteOutcome};
use amulet_types::PartitionId;
use bytes::Bytes;
use std::time::Instant;

impl EventLoop {
    /// Carries out every command the host has queued, in order, until it
    /// queues no more (a checkpoint written now is reported back at once,
    /// which may queue more).
    pub(super) fn carry_out(&mut self) -> anyhow::Result<()> {
        loop {
            let mut commands = std::mem::take(&mut self.drained);
            self.host.drain_commands(&mut commands);
            if commands.is_empty() {
                self.drained = commands;
                return Ok(());
            }
            let now = self.now();
            for command in commands.drain(..) {
                self.carry_out_one(command, now)?;
            }
            self.drained = commands;
        }
    }

    fn carry_out_one(
        &mut self,
        command: Command<amulet_dmap::PartitionState>,
        now: amulet_types::TimeMicros,
    ) -> anyhow::Result<()> {
        match command {
            Command::Send { to, envelope } => {
                if let Some(transport) = self.transport.as_mut() {
                    transport.send(to, envelope);
                }
            }
            Command::SendReplica { to, message } => {
                if let Some(transport) = self.transport.as_mut() {
                    transport.send_replica(to, message.encode());
                }
            }
            Command::Reply { token, reply } => {
                if let Some(waiter) = self.waiters.remove(&token) {
                    let _ = waiter.send(reply);
                }
            }
            Command::Abandon { token } => {
                // Dropping the waiter tells the client API the request
                // went unanswered (it may have taken effect).
                self.waiters.remove(&token);
            }
            Command::Deliver { merged, .. } => {
                self.digest.push(&merged);
                if let Some(load) = self.load.as_mut() {
                    load.delivered(now, &merged);
                }
                if let Some(deliveries) = &self.deliveries {
                    let _ = deliveries.send(merged);
                }
            }
            Command::Synced { .. } => {}
            Command::Subscription { group, event } => {
                tracing::info!(group = group.0, ?event, "subscription changed");
            }
            Command::WriteCheckpoint {
                partition,
                write,
                file,
                durability: Durability::Now,
            } => {
                let (outcome, spilled) = write_file(&self.store, partition, write, file);
                self.adopt_spilled(partition, spilled);
                self.host
                    .checkpoint_written(partition, write, outcome, now)?;
            }
            Command::WriteCheckpoint {
                partition,
                write,
                file,
                durability: Durability::Background,
            } => {
                let store = self.store.clone();
                let done = self.written_tx.clone();
                tokio::task::spawn_blocking(move || {
                    #[allow(clippy::disallowed_methods)] // measures the write, not protocol time
                    let began = Instant::now();
                    // The body (and its hold on old map versions) goes
                    // inside, off the event loop.
                    let (outcome, spilled) = write_file(&store, partition, write, file);
                    let seconds = began.elapsed().as_secs_f64();
                    let _ = done.send((partition, write, outcome, seconds, spilled));
                });
            }
            Command::RemoveCheckpoint { partition, write } => {
                if let Err(error) = self.store.remove(partition, write) {
                    tracing::error!(%error, "cannot remove a checkpoint");
                }
            }
            Command::ReadCheckpoint { partition } => {
                // Off the loop: a checkpoint can be large, and only
                // recoveries read one.
                let store = self.store.clone();
                let done = self.read_tx.clone();
                tokio::task::spawn_blocking(move || {
                    let file = store
                        .read_bytes(partition)
                        .map(|bytes| bytes.map(Bytes::from))
                        .map_err(|e| e.to_string());
                    let _ = done.send((partition, file));
                });
            }
        }
        Ok(())
    }

    /// Queues the live log entries a checkpoint moved into segment
    /// files to be re-pointed at them (the same bytes: docs/logs.md
    /// "Segment files"), so their memory goes; [`EventLoop::adopt_some`]
    /// does it a slice per turn.
    pub(crate) fn adopt_spilled(&mut self, partition: PartitionId, spilled: Vec<Spilled>) {
        self.adopting
            .extend(spilled.into_iter().map(|run| (partition, run, 0)));
    }

    /// Re-points up to `budget` queued entries. Entries trimmed, moved or
    /// replaced meanwhile keep theirs ([`amulet_dmap::Log::adopt`]).
    pub(crate) fn adopt_some(&mut self, budget: usize) {
        #[allow(clippy::disallowed_methods)] // measures the loop's share, not protocol time
        let began = Instant::now();
        let mut left = budget;
        let mut adopted = 0;
        while left > 0 {
            let Some((partition, run, next)) = self.adopting.front_mut() else {
                break;
            };
            let end = (*next + left).min(run.entries.len());
            if let Some(replica) = self.host.replica_mut_same_value(*partition) {
                adopted += replica.state_mut_same_value().adopt_log_entries(
                    &run.log,
                    run.from + *next as u64,
                    &run.entries[*next..end],
                    &run.was[*next..end],
                );
            }
            left -= end - *next;
            *next = end;
            if end == run.entries.len() {
                self.adopting.pop_front();
            }
        }
        tracing::trace!(
            adopted,
            micros = began.elapsed().as_micros() as u64,
            "log entries re-pointed at segment files"
        );
    }
}

fn write_file(
    store: &crate::checkpoint_store::CheckpointStore,
    partition: PartitionId,
    write: amulet_host::WriteId,
    file: CheckpointFile<amulet_dmap::PartitionState>,
) -> (WriteOutcome, Vec<Spilled>) {
    match file {
        CheckpointFile::Body(mut body) => store.write(partition, write, &mut body),
        CheckpointFile::Bytes(bytes) => (store.write_bytes(partition, write, &bytes), Vec::new()),
    }
}
