//! Host bindings generated from `wit/exporter.wit` (world `lens:exporter/exporter`).

wasmtime::component::bindgen!({
    path: "wit",
    world: "exporter",
});

pub use self::lens::exporter::types;
