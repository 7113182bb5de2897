//! Builds the guest programs in `programs/` for wasm32-wasip2 and exports their paths as
//! `LENS_GUEST_<NAME>` (see `src/lib.rs`).

include!("../../guest-examples/build_guests.rs");

const GUESTS: [&str; 2] = ["recorder", "hostile"];

fn main() {
    let here = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!(
        "cargo:rerun-if-changed={}",
        here.join("../../wit").display()
    );
    let built = build_guests(
        &here.join("programs"),
        &GUESTS,
        &out.join("guest-target"),
        &GUESTS,
    );
    for (guest, wasm) in GUESTS.iter().zip(built) {
        println!(
            "cargo:rustc-env=LENS_GUEST_{}={}",
            guest.to_uppercase(),
            wasm.display()
        );
    }
}
