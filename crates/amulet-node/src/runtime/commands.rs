//! Carrying out the host's commands with TCP, files and blocking tasks.

use super::EventLoop;
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
                let outcome = self.write_checkpoint(partition, write, &file);
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
                    let outcome = write_file(&store, partition, write, &file);
                    // The body (and its hold on old map versions) goes
                    // here, off the event loop.
                    drop(file);
                    let _ = done.send((partition, write, outcome, began.elapsed().as_secs_f64()));
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

    fn write_checkpoint(
        &self,
        partition: PartitionId,
        write: amulet_host::WriteId,
        file: &CheckpointFile<amulet_dmap::PartitionState>,
    ) -> WriteOutcome {
        write_file(&self.store, partition, write, file)
    }
}

fn write_file(
    store: &crate::checkpoint_store::CheckpointStore,
    partition: PartitionId,
    write: amulet_host::WriteId,
    file: &CheckpointFile<amulet_dmap::PartitionState>,
) -> WriteOutcome {
    match file {
        CheckpointFile::Body(body) => store.write(partition, write, body),
        CheckpointFile::Bytes(bytes) => store.write_bytes(partition, write, bytes),
    }
}
