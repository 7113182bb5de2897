//! Host bindings generated from `wit/` (`lens:exporter@0.4.0`, world `host`: every exporter and
//! processor interface): the WIT data model the encodings build ([`types`], [`metric_types`],
//! [`log_types`]) and the processors' answers ([`edit_types`]). A leaf:
//! generated code only, shared by [`encoding`](crate::encoding) and [`wasm`](crate::wasm).
//!
//! The host calls a guest's functions through typed lookups by interface name (the `wasm`
//! host's `interface` module), not through the generated world: a component may export any of
//! the six interfaces, and 0.3.0 and 0.2.0 components (whose records are the same, checked
//! by wasmtime field by field) are called with these types too.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "host",
    // Guest calls are async so that one stuck in a host call can be cancelled (`wasm::sandbox::instance`).
    exports: { default: async },
});

pub(crate) use self::lens::exporter::{edit_types, log_types, metric_types, types};
