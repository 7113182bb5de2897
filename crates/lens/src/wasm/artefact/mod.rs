//! Stage 3, the artefact: a checked component's native code, mapped from the on-disk cache
//! or compiled (and stored there), with its integrity checked before it is loaded.
//!
//! - [`engine`]: the process's wasmtime engines (plain and with fuel) and their epoch ticker;
//! - [`compiler`]: compiling, in a bounded child process where the program names one;
//! - [`cache`]: compiled components on disk, each verified against its integrity record
//!   before `Component::deserialize` trusts it, compiles of one entry under its lock so that
//!   the ranks of a node compile once.
//!
//! May call: [`super::checks`] (a compile worker measures the structure it is handed again);
//! never the later stages.

pub mod cache;
pub mod compiler;
pub mod engine;
