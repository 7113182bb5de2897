//! Builds the guest programs in `programs/` for wasm32-wasip2, and the WAT guests in `wat/`
//! (what Rust cannot express: many core instances with their own memories or tables, a looping
//! start function), and exports their paths as `LENS_GUEST_<NAME>` (see `src/lib.rs`).

include!("../../guest-examples/build_guests.rs");

const GUESTS: [&str; 3] = ["recorder", "hostile", "processor"];

fn main() {
    let here = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!(
        "cargo:rerun-if-changed={}",
        here.join("../../wit").display()
    );
    // One target directory for every run of this script (a `cargo clippy`, a `cargo test`, a
    // build with other features each run it in an `OUT_DIR` of their own): the guests are
    // compiled once, and later runs find them up to date. `OUT_DIR` is
    // `<target>/<profile>/build/<package>-<hash>/out`.
    let shared = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is under the profile's directory")
        .join("test-guest-components");
    let built = build_guests(&here.join("programs"), &GUESTS, &shared, &GUESTS);
    for (guest, wasm) in GUESTS.iter().zip(built) {
        println!(
            "cargo:rustc-env=LENS_GUEST_{}={}",
            guest.to_uppercase(),
            wasm.display()
        );
    }
    wat_guests(&here, &out);
}

/// The WAT exporter as a component, and the hostile variants built from it.
fn wat_guests(here: &std::path::Path, out: &std::path::Path) {
    let wat = here.join("wat/exporter.wat");
    println!("cargo:rerun-if-changed={}", wat.display());
    // Built against the 0.2.0 WIT: these guests also prove 0.2.0 components keep working.
    let base = wat_component(&wat, &here.join("../../wit/compat/0.2.0"));
    let touch = |pages: u32| {
        format!(
            "(module (memory {pages}) (func $touch (local $at i32)
               (loop $next
                 (i32.store8 (local.get $at) (i32.const 1))
                 (local.set $at (i32.add (local.get $at) (i32.const 4096)))
                 (br_if $next (i32.lt_u (local.get $at) (i32.const {bytes})))))
             (start $touch))",
            bytes = pages * 65536
        )
    };
    let variants: [(&str, Vec<String>); 7] = [
        ("WAT_EXPORTER", vec![]),
        // One more core instance with a 16 MiB memory: the instance holds both.
        ("TWO_MEMORIES", vec![touch(256)]),
        // 20 core instances, each with a 60 MiB memory it touches: 1.2 GB in all.
        ("MANY_MEMORIES", vec![touch(960); 20]),
        // 50 tables of 900k function references: ~360 MB of tables.
        (
            "BIG_TABLES",
            vec!["(module (table 900000 funcref))".to_string(); 50],
        ),
        // A module with two memories (the multi-memory feature, which the host turns off).
        (
            "MULTI_MEMORY",
            vec!["(module (memory 1) (memory 1))".to_string()],
        ),
        // More core instances than a component instance may create.
        ("MANY_INSTANCES", vec!["(module)".to_string(); 100]),
        // A start function that never returns: instantiation must hit its deadline.
        (
            "LOOPING_START",
            vec!["(module (func $spin (loop $again (br $again))) (start $spin))".to_string()],
        ),
    ];
    for (name, modules) in variants {
        let modules: Vec<Vec<u8>> = modules
            .iter()
            .map(|m| wat::parse_str(m).expect("extra module"))
            .collect();
        let path = out.join(format!("{}.wasm", name.to_lowercase()));
        std::fs::write(&path, with_extra_instances(&base, &modules)).unwrap();
        println!("cargo:rustc-env=LENS_GUEST_{name}={}", path.display());
    }
}

/// The WAT core module at `path` as a component of the `lens:exporter/exporter` world.
fn wat_component(path: &std::path::Path, wit: &std::path::Path) -> Vec<u8> {
    let mut module = wat::parse_file(path).expect("parsing the WAT exporter");
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_path(wit).expect("parsing the WIT");
    let world = resolve
        .select_world(&[pkg], Some("exporter"))
        .expect("the exporter world");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("embedding the component type");
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .expect("the WAT exporter")
        .encode()
        .expect("encoding the WAT exporter")
}

fn leb128(mut v: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn section(id: u8, contents: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb128(contents.len(), out);
    out.extend_from_slice(contents);
}

/// `component` with each of `modules` added as a core module and instantiated (no imports) when
/// the component is: a component may hold any number of core instances, each with its own
/// memories and tables, beside the one that exports the interface.
fn with_extra_instances(component: &[u8], modules: &[Vec<u8>]) -> Vec<u8> {
    if modules.is_empty() {
        return component.to_vec();
    }
    // Core modules already defined at the top level: one per core module section (id 1).
    let mut existing = 0;
    let mut at = 8;
    while at < component.len() {
        let id = component[at];
        let (mut size, mut shift) = (0usize, 0);
        at += 1;
        loop {
            let b = component[at];
            at += 1;
            size |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        existing += usize::from(id == 1);
        at += size;
    }
    let mut out = component.to_vec();
    for m in modules {
        section(1, m, &mut out);
    }
    let mut instances = Vec::new();
    leb128(modules.len(), &mut instances);
    for i in 0..modules.len() {
        instances.push(0x00); // instantiate a module
        leb128(existing + i, &mut instances);
        leb128(0, &mut instances); // with no arguments
    }
    section(2, &instances, &mut out);
    out
}
