//! `span-data` and `key-value` lowered by hand, a list at a time.
//!
//! The derived lowering writes each scalar field through its own guest-memory lookup
//! (`LowerContext::get`), about forty per span; that lookup led the typed boundary's profile
//! (`docs/benchmarks.md`, levers). Here each list is allocated in the guest as usual, its elements are
//! rendered into a host buffer (the "image": scalars, discriminants and the pointer/length pairs
//! of the strings and lists already copied in), and the image is copied in once. Guest
//! allocations are exactly those of the canonical ABI, in the same order: one `realloc` per
//! string and per list, empty ones included.
//!
//! Offsets come from the canonical ABI information of each field's type, as the derive macro
//! computes them; `wasmtime` type-checks these records against the guest's WIT (by field name
//! and type) when the `export` function is looked up. Strings are copied directly when the guest
//! uses UTF-8 (every toolchain Lens ships examples for); other encodings go through wasmtime's
//! own string lowering.
//!
//! The only user of `wasmtime::component::__internal` (wasmtime's unstable lowering API) in the
//! crate, and the reason wasmtime is pinned to an exact version: the default-on `hand-lowering`
//! feature compiles it; without the feature the derived lowering takes its place.

use std::mem::MaybeUninit;
use std::sync::LazyLock;

use wasmtime::component::__internal::wasmtime_environ::component::{
    ComponentTypes, StringEncoding, TypeRecord,
};
use wasmtime::component::__internal::{
    CanonicalAbiInfo, ComponentVariant, InterfaceType, LowerContext, bad_type_info,
};
use wasmtime::component::{ComponentType, Lower};
use wasmtime::{Result, bail};

use super::borrowed::{
    EventRef, KeyValueRef, LinkRef, SpanContextRef, SpanDataRef, StatusRef, ValueRef,
};
use crate::bindings::types::SpanKind;

/// The canonical ABI's limit on a string's byte length.
const MAX_STRING_BYTES: usize = (1 << 31) - 1;

/// Field offsets of a record whose field types have these ABIs, in order.
fn offsets<const N: usize>(fields: [CanonicalAbiInfo; N]) -> [usize; N] {
    let mut at = 0;
    fields.map(|abi| abi.next_field32_size(&mut at))
}

static KEY_VALUE: LazyLock<[usize; 2]> = LazyLock::new(|| offsets([<&str>::ABI, ValueRef::ABI]));

static SPAN_CONTEXT: LazyLock<[usize; 5]> =
    LazyLock::new(|| offsets([<(u64, u64)>::ABI, u64::ABI, u8::ABI, bool::ABI, String::ABI]));

static SPAN_DATA: LazyLock<[usize; 13]> = LazyLock::new(|| {
    offsets([
        SpanContextRef::ABI,
        <Option<u64>>::ABI,
        SpanKind::ABI,
        <&str>::ABI,
        u64::ABI,
        u64::ABI,
        <Vec<KeyValueRef<'_>>>::ABI,
        <Vec<EventRef<'_>>>::ABI,
        <Vec<LinkRef<'_>>>::ABI,
        StatusRef::ABI,
        u32::ABI,
        u32::ABI,
        u32::ABI,
    ])
});

fn record(types: &ComponentTypes, ty: InterfaceType) -> &TypeRecord {
    match ty {
        InterfaceType::Record(r) => &types[r],
        _ => bad_type_info(),
    }
}

fn element(types: &ComponentTypes, ty: InterfaceType) -> InterfaceType {
    match ty {
        InterfaceType::List(l) => types[l].element,
        _ => bad_type_info(),
    }
}

fn pair(ptr: usize, len: usize) -> [u8; 8] {
    let mut b = [0; 8];
    b[..4].copy_from_slice(&(ptr as u32).to_le_bytes());
    b[4..].copy_from_slice(&(len as u32).to_le_bytes());
    b
}

fn put(image: &mut [u8], at: usize, bytes: &[u8]) {
    image[at..at + bytes.len()].copy_from_slice(bytes);
}

/// The lowering state of one list: the context and whether strings are plain UTF-8 copies.
struct Cx<'c, 'a, T: 'static> {
    cx: &'c mut LowerContext<'a, T>,
    utf8: bool,
}

