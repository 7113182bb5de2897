//! The shape of a component, checked before anything compiles it.
//!
//! Compilation is the host's own work on the guest's bytes, outside every sandbox limit: a
//! small file can ask for a great deal of it (a component nested thousands of levels deep
//! takes gigabytes to translate). One pass over the section headers, reading no function body,
//! counts what compilation would build and refuses a file beyond [`StructureLimits`] before a
//! byte of it is translated. The limits are far above what any toolchain emits (the Python
//! guest, the largest example, and its counts are in the limits table of
//! `docs/writing-an-exporter.md`); compilation itself is bounded by [`crate::wasm::artefact::compiler`].

use wasmparser::{Parser, Payload};

use crate::error::LoadError;

/// How much structure a component may have (per file, every nesting level counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StructureLimits {
    /// Components and modules nested inside one another (the file itself is level 1).
    pub max_nesting: u32,
    /// Components and core modules, the file included.
    pub max_units: u64,
    /// Component and core instances.
    pub max_instances: u64,
    /// Type definitions, component and core.
    pub max_types: u64,
    /// Core functions with a body, and lifted or lowered functions.
    pub max_functions: u64,
    /// Imports, exports and aliases.
    pub max_names: u64,
}

impl Default for StructureLimits {
    fn default() -> Self {
        Self {
            max_nesting: 16,
            max_units: 1_000,
            max_instances: 10_000,
            max_types: 100_000,
            max_functions: 200_000,
            max_names: 100_000,
        }
    }
}

/// What [`measure`] counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Structure {
    /// The deepest nesting seen (1: nothing nested).
    pub nesting: u32,
    /// Components and modules.
    pub units: u64,
    /// Component and core instances.
    pub instances: u64,
    /// Type definitions.
    pub types: u64,
    /// Functions.
    pub functions: u64,
    /// Imports, exports and aliases.
    pub names: u64,
}

impl Structure {
    /// The first limit this structure exceeds: (what, found, limit).
    fn over(&self, limits: &StructureLimits) -> Option<(&'static str, u64, u64)> {
        [
            (
                "nesting depth of components and modules",
                u64::from(self.nesting),
                u64::from(limits.max_nesting),
            ),
            ("components and modules", self.units, limits.max_units),
            ("instances", self.instances, limits.max_instances),
            ("type definitions", self.types, limits.max_types),
            ("functions", self.functions, limits.max_functions),
            ("imports, exports and aliases", self.names, limits.max_names),
        ]
        .into_iter()
        .find(|(_, found, limit)| found > limit)
    }
}

/// The names the component in `bytes` exports at its top level (`lens:exporter/
/// span-exporter@0.4.0`, …), in order, without compiling it; at most `limits.max_names`
/// are read (a file listing more is refused when loaded anyway). Malformed sections are
/// [`LoadError::Invalid`].
pub fn exports(bytes: &[u8], limits: &StructureLimits) -> Result<Vec<String>, LoadError> {
    let invalid = |e: wasmparser::BinaryReaderError| LoadError::Invalid { source: e.into() };
    let mut names = Vec::new();
    let mut depth = 0u32;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(invalid)? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(r) if depth == 1 => {
                for export in r {
                    if names.len() as u64 >= limits.max_names {
                        return Ok(names);
                    }
                    names.push(export.map_err(invalid)?.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

/// Counts `bytes`' structure, stopping at the first limit exceeded (so a deep file is never
/// walked to its bottom). Malformed section headers are [`LoadError::Invalid`].
pub fn measure(bytes: &[u8], limits: &StructureLimits) -> Result<Structure, LoadError> {
    let mut s = Structure::default();
    let mut depth = 0u32;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| LoadError::Invalid { source: e.into() })?;
        match payload {
            Payload::Version { .. } => {
                depth += 1;
                s.nesting = s.nesting.max(depth);
                s.units += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::TypeSection(r) => s.types += u64::from(r.count()),
            Payload::CoreTypeSection(r) => s.types += u64::from(r.count()),
            Payload::ComponentTypeSection(r) => s.types += u64::from(r.count()),
            Payload::FunctionSection(r) => s.functions += u64::from(r.count()),
            Payload::ComponentCanonicalSection(r) => s.functions += u64::from(r.count()),
            Payload::InstanceSection(r) => s.instances += u64::from(r.count()),
            Payload::ComponentInstanceSection(r) => s.instances += u64::from(r.count()),
            Payload::ImportSection(r) => s.names += u64::from(r.count()),
            Payload::ExportSection(r) => s.names += u64::from(r.count()),
            Payload::ComponentImportSection(r) => s.names += u64::from(r.count()),
            Payload::ComponentExportSection(r) => s.names += u64::from(r.count()),
            Payload::ComponentAliasSection(r) => s.names += u64::from(r.count()),
            _ => {}
        }
        if let Some((what, found, limit)) = s.over(limits) {
            return Err(LoadError::Structure { what, found, limit });
        }
    }
    Ok(s)
}
