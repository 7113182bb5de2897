//! [`FileWatch`]: a config file watched for a change of its content, what `[reload] watch`
//! polls (for a telemetry installation, and for the Python package's exporters built from a
//! config file).

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// A file whose content is compared, by its SHA-256, with what it was when last reported.
/// A new content is reported once it has stayed the same for two looks in a row: a file being
/// written in place (truncated, then filled) is never taken half-way, as a config that lost its
/// exporters would be.
#[derive(Debug)]
pub struct FileWatch {
    path: PathBuf,
    seen: Option<[u8; 32]>,
    /// A new content seen once, waiting for the next look to confirm it.
    pending: Option<[u8; 32]>,
}

impl FileWatch {
    /// Watches `path` from its content now.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let seen = digest(&path);
        Self {
            path,
            seen,
            pending: None,
        }
    }

    /// The watched file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the content changed since it was last reported, and has stayed the same since
    /// the previous look. A file that cannot be read (missing for a moment while it is
    /// rewritten, or larger than a config file may be) is no change.
    pub fn changed(&mut self) -> bool {
        let Some(now) = digest(&self.path) else {
            return false;
        };
        if Some(now) == self.seen {
            self.pending = None;
            return false;
        }
        if self.pending == Some(now) {
            self.seen = Some(now);
            self.pending = None;
            return true;
        }
        self.pending = Some(now);
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
    fn a_new_content_is_reported_once_when_it_held_for_two_looks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lens.toml");
        std::fs::write(&path, "enabled = true").unwrap();
        let mut watch = FileWatch::new(&path);
        assert!(!watch.changed());
        std::fs::write(&path, "enabled = true").unwrap(); // rewritten, same content
        assert!(!watch.changed());
        std::fs::remove_file(&path).unwrap();
        assert!(!watch.changed(), "missing for a moment");
        // Half-written: seen once, then it changes again before a second look confirms it.
        std::fs::write(&path, "enabled").unwrap();
        assert!(!watch.changed());
        std::fs::write(&path, "enabled = false").unwrap();
        assert!(!watch.changed());
        assert!(watch.changed(), "held for two looks");
        assert!(!watch.changed());
        // Back to what was reported before a change was confirmed: nothing to report.
        std::fs::write(&path, "enabled = true").unwrap();
        assert!(!watch.changed());
        std::fs::write(&path, "enabled = false").unwrap();
        assert!(!watch.changed());
    }
}
