//! Host bindings generated from `wit/exporter.wit` (world `lens:exporter/exporter`).

wasmtime::component::bindgen!({
    path: "wit",
    world: "exporter",
});

pub use lens::exporter::types;
