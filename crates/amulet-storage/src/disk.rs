//! The few file operations the durable log needs, behind a trait so the
//! simulator can crash a machine in the middle of them ([`crate::SimDisk`])
//! and production uses the file system ([`FsDisk`]).
//!
//! A disk is one directory of flat files. Appends reach the operating
//! system at once (they survive a process crash); `sync` makes a file's
//! data durable (it survives a machine crash); `sync_dir` makes creations
//! and removals durable.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A directory of files.
pub trait Disk: Send {
    /// Names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// The whole content of a file.
    fn read_all(&self, name: &str) -> io::Result<Vec<u8>>;
    /// `len` bytes at `offset` of a file (an error if the file is shorter).
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Vec<u8>>;
    /// Creates an empty file (an error if it exists).
    fn create(&mut self, name: &str) -> io::Result<()>;
    /// Appends to a file.
    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()>;
    /// Cuts a file to `len` bytes.
    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()>;
    /// Makes a file's data durable (fsync).
    fn sync(&mut self, name: &str) -> io::Result<()>;
    /// Makes file creations and removals durable.
    fn sync_dir(&mut self) -> io::Result<()>;
    /// Removes a file.
    fn remove(&mut self, name: &str) -> io::Result<()>;
    /// Identifies the current boot of the machine: it changes exactly when
    /// the machine restarted (and unsynced data may have been lost).
    fn boot_id(&self) -> u128;
}

/// A directory of the local file system.
pub struct FsDisk {
    dir: PathBuf,
    /// Open handles of files appended to or synced, by name.
    open: HashMap<String, File>,
    boot_id: u128,
}

impl FsDisk {
    /// The directory `dir`, created if missing.
    pub fn open(dir: &Path) -> io::Result<FsDisk> {
        std::fs::create_dir_all(dir)?;
        Ok(FsDisk {
            dir: dir.to_path_buf(),
            open: HashMap::new(),
            boot_id: read_boot_id(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn handle(&mut self, name: &str) -> io::Result<&mut File> {
        if !self.open.contains_key(name) {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .open(self.path(name))?;
            self.open.insert(name.to_string(), file);
        }
        Ok(self.open.get_mut(name).expect("inserted above"))
    }
}

impl Disk for FsDisk {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_string());
                }
            }
        }
        Ok(names)
    }

    fn read_all(&self, name: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.path(name))
    }

    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buffer = vec![0; len];
        match self.open.get(name) {
            Some(file) => file.read_exact_at(&mut buffer, offset)?,
            None => File::open(self.path(name))?.read_exact_at(&mut buffer, offset)?,
        }
        Ok(buffer)
    }

    fn create(&mut self, name: &str) -> io::Result<()> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(self.path(name))?;
        self.open.insert(name.to_string(), file);
        Ok(())
    }

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.handle(name)?.write_all(bytes)
    }

    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        self.handle(name)?.set_len(len)
    }

    fn sync(&mut self, name: &str) -> io::Result<()> {
        // fdatasync: the log never depends on file metadata other than the
        // length, which fdatasync covers.
        self.handle(name)?.sync_data()
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.open.remove(name);
        std::fs::remove_file(self.path(name))
    }

    fn boot_id(&self) -> u128 {
        self.boot_id
    }
}

/// Linux's per-boot random id. Elsewhere (or if unreadable) a value that
/// differs from every earlier run, which makes an async log assume the
/// machine restarted: safe, at the price of the acceptor's vote.
fn read_boot_id() -> u128 {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .and_then(|text| u128::from_str_radix(&text.trim().replace('-', ""), 16).ok())
        .unwrap_or_else(|| {
            // RandomState is seeded from the OS's randomness per process.
            use std::hash::{BuildHasher, Hasher};
            let state = std::collections::hash_map::RandomState::new();
            let high = state.build_hasher().finish();
            let mut hasher = state.build_hasher();
            hasher.write_u32(std::process::id());
            (u128::from(high) << 64) | u128::from(hasher.finish())
        })
}
