//! The README's and the docs' code blocks.
