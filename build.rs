//! Builds the built-in JSON-lines exporter (`guest-examples/rust-jsonl`) as a component and
//! hands its path to the crate, which embeds it (`lens::wasm::builtin`).
//!
//! The Rust examples are built into the same target directory `guest-examples/build.sh` uses,
//! so that whichever runs second finds them up to date: each guest is compiled once.
//!
//! It also copies the WASI WIT that `lens new --template http` projects import (`wasi:http` and
//! what it uses) out of the `wasmtime-wasi-http` crate this build links: the guests' worlds
//! then name exactly the WASI release the host implements.

include!("guest-examples/build_guests.rs");

fn main() {
    let here = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed={}", here.join("wit").display());
    println!("cargo:rerun-if-changed=build.rs");
    let built = build_guests(
        &here.join("guest-examples"),
        // The Rust SDK is a path dependency of both.
        &[
            "rust-jsonl",
            "rust-vendor-http",
            "rust-redact",
            "rust-filter",
            "../sdk/rust/src",
            "../sdk/rust/Cargo.toml",
        ],
        &here.join("guest-examples/.tools/rust-target"),
        &[
            "lens_jsonl_exporter",
            "lens_vendor_http_exporter",
            "lens_redact_processor",
            "lens_filter_processor",
        ],
    );
    println!(
        "cargo:rustc-env=LENS_BUILTIN_JSONL_WASM={}",
        built[0].display()
    );
    // For the tests of the examples.
    println!(
        "cargo:rustc-env=LENS_EXAMPLE_VENDOR_HTTP_WASM={}",
        built[1].display()
    );
    println!(
        "cargo:rustc-env=LENS_EXAMPLE_REDACT_WASM={}",
        built[2].display()
    );
    println!(
        "cargo:rustc-env=LENS_EXAMPLE_FILTER_WASM={}",
        built[3].display()
    );
    wasi_wit(&here);
}

/// Copies `wasmtime-wasi-http`'s WASI WIT (every `wit/deps/*.wit`) into `OUT_DIR/wasi-wit/`
/// (the crate found with `cargo metadata`, which knows where this build's copy of it is,
/// registry or vendored). `src/project/sdk.rs` names the files it carries; one missing here
/// fails its `include_str!`.
fn wasi_wit(here: &std::path::Path) {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("wasi-wit");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Offline first (the build has fetched what it builds); `cargo metadata` also wants the
    // manifests of other platforms' dependencies, which a fresh registry may lack: then online.
    let run = |offline: bool| {
        let mut command = std::process::Command::new(&cargo);
        command.args(["metadata", "--format-version", "1"]);
        if offline {
            command.arg("--offline");
        }
        command
            .arg("--manifest-path")
            .arg(here.join("Cargo.toml"))
            .output()
            .expect("running cargo metadata")
    };
    let metadata = Some(run(true))
        .filter(|m| m.status.success())
        .unwrap_or_else(|| run(false));
    assert!(
        metadata.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&metadata.stderr)
    );
    let json = String::from_utf8(metadata.stdout).expect("cargo metadata's output is UTF-8");
    // `"manifest_path":"…/wasmtime-wasi-http-48.0.8/Cargo.toml"`: the crate's folder.
    let crate_dir = json
        .split("\"manifest_path\":\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(std::path::PathBuf::from)
        .find(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .is_some_and(|n| n.to_string_lossy().starts_with("wasmtime-wasi-http-"))
        })
        .expect("wasmtime-wasi-http in cargo metadata")
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir_all(&out).unwrap();
    let deps = crate_dir.join("wit/deps");
    for entry in std::fs::read_dir(&deps).unwrap_or_else(|e| panic!("{}: {e}", deps.display())) {
        let from = entry.unwrap().path();
        if from.extension().is_some_and(|x| x == "wit") {
            std::fs::copy(&from, out.join(from.file_name().unwrap()))
                .unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
    }
}
