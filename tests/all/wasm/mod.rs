//! The sandbox host.

mod answers;
mod cache;
mod compat;
mod compile;
mod credentials;
mod faults;
mod limits;
mod load;
mod oracle;
mod retry;
mod sandbox;
mod signals;
