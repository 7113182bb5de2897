//! The processor chain of each built exporter, as a reload replaces it: a chain for spans, log
//! records or metric collections, and the processors of a configuration that apply to one
//! exporter.

use std::sync::Arc;

use opentelemetry_sdk::trace::SpanData;

use crate::batch::{Chain, ExportStage};
use crate::config::ProcessorSpec;
use crate::logs::Queued;
use crate::wasm::WasmProcessor;

/// One exporter's chain, of its signal.
#[derive(Clone)]
pub(crate) enum ChainHandle {
    Spans(Arc<Chain<dyn ExportStage<SpanData>>>),
    Logs(Arc<Chain<dyn ExportStage<Queued>>>),
    Metrics(Arc<Chain<WasmProcessor>>),
}

impl ChainHandle {
    /// Batches starting from now go through the processors of `processors` (a signal's, in
    /// its configuration's order) that apply to the exporter called `exporter`.
    pub(crate) fn replace(
        &self,
        processors: &[(ProcessorSpec, Arc<WasmProcessor>)],
        exporter: &str,
    ) {
        let applying = processors
            .iter()
            .filter(|(spec, _)| spec.applies_to(exporter))
            .map(|(_, p)| p.clone());
        match self {
            Self::Spans(c) => c.replace(
                applying
                    .map(|p| p as Arc<dyn ExportStage<SpanData>>)
                    .collect(),
            ),
            Self::Logs(c) => c.replace(
                applying
                    .map(|p| p as Arc<dyn ExportStage<Queued>>)
                    .collect(),
            ),
            Self::Metrics(c) => c.replace(applying.collect()),
        }
    }
}
