//! The WIT bindings, generated once per world so that a component exports exactly the interfaces
//! of the signals it implements: `exporter` (spans), `metrics`, `logs`, and the processors' worlds. A component serving all
//! three invokes the three export macros and the component tooling unions the worlds, which is
//! `all-signals`. (One `all-signals` generation would export all three interfaces always; per-world
//! generations that each contained `span-exporter` would define its export macro twice.)
//!
//! The three share one copy of the data types through `with`.

#![allow(missing_docs, clippy::all)]

/// World `exporter`: `span-exporter` and the shared data types.
pub mod spans {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "exporter",
        pub_export_macro: true,
        export_macro_name: "__export_spans",
        default_bindings_module: "$crate::bindings::spans",
        additional_derives: [PartialEq],
    });
}

/// World `metrics`: `metric-exporter` and `metric-types`.
pub mod metrics {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "metrics",
        pub_export_macro: true,
        export_macro_name: "__export_metrics",
        default_bindings_module: "$crate::bindings::metrics",
        with: { "lens:exporter/types@0.4.0": crate::bindings::spans::lens::exporter::types },
    });
}

/// World `span-processors`: `span-processor` and `edit-types`.
pub mod processors {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "span-processors",
        pub_export_macro: true,
        export_macro_name: "__export_span_processors",
        default_bindings_module: "$crate::bindings::processors",
        with: { "lens:exporter/types@0.4.0": crate::bindings::spans::lens::exporter::types },
    });
}

/// World `log-processors`: `log-processor` (its `log-types` and `edit-types` shared).
pub mod log_processors {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "log-processors",
        pub_export_macro: true,
        export_macro_name: "__export_log_processors",
        default_bindings_module: "$crate::bindings::log_processors",
        with: {
            "lens:exporter/types@0.4.0": crate::bindings::spans::lens::exporter::types,
            "lens:exporter/log-types@0.4.0": crate::bindings::logs::lens::exporter::log_types,
            "lens:exporter/edit-types@0.4.0": crate::bindings::processors::lens::exporter::edit_types,
        },
    });
}

/// World `metric-processors`: `metric-processor` (its `metric-types` and `edit-types` shared).
pub mod metric_processors {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "metric-processors",
        pub_export_macro: true,
        export_macro_name: "__export_metric_processors",
        default_bindings_module: "$crate::bindings::metric_processors",
        with: {
            "lens:exporter/types@0.4.0": crate::bindings::spans::lens::exporter::types,
            "lens:exporter/metric-types@0.4.0": crate::bindings::metrics::lens::exporter::metric_types,
            "lens:exporter/edit-types@0.4.0": crate::bindings::processors::lens::exporter::edit_types,
        },
    });
}

/// World `logs`: `log-exporter` and `log-types`.
pub mod logs {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "logs",
        pub_export_macro: true,
        export_macro_name: "__export_logs",
        default_bindings_module: "$crate::bindings::logs",
        with: { "lens:exporter/types@0.4.0": crate::bindings::spans::lens::exporter::types },
    });
}
