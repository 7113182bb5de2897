//! Builds the built-in JSON-lines exporter (`guest-examples/rust-jsonl`) as a component and
//! hands its path to the crate, which embeds it (`lens::wasm::builtin`).
//!
//! The Rust examples are built into the same target directory `guest-examples/build.sh` uses,
//! so that whichever runs second finds them up to date: each guest is compiled once.

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
}
