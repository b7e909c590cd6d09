//! The operator's balancer switch (docs/dynatree.md, "Pause and
//! decisions"): `amulet balancer pause` / `resume` set it at run time on
//! every node, and each node keeps it in its data directory, so a node
//! restarted while the cluster is paused stays paused. While the file is
//! there it overrides `[balancer] enabled` of the node's configuration.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file, in the node's data directory.
const FILE_NAME: &str = "balancer-switch";

fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The switch as last set by an operator: `None` when never set (the
/// configuration decides). A file with anything but `paused` or
/// `running` is an error: the node does not guess.
pub(crate) fn read(dir: &Path) -> anyhow::Result<Option<bool>> {
    let path = path(dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => match text.trim() {
            "paused" => Ok(Some(false)),
            "running" => Ok(Some(true)),
            other => anyhow::bail!(
                "{}: expected `paused` or `running`, found {other:?} (remove the file to use [balancer] enabled)",
                path.display()
            ),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", path.display())),
    }
}

/// Records the switch durably (a new file renamed over the old one,
/// synced) before the node acknowledges it.
pub(crate) fn write(dir: &Path, enabled: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(if enabled { b"running\n" } else { b"paused\n" })?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path(dir))?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynatree_oracle_the_switch_survives_a_restart_and_bad_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("amulet-switch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(read(&dir).unwrap(), None, "never set");
        write(&dir, false).unwrap();
        assert_eq!(read(&dir).unwrap(), Some(false));
        write(&dir, true).unwrap();
        assert_eq!(read(&dir).unwrap(), Some(true));
        std::fs::write(path(&dir), "maybe\n").unwrap();
        let error = read(&dir).unwrap_err().to_string();
        assert!(error.contains("expected `paused` or `running`"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
