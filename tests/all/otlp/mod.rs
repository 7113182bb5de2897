//! OTLP exporters against real processes on loopback.

mod collector;
mod faults;
