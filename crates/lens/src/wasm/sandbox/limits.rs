//! The memory cap of one instance: every linear memory and table it creates counted against
//! one limit, their number capped too, and the peak remembered.

/// Default linear memory cap: large enough for componentize-py/JS guests (~13 MiB at start).
pub const DEFAULT_MEMORY_LIMIT_MIB: u64 = 256;

/// The error a guest gets when its memories and tables together would exceed the cap (a trap).
#[derive(Debug, thiserror::Error)]
#[error(
    "memory limit of {limit} bytes exceeded: the instance asked for {desired} bytes of memories \
     and tables in all"
)]
pub struct MemoryLimitExceeded {
    /// The cap.
    pub limit: usize,
    /// What the instance would have held in all.
    pub desired: usize,
}

/// Bytes a table element is counted as (a function reference: one pointer on 64-bit hosts).
pub const TABLE_ELEMENT_BYTES: usize = 8;
/// Core instances one component instance may create (every language Lens has examples in
/// needs far fewer; a componentize-py guest is the largest).
pub const MAX_INSTANCES: usize = 64;
/// Linear memories one component instance may create.
pub const MAX_MEMORIES: usize = 16;
/// Tables one component instance may create.
pub const MAX_TABLES: usize = 64;
/// Component-model handles (resources the guest holds: its own, and the host's it was given)
/// live at once in one instance's store; past it, creating one traps. wasmtime's default is
/// 100,000; no example guest holds more than a few dozen.
pub const MAX_COMPONENT_HANDLES: usize = 10_000;
/// Host resources (WASI's: fields, streams, descriptors, requests) live at once in one
/// instance's table; past it, the call creating one fails (a trap in the guest). wasmtime's
/// default is 1,000,000.
pub const MAX_HOST_RESOURCES: usize = 10_000;

/// The error wasmtime gives when a guest hands the host more than the store's hostcall fuel
/// (`max_answer_mib`) in one call; it has no public type, so it is known by its message.
pub(crate) fn is_answer_limit(e: &wasmtime::Error) -> bool {
    e.chain().any(|c| {
        c.to_string()
            .contains("fuel allocated for hostcalls has been exhausted")
    })
}

/// Caps what one instance allocates: all its linear memories and tables together, and their
/// number, and remembers the largest total it held (the instance's peak memory).
///
/// wasmtime asks before creating a memory or a table (`current = 0`) and before growing one,
/// never telling which one it is; so the limiter keeps the running total of every grant.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    /// Bytes of memories and tables granted so far.
    total: usize,
    /// The last grant, taken back if wasmtime then fails to apply it.
    last_grant: usize,
    /// Largest total so far, bytes.
    pub peak: usize,
}

impl MemoryLimiter {
    /// A limiter capping an instance at `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            total: 0,
            last_grant: 0,
            peak: 0,
        }
    }

    fn grant(&mut self, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let more = desired.saturating_sub(current);
        let total = self.total.saturating_add(more);
        if total > self.limit {
            return Err(MemoryLimitExceeded {
                limit: self.limit,
                desired: total,
            }
            .into());
        }
        self.total = total;
        self.last_grant = more;
        self.peak = self.peak.max(total);
        Ok(true)
    }

    fn revoke_last(&mut self) {
        self.total -= std::mem::take(&mut self.last_grant);
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grant(current, desired)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.revoke_last();
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grant(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }

    fn table_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.revoke_last();
        Ok(())
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }
}
