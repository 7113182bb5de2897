//! Host bindings generated from `wit/exporter.wit` (world `lens:exporter/exporter`): the WIT
//! data model the typed encoding builds ([`types`]) and the world the host instantiates
//! ([`Exporter`], [`ExporterPre`]). A leaf: generated code only, shared by
//! [`encoding`](crate::encoding) and [`wasm`](crate::wasm).

wasmtime::component::bindgen!({
    path: "wit",
    world: "exporter",
    // Guest calls are async so that one stuck in a host call can be cancelled (`wasm::instance`).
    exports: { default: async },
});

pub(crate) use self::lens::exporter::types;
