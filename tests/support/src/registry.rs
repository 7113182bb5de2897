//! A real OCI registry for tests: Debian's `docker-registry` (CNCF distribution) on 127.0.0.1,
//! plain, or with htpasswd basic auth (`htpasswd` from `apache2-utils`); `tests/run.sh`
//! installs both. Its access log counts the requests a test makes.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::collector::free_port;

/// The registry binary: `$LENS_REGISTRY_BIN`, else Debian's.
fn binary() -> String {
    std::env::var("LENS_REGISTRY_BIN").unwrap_or_else(|_| "/usr/bin/docker-registry".into())
}

/// A registry serving on 127.0.0.1 from a temporary directory.
pub struct Registry {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
    config: PathBuf,
    dir: tempfile::TempDir,
}

impl Registry {
    /// A registry anyone may push to and pull from.
    pub fn start() -> Self {
        Self::spawn(None)
    }

    /// A registry that takes `user` and `password` only (HTTP basic auth).
    pub fn start_with_basic_auth(user: &str, password: &str) -> Self {
        Self::spawn(Some((user, password)))
    }

    fn spawn(auth: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut auth_section = String::new();
        if let Some((user, password)) = auth {
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, password])
                .output()
                .expect("htpasswd is needed (Debian's apache2-utils; tests/run.sh installs it)");
            assert!(out.status.success(), "htpasswd: {out:?}");
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, out.stdout).unwrap();
            auth_section = format!(
                "auth:\n  htpasswd:\n    realm: lens-test\n    path: {}\n",
                file.display()
            );
        }
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    \
                 rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n{auth_section}",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let log = dir.path().join("registry.log");
        let mut registry = Self {
            child: None,
            port,
            log,
            config,
            dir,
        };
        registry.resume();
        registry
    }

    /// Starts it again after [`stop`](Self::stop), on the same port and storage.
    pub fn resume(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(binary())
            .arg("serve")
            .arg(&self.config)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} (Debian's docker-registry; tests/run.sh installs it): {e}",
                    binary()
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the registry did not listen: {}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops it (its storage stays): a registry that is down.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `oci://127.0.0.1:<port>/<repository>:<tag>`.
    pub fn reference(&self, repository: &str, tag: &str) -> String {
        format!("oci://{}/{repository}:{tag}", self.authority())
    }

    /// Everything it logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Access-log lines of successful `GET`s of blobs of `repository` (the layer downloads).
    pub fn blob_downloads(&self, repository: &str) -> usize {
        let needle = format!("\"GET /v2/{repository}/blobs/sha256:");
        self.log_text()
            .lines()
            .filter(|l| l.contains(&needle) && l.contains("HTTP/1.1\" 200 "))
            .count()
    }

    /// Where it stores what it is sent (to tamper with in tests).
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("data/docker/registry/v2")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
