// Shared by the build scripts that compile guest components (`include!`d, not a module):
// runs `cargo build --release --target wasm32-wasip2` on a guest workspace in its own target
// directory, so the outer build's lock and flags are not involved.

/// Builds `workspace` and returns the `.wasm` path of each crate in `crates` (library names).
/// `sources` are the workspace's files and directories whose change means a rebuild (not the
/// whole workspace: a target directory inside it would make every build look like a change).
fn build_guests(
    workspace: &std::path::Path,
    sources: &[&str],
    target_dir: &std::path::Path,
    crates: &[&str],
) -> Vec<std::path::PathBuf> {
    for source in ["Cargo.toml", "Cargo.lock"].iter().chain(sources) {
        println!("cargo:rerun-if-changed={}", workspace.join(source).display());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(workspace)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(target_dir);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("running cargo for the guest components");
    assert!(
        status.success(),
        "building the guest components in {} failed (is the wasm32-wasip2 target installed? \
         `rustup target add wasm32-wasip2`)",
        workspace.display()
    );
    crates
        .iter()
        .map(|name| {
            let wasm = target_dir
                .join("wasm32-wasip2/release")
                .join(format!("{}.wasm", name.replace('-', "_")));
            assert!(wasm.exists(), "{} was not built", wasm.display());
            wasm
        })
        .collect()
}