impl<'c, 'a, T: 'static> Cx<'c, 'a, T> {
    fn new(cx: &'c mut LowerContext<'a, T>) -> Self {
        let utf8 = matches!(cx.options().string_encoding, StringEncoding::Utf8);
        #[cfg(test)]
        let utf8 = utf8 && !test_hooks::GENERIC_STRINGS.load(std::sync::atomic::Ordering::SeqCst);
        Self { cx, utf8 }
    }

    /// Copies `s` into the guest; returns its pointer/length pair. `at` is where the pair goes
    /// in guest memory (used by wasmtime's lowering for non-UTF-8 guests).
    fn string(&mut self, s: &str, at: usize) -> Result<[u8; 8]> {
        if !self.utf8 {
            #[cfg(test)]
            test_hooks::GENERIC_LOWERED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            s.linear_lower_to_memory(self.cx, InterfaceType::String, at)?;
            return Ok(*self.cx.get::<8>(at));
        }
        if s.len() > MAX_STRING_BYTES {
            bail!("string length of {} too large to copy into wasm", s.len());
        }
        let ptr = self.cx.realloc(0, 0, 1, s.len())?;
        self.cx.as_slice_mut()[ptr..][..s.len()].copy_from_slice(s.as_bytes());
        Ok(pair(ptr, s.len()))
    }

    /// Renders `items` with `render` into one image and copies it to `base` in the guest.
    fn fill<I: ComponentType>(
        &mut self,
        items: &[I],
        ty: InterfaceType,
        base: usize,
        render: impl Fn(&mut Self, &I, InterfaceType, usize, &mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let size = items.len() * I::SIZE32;
        if size == 0 {
            return Ok(());
        }
        let mut image = vec![0; size];
        for (i, (item, chunk)) in items.iter().zip(image.chunks_mut(I::SIZE32)).enumerate() {
            render(self, item, ty, base + i * I::SIZE32, chunk)?;
        }
        self.cx.as_slice_mut()[base..][..size].copy_from_slice(&image);
        Ok(())
    }

    /// Allocates a list of `items` (of list type `ty`) in the guest and fills it; returns its
    /// pointer/length pair.
    fn list<I: ComponentType>(
        &mut self,
        items: &[I],
        ty: InterfaceType,
        render: impl Fn(&mut Self, &I, InterfaceType, usize, &mut [u8]) -> Result<()>,
    ) -> Result<[u8; 8]> {
        let base = self.cx.realloc(0, 0, I::ALIGN32, items.len() * I::SIZE32)?;
        self.fill(items, element(self.cx.types, ty), base, render)?;
        Ok(pair(base, items.len()))
    }

    /// A list of records lowered by wasmtime (events, links: usually empty).
    fn derived_list<I: Lower>(&mut self, items: &[I], ty: InterfaceType) -> Result<[u8; 8]> {
        let base = self.cx.realloc(0, 0, I::ALIGN32, items.len() * I::SIZE32)?;
        I::linear_store_list_to_memory(self.cx, element(self.cx.types, ty), base, items)?;
        Ok(pair(base, items.len()))
    }

    fn key_value(
        &mut self,
        kv: &KeyValueRef<'_>,
        ty: InterfaceType,
        at: usize,
        image: &mut [u8],
    ) -> Result<()> {
        let [key, value] = *KEY_VALUE;
        put(image, key, &self.string(kv.key, at + key)?);
        let image = &mut image[value..value + ValueRef::SIZE32];
        let payload = ValueRef::PAYLOAD_OFFSET32;
        // Case numbers are the WIT variant's order (string, bool, s64, f64, …).
        match &kv.value {
            ValueRef::String(s) => {
                image[0] = 0;
                put(image, payload, &self.string(s, at + value + payload)?);
            }
            ValueRef::Bool(b) => {
                image[0] = 1;
                image[payload] = u8::from(*b);
            }
            ValueRef::S64(i) => {
                image[0] = 2;
                put(image, payload, &i.to_le_bytes());
            }
            ValueRef::F64(f) => {
                image[0] = 3;
                put(image, payload, &f.to_bits().to_le_bytes());
            }
            // Bytes and arrays: wasmtime's lowering, read back into the image.
            other => {
                let value_ty = record(self.cx.types, ty).fields[1].ty;
                other.linear_lower_to_memory(self.cx, value_ty, at + value)?;
                image.copy_from_slice(&self.cx.as_slice_mut()[at + value..][..image.len()]);
            }
        }
        Ok(())
    }

    fn span(
        &mut self,
        s: &SpanDataRef<'_>,
        ty: InterfaceType,
        at: usize,
        image: &mut [u8],
    ) -> Result<()> {
        let types = self.cx.types;
        let fields = &record(types, ty).fields;
        let o = *SPAN_DATA;
        // span-context
        let [trace, span, flags, remote, state] = SPAN_CONTEXT.map(|f| o[0] + f);
        let cx = &s.span_context;
        put(image, trace, &cx.trace_id.0.to_le_bytes());
        put(image, trace + 8, &cx.trace_id.1.to_le_bytes());
        put(image, span, &cx.span_id.to_le_bytes());
        image[flags] = cx.trace_flags;
        image[remote] = u8::from(cx.is_remote);
        put(image, state, &self.string(&cx.trace_state, at + state)?);
        // parent-span-id: option<span-id>
        if let Some(parent) = s.parent_span_id {
            image[o[1]] = 1;
            put(
                image,
                o[1] + <Option<u64>>::PAYLOAD_OFFSET32,
                &parent.to_le_bytes(),
            );
        }
        // span-kind: the generated enum is `repr(u8)` in the WIT's case order.
        image[o[2]] = s.span_kind as u8;
        put(image, o[3], &self.string(s.name, at + o[3])?);
        put(image, o[4], &s.start_time.to_le_bytes());
        put(image, o[5], &s.end_time.to_le_bytes());
        put(
            image,
            o[6],
            &self.list(&s.attributes, fields[6].ty, Self::key_value)?,
        );
        put(image, o[7], &self.derived_list(&s.events, fields[7].ty)?);
        put(image, o[8], &self.derived_list(&s.links, fields[8].ty)?);
        // status: unset, ok, error(string)
        image[o[9]] = match s.status {
            StatusRef::Unset => 0,
            StatusRef::Ok => 1,
            StatusRef::Error(message) => {
                let at_payload = o[9] + StatusRef::PAYLOAD_OFFSET32;
                put(image, at_payload, &self.string(message, at + at_payload)?);
                2
            }
        };
        put(image, o[10], &s.dropped_attributes.to_le_bytes());
        put(image, o[11], &s.dropped_events.to_le_bytes());
        put(image, o[12], &s.dropped_links.to_le_bytes());
        Ok(())
    }
}

