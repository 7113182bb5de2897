//! [`FileWatch`]: a config file watched for a change of its content, what `[reload] watch`
//! polls (for a telemetry installation, and for the Python package's exporters built from a
//! config file).

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// A file whose content is compared, by its SHA-256, with what it was at the last look.
#[derive(Debug)]
pub struct FileWatch {
    path: PathBuf,
    seen: Option<[u8; 32]>,
}

impl FileWatch {
    /// Watches `path` from its content now.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let seen = digest(&path);
        Self { path, seen }
    }

    /// The watched file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the content changed since the last look. A file that cannot be read (missing for
    /// a moment while it is rewritten, or larger than a config file may be) is no change: the
    /// next look sees what it became.
    pub fn changed(&mut self) -> bool {
        let now = digest(&self.path);
        if now.is_some() && now != self.seen {
            self.seen = now;
            return true;
        }
        false
    }
}

/// The SHA-256 of the file's text, `None` when it cannot be read.
fn digest(path: &Path) -> Option<[u8; 32]> {
    super::read_config_file(path)
        .ok()
        .map(|text| Sha256::digest(text).into())
}

#[cfg(test)]
mod tests {
    use super::FileWatch;

    #[test]
    fn a_change_of_content_is_seen_once_and_a_missing_file_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lens.toml");
        std::fs::write(&path, "enabled = true").unwrap();
        let mut watch = FileWatch::new(&path);
        assert!(!watch.changed());
        std::fs::write(&path, "enabled = true").unwrap(); // rewritten, same content
        assert!(!watch.changed());
        std::fs::remove_file(&path).unwrap();
        assert!(!watch.changed(), "missing for a moment");
        std::fs::write(&path, "enabled = false").unwrap();
        assert!(watch.changed());
        assert!(!watch.changed());
    }
}
