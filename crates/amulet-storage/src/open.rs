//! Opening a stream's acceptor log for its storage mode.

use crate::disk::FsDisk;
use crate::durable_log::{Durability, DurableLog, SEGMENT_BYTES_DEFAULT};
use crate::log::{AcceptorLog, StorageError};
use crate::memory_ring::MemoryRing;
use amulet_types::StorageMode;
use std::path::Path;

/// Opens the acceptor log of a stream kept in `dir`.
///
/// `first_run` tells a memory ring whether this process may vote: only the
/// first run of a data directory can, since a memory ring cannot vouch for
/// promises an earlier run made. Durable logs find out from their files.
pub fn open_log(
    mode: StorageMode,
    dir: &Path,
    memory_ring_slots: usize,
    first_run: bool,
) -> Result<Box<dyn AcceptorLog>, StorageError> {
    Ok(match mode {
        StorageMode::Memory if first_run => Box::new(MemoryRing::new(memory_ring_slots)),
        StorageMode::Memory => Box::new(MemoryRing::after_restart(memory_ring_slots)),
        StorageMode::AsyncDurable => Box::new(DurableLog::open(
            FsDisk::open(dir)?,
            Durability::Async,
            SEGMENT_BYTES_DEFAULT,
        )?),
        StorageMode::SyncDurable => Box::new(DurableLog::open(
            FsDisk::open(dir)?,
            Durability::Sync,
            SEGMENT_BYTES_DEFAULT,
        )?),
    })
}
