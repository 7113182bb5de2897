//! Builds the guest programs in `programs/` for wasm32-wasip2 and exports their paths as
//! `LENS_GUEST_<NAME>` (see `src/lib.rs`).

use std::path::PathBuf;
use std::process::Command;

const GUESTS: [&str; 2] = ["recorder", "hostile"];

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let programs = here.join("programs");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target_dir = out.join("guest-target");
    println!("cargo:rerun-if-changed={}", programs.display());
    println!(
        "cargo:rerun-if-changed={}",
        here.join("../../wit").display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&programs)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    // The outer build's settings must not leak into the guest build.
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
    let status = cmd.status().expect("running cargo for the guest programs");
    assert!(
        status.success(),
        "building the guest programs failed (is the wasm32-wasip2 target installed? `rustup target add wasm32-wasip2`)"
    );
    for guest in GUESTS {
        let wasm = target_dir
            .join("wasm32-wasip2/release")
            .join(format!("{}.wasm", guest.replace('-', "_")));
        assert!(wasm.exists(), "{} was not built", wasm.display());
        println!(
            "cargo:rustc-env=LENS_GUEST_{}={}",
            guest.to_uppercase().replace('-', "_"),
            wasm.display()
        );
    }
}