fn flat_unsupported(what: &str) -> Result<()> {
    bail!("`{what}` is only lowered into guest memory, as a list element")
}

/// `Lower` for a record rendered by `render`: alone or as a list, through one image.
macro_rules! lowered_by_image {
    ($ty:ident, $wit:literal, $render:path) => {
        // SAFETY: `Lower` is unsafe because wasmtime trusts an implementation to write exactly
        // `Self::SIZE32` bytes at `offset` in the layout `ComponentType` (derived, so checked by
        // wasmtime against the guest's WIT) describes. `fill` writes `items.len() * SIZE32`
        // bytes at `offset` through `as_slice_mut` (bounds-checked slices of guest memory that
        // wasmtime allocated for exactly that list), at the offsets computed from each field's
        // `CanonicalAbiInfo` as the derive macro computes them; every pointer it writes comes
        // from `realloc` in the same call or from wasmtime's own lowering. No raw pointer is
        // dereferenced here.
        unsafe impl Lower for $ty<'_> {
            fn linear_lower_to_flat<T>(
                &self,
                _: &mut LowerContext<'_, T>,
                _: InterfaceType,
                _: &mut MaybeUninit<Self::Lower>,
            ) -> Result<()> {
                flat_unsupported($wit)
            }

            fn linear_lower_to_memory<T>(
                &self,
                cx: &mut LowerContext<'_, T>,
                ty: InterfaceType,
                offset: usize,
            ) -> Result<()> {
                Cx::new(cx).fill(std::slice::from_ref(self), ty, offset, $render)
            }

            fn linear_store_list_to_memory<T>(
                cx: &mut LowerContext<'_, T>,
                ty: InterfaceType,
                offset: usize,
                items: &[Self],
            ) -> Result<()> {
                Cx::new(cx).fill(items, ty, offset, $render)
            }
        }
    };
}

lowered_by_image!(KeyValueRef, "key-value", Cx::key_value);
lowered_by_image!(SpanDataRef, "span-data", Cx::span);

/// Test hooks: make every string go through wasmtime's lowering, as for a non-UTF-8 guest, and
/// count those strings (the test lives with the host, which runs a real guest).
#[cfg(test)]
pub(crate) mod test_hooks {
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    /// Forces wasmtime's string lowering.
    pub(crate) static GENERIC_STRINGS: AtomicBool = AtomicBool::new(false);
    /// Strings lowered that way.
    pub(crate) static GENERIC_LOWERED: AtomicUsize = AtomicUsize::new(0);
}
