//! An in-memory [`Disk`] whose machine can crash: the deterministic
//! simulator's disk, and the durable log's recovery tests.
//!
//! Appends are kept at once (a process crash loses nothing: the OS has
//! them). [`SimDisk::crash_machine`] keeps each file's synced prefix plus a
//! random prefix of the rest (the disk may have written some of it), and
//! in half the crashes also loses random 512-byte sectors of that kept
//! rest (a disk writes the pages of one unsynced write in no particular
//! order), so a record can be torn at its tail or have a sector of zeros in
//! its middle, and records after it may survive. A preallocated file reads
//! as its data followed by zeros up to its preallocated length. File
//! creations and removals are modelled as durable at once (the log syncs
//! the directory right after them anyway).
//!
//! Clones share the same disk, so a simulated process can be dropped (a
//! crash) and a new one opened on the same disk.

use crate::disk::Disk;
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct SimFile {
    /// What was written (the append point is its end).
    data: Vec<u8>,
    synced: usize,
    /// The file's length with its preallocated zeros (at least `data`'s).
    allocated: usize,
}

impl SimFile {
    /// The file as a reader sees it: the data, then preallocated zeros.
    fn contents(&self) -> Vec<u8> {
        let mut all = self.data.clone();
        all.resize(self.allocated.max(self.data.len()), 0);
        all
    }
}

/// The disk's unit of writing: a crash loses whole sectors.
const SECTOR_BYTES: usize = 512;

#[derive(Debug, Default)]
struct State {
    files: BTreeMap<String, SimFile>,
    boot: u128,
    syncs: u64,
}

/// A shared, crashable in-memory directory.
#[derive(Clone, Debug, Default)]
pub struct SimDisk {
    state: Arc<Mutex<State>>,
}

impl SimDisk {
    /// An empty disk.
    pub fn new() -> SimDisk {
        SimDisk::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock (a test failing) must not hide
        // the disk from the code that reports the failure.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The machine crashed and restarted: every file keeps its synced
    /// prefix and a prefix of its unsynced tail chosen by `seed`; the boot
    /// id changes.
    pub fn crash_machine(&self, seed: u64) {
        let mut state = self.state();
        let mut x = seed;
        for file in state.files.values_mut() {
            let unsynced = file.data.len() - file.synced;
            if unsynced > 0 {
                x = splitmix64(x);
                let keep = (x % (unsynced as u64 + 1)) as usize;
                file.data.truncate(file.synced + keep);
                x = splitmix64(x);
                if x.is_multiple_of(2) {
                    // Sectors of the kept rest lost (zeros), each with
                    // probability 1/4; never one the sync covered.
                    let first = file.synced.div_ceil(SECTOR_BYTES) * SECTOR_BYTES;
                    let mut sector = first;
                    while sector < file.data.len() {
                        x = splitmix64(x);
                        if x.is_multiple_of(4) {
                            let end = (sector + SECTOR_BYTES).min(file.data.len());
                            file.data[sector..end].fill(0);
                        }
                        sector += SECTOR_BYTES;
                    }
                }
            }
            file.synced = file.data.len();
        }
        state.boot += 1;
    }

    /// Total bytes stored (written; preallocated zeros not counted).
    pub fn bytes(&self) -> usize {
        self.state().files.values().map(|f| f.data.len()).sum()
    }

    /// How many file syncs were made.
    pub fn syncs(&self) -> u64 {
        self.state().syncs
    }

    /// A copy of every file's written data, without preallocated zeros
    /// (for tests that damage a disk image).
    pub fn image(&self) -> BTreeMap<String, Vec<u8>> {
        let state = self.state();
        state
            .files
            .iter()
            .map(|(name, file)| (name.clone(), file.data.clone()))
            .collect()
    }

    /// A disk holding exactly `image`, all of it synced, on a new boot.
    pub fn from_image(image: BTreeMap<String, Vec<u8>>) -> SimDisk {
        let files = image
            .into_iter()
            .map(|(name, data)| {
                let synced = data.len();
                let allocated = data.len();
                (
                    name,
                    SimFile {
                        data,
                        synced,
                        allocated,
                    },
                )
            })
            .collect();
        SimDisk {
            state: Arc::new(Mutex::new(State {
                files,
                boot: 1,
                syncs: 0,
            })),
        }
    }
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file {name}"))
}

impl Disk for SimDisk {
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.state().files.keys().cloned().collect())
    }

    fn read_all(&self, name: &str) -> io::Result<Vec<u8>> {
        let state = self.state();
        let file = state.files.get(name).ok_or_else(|| not_found(name))?;
        Ok(file.contents())
    }

    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let state = self.state();
        let file = state.files.get(name).ok_or_else(|| not_found(name))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(len) {
            Some(end) if end <= file.data.len() => Ok(file.data[start..end].to_vec()),
            Some(end) if end <= file.allocated => Ok(file.contents()[start..end].to_vec()),
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read past the end of {name}"),
            )),
        }
    }

    fn create(&mut self, name: &str) -> io::Result<()> {
        let mut state = self.state();
        if state.files.contains_key(name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name} exists"),
            ));
        }
        state.files.insert(name.to_string(), SimFile::default());
        Ok(())
    }

    fn preallocate(&mut self, name: &str, len: u64) -> io::Result<()> {
        let mut state = self.state();
        let file = state.files.get_mut(name).ok_or_else(|| not_found(name))?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        file.allocated = file.allocated.max(len);
        Ok(())
    }

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.state();
        let file = state.files.get_mut(name).ok_or_else(|| not_found(name))?;
        file.data.extend_from_slice(bytes);
        Ok(())
    }

    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        let mut state = self.state();
        let file = state.files.get_mut(name).ok_or_else(|| not_found(name))?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        file.data.resize(len, 0);
        file.synced = file.synced.min(len);
        file.allocated = len;
        Ok(())
    }

    fn sync(&mut self, name: &str) -> io::Result<()> {
        let mut state = self.state();
        state.syncs += 1;
        let file = state.files.get_mut(name).ok_or_else(|| not_found(name))?;
        file.synced = file.data.len();
        Ok(())
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.state()
            .files
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| not_found(name))
    }

    fn boot_id(&self) -> u128 {
        self.state().boot
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
