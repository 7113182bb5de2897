//! The write budget of an exporter's writable pre-opens (`max_write_mib`): how many bytes its
//! guests may write into files in all, over the life of the exporter. Past it, a write fails
//! as a full disk would (`insufficient-space`, `ENOSPC` to a libc): the guest sees an error it
//! can report, the host's disk stays bounded.
//!
//! wasmtime-wasi has no hook for this, so the host shadows the three `wasi:filesystem`
//! functions that write file contents: `descriptor.write` checks the budget before it writes;
//! `write-via-stream` and `append-via-stream` wrap the stream they return, so that every write
//! through it (`write`, `blocking-write-and-flush`, `write-zeroes`, `splice`) is counted.

use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::WasiFilesystemView as _;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Descriptor, ErrorCode, Host as _, HostDescriptor as _,
};
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};

/// A store's state that may carry a write budget: the sandbox's host state implements it (kept
/// as a trait so that this module does not depend on the sandbox that uses it).
pub(crate) trait Budgeted: WasiView + Send + 'static {
    /// The exporter's budget, if it has one.
    fn write_budget(&self) -> Option<std::sync::Arc<WriteBudget>>;
}

/// The interface whose functions are shadowed, as wasmtime-wasi defines it (older minor
/// versions a guest imports resolve to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Bytes an exporter's guests may still write into files.
#[derive(Debug)]
pub(crate) struct WriteBudget {
    remaining: AtomicU64,
    limit: u64,
}

impl WriteBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            remaining: AtomicU64::new(limit),
            limit,
        }
    }

    /// Takes `n` bytes if that many are left.
    fn take(&self, n: u64) -> bool {
        self.remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }

    /// Gives back bytes taken but not written.
    fn refund(&self, n: u64) {
        self.remaining.fetch_add(n, Ordering::Relaxed);
    }

    fn left(&self) -> u64 {
        self.remaining.load(Ordering::Relaxed)
    }

    /// The error a guest gets when the budget is spent: a full disk.
    fn exhausted(&self) -> StreamError {
        log::debug!("a guest's write budget of {} bytes is spent", self.limit);
        StreamError::LastOperationFailed(std::io::Error::from_raw_os_error(ENOSPC).into())
    }
}

/// `ENOSPC` (no space left on device) on Linux, what a full disk returns.
const ENOSPC: i32 = 28;

/// Shadows the file-writing functions of `wasi:filesystem/types` with budgeted ones (a no-op for
/// an instance without a budget).
pub(crate) fn add_to_linker<T: Budgeted>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut store, (fd, buf, offset): (Resource<Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let budget = state.write_budget();
                let asked = buf.len() as u64;
                if let Some(b) = &budget
                    && !b.take(asked)
                {
                    return Ok((Err(ErrorCode::InsufficientSpace),));
                }
                let mut fs = state.filesystem();
                let written = fs.write(fd, buf, offset).await;
                if let Some(b) = &budget {
                    b.refund(asked - written.as_ref().map_or(0, |n| *n));
                }
                match written {
                    Ok(n) => Ok((Ok(n),)),
                    Err(e) => Ok((Err(fs.convert_error_code(e)?),)),
                }
            })
        },
    )?;
    types.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
            let state = store.data_mut();
            let stream = state.filesystem().write_via_stream(fd, offset);
            budget_stream(state, stream)
        },
    )?;
    types.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            let state = store.data_mut();
            let stream = state.filesystem().append_via_stream(fd);
            budget_stream(state, stream)
        },
    )?;
    Ok(())
}

/// The result of `write-via-stream` or `append-via-stream`, its stream put under the budget.
fn budget_stream<T: Budgeted>(
    state: &mut T,
    stream: Result<Resource<DynOutputStream>, wasmtime_wasi::p2::FsError>,
) -> wasmtime::Result<(Result<Resource<DynOutputStream>, ErrorCode>,)> {
    match stream {
        Ok(stream) => {
            if let Some(budget) = state.write_budget() {
                budgeted(state.ctx().table, &stream, budget)?;
            }
            Ok((Ok(stream),))
        }
        Err(e) => Ok((Err(state.filesystem().convert_error_code(e)?),)),
    }
}

/// Replaces the stream `stream` names in `table` by the same stream under `budget`.
fn budgeted(
    table: &mut ResourceTable,
    stream: &Resource<DynOutputStream>,
    budget: std::sync::Arc<WriteBudget>,
) -> wasmtime::Result<()> {
    let slot = table.get_mut(stream)?;
    let inner = std::mem::replace(slot, Box::new(Replaced));
    *slot = Box::new(BudgetedStream { inner, budget });
    Ok(())
}

/// A file stream whose writes are counted against the exporter's budget.
struct BudgetedStream {
    inner: DynOutputStream,
    budget: std::sync::Arc<WriteBudget>,
}

#[async_trait::async_trait]
impl Pollable for BudgetedStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[async_trait::async_trait]
impl OutputStream for BudgetedStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        let n = bytes.len() as u64;
        if !self.budget.take(n) {
            return Err(self.budget.exhausted());
        }
        self.inner
            .write(bytes)
            .inspect_err(|_| self.budget.refund(n))
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        let permit = self.inner.check_write()?;
        // Within the budget, no more than it; once it is spent, the next write itself fails
        // (a zero permit would make a blocking write wait forever instead).
        match usize::try_from(self.budget.left()).unwrap_or(usize::MAX) {
            0 => Ok(permit),
            left => Ok(permit.min(left)),
        }
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// What a budgeted stream's slot holds for the instant it is being replaced.
struct Replaced;

#[async_trait::async_trait]
impl Pollable for Replaced {
    async fn ready(&mut self) {}
}

impl OutputStream for Replaced {
    fn write(&mut self, _bytes: bytes::Bytes) -> StreamResult<()> {
        Err(StreamError::Closed)
    }

    fn flush(&mut self) -> StreamResult<()> {
        Err(StreamError::Closed)
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Err(StreamError::Closed)
    }
}
