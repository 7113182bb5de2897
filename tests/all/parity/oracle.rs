//! Asking the real NeMo Lens: `nemo_oracle.py` run by the Python 3.13 venv that holds
//! `nemo-lens[sdk]==0.1.0` (`tests/all/parity/venv.sh` makes it; `LENS_NEMO_PYTHON` overrides it).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("LENS_NEMO_PYTHON") {
        return p.into();
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-parity/bin/python");
    assert!(
        p.exists(),
        "the NeMo Lens oracle is missing: {} does not exist. Run tests/all/parity/venv.sh (a Python \
         3.13 venv with nemo-lens[sdk]==0.1.0), or set LENS_NEMO_PYTHON to such an interpreter",
        p.display()
    );
    p
}

/// Sends `request` to the oracle; its answer.
pub fn ask(request: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/all/parity/nemo_oracle.py");
    let mut child = Command::new(python())
        .arg(&script)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the NeMo Lens oracle");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the oracle failed on {request}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the oracle's answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
