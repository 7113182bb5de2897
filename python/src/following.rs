//! [`Following`]: a wasm exporter shared by the Python thread that converts batches and the
//! export thread that sends them, and the resource it is to follow.
//!
//! The Python SDK hands the resource with every batch; Lens's exporters take it through
//! `set_resource`, which needs the exporter alone. The thread converting a batch records a new
//! resource here; the thread exporting applies it before its next export. A provider's
//! resource never changes, so only the first batch sees one (before anything is queued).

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter};
use lens::opentelemetry_sdk::trace::{SpanData, SpanExporter};
use lens::wasm::{WasmLogExporter, WasmMetricExporter, WasmSpanExporter};

/// The resource operations the package needs of each wasm exporter.
pub trait Resourced {
    fn apply_resource(&mut self, resource: &Resource);
}

impl Resourced for WasmSpanExporter {
    fn apply_resource(&mut self, resource: &Resource) {
        SpanExporter::set_resource(self, resource);
    }
}

impl Resourced for WasmMetricExporter {
    fn apply_resource(&mut self, resource: &Resource) {
        self.set_resource(resource);
    }
}

impl Resourced for WasmLogExporter {
    fn apply_resource(&mut self, resource: &Resource) {
        LogExporter::set_resource(self, resource);
    }
}

/// An exporter and the resource it has yet to take.
pub struct Following<E> {
    exporter: RwLock<E>,
    pending: Mutex<Option<Resource>>,
}

impl<E: Resourced> Following<E> {
    pub fn new(exporter: E) -> Arc<Self> {
        Arc::new(Self {
            exporter: RwLock::new(exporter),
            pending: Mutex::new(None),
        })
    }

    /// The exporter follows `resource` from its next export on.
    pub fn follow(&self, resource: Resource) {
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(resource);
    }

    /// Runs `f` on the exporter, the pending resource applied first.
    pub fn with<T>(&self, f: impl FnOnce(&E) -> T) -> T {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(resource) = pending {
            self.exporter
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .apply_resource(&resource);
        }
        f(&self.exporter.read().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The exporter as Lens's batch processors drive it (they own it; the package keeps a
/// handle).
#[derive(Clone)]
pub struct Handle<E>(pub Arc<Following<E>>);

impl<E> std::fmt::Debug for Handle<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handle")
    }
}

/// The outcome of a wasm exporter's `export` future, which does its work when first polled
/// (the lanes are synchronous): the batch processor's worker already runs inside an executor,
/// which cannot be entered again.
fn ready(future: impl std::future::Future<Output = OTelSdkResult>) -> OTelSdkResult {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(result) => result,
        std::task::Poll::Pending => Err(OTelSdkError::InternalFailure(
            "the wasm exporter's export did not complete synchronously".into(),
        )),
    }
}

impl SpanExporter for Handle<WasmSpanExporter> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.with(|e| ready(e.export(batch)))
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.with(SpanExporter::force_flush)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.with(|e| e.shutdown_with_timeout(timeout))
    }
}

impl LogExporter for Handle<WasmLogExporter> {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        self.0.with(|e| ready(e.export(batch)))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.with(|e| e.shutdown_with_timeout(timeout))
    }
}
