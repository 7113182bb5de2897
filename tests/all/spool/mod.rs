//! The disk spool (`spool = {…}` on an exporter entry): outages and restarts against a real
//! collector, and `lens spool status|replay` on what a job left.

mod faults;
mod metrics;
mod outage;
mod replay;
mod status;
