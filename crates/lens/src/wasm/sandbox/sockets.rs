//! No sockets, said as a sentence. Lens grants a guest no sockets (TCP, UDP or name lookups;
//! `wasi:http` makes its own checked connections), yet every componentize-py component imports
//! `wasi:sockets` (CPython's `socket` module is linked in), so importing it cannot be refused at
//! load. What is refused is its use: the host shadows the three functions a socket starts from
//! (`create-tcp-socket`, `create-udp-socket`, `resolve-addresses`), answers `access-denied`
//! (a libc's `EACCES`, Python's `PermissionError`) and notes what was denied. The note is
//! logged once per instance and added to the message of the call that ran into it, so that a
//! library that opens sockets (`requests`, `urllib3`) fails with what to do instead, not with a
//! bare "permission denied".

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::ResolveAddressStream;
use wasmtime_wasi::p2::bindings::sockets::network::{ErrorCode, IpAddressFamily, Network};
use wasmtime_wasi::p2::bindings::sockets::tcp::TcpSocket;
use wasmtime_wasi::p2::bindings::sockets::udp::UdpSocket;

/// The version of `wasi:sockets` wasmtime-wasi defines (older minor versions a guest imports
/// resolve to it).
const VERSION: &str = "0.2.12";

/// What a guest should do instead of opening a socket.
pub const USE_HTTP: &str = "Lens grants no sockets: send through wasi:http to a host in \
     the entry's allowed_hosts (lens_exporter_sdk.http in Python, post in the JavaScript SDK, \
     the Rust SDK's http feature)";

/// A store's state that records denied socket use: the sandbox's host state implements it (a
/// trait, so that this module does not depend on the sandbox that uses it).
pub(crate) trait DeniesSockets: Send + 'static {
    /// Notes that the guest was denied `what` (e.g. `a TCP socket`).
    fn denied(&mut self, what: String);
}

/// What one instance was denied since the host last asked, and whether it was warned.
#[derive(Debug, Default)]
pub(crate) struct Denials {
    /// Prefix of the warning, e.g. `wasm exporter `vendor` rank 3`.
    log_prefix: std::sync::Arc<str>,
    warned: bool,
    pending: Option<String>,
}

impl Denials {
    pub(crate) fn new(log_prefix: std::sync::Arc<str>) -> Self {
        Self {
            log_prefix,
            ..Self::default()
        }
    }

    /// Records `what`, warning the first time.
    pub(crate) fn record(&mut self, what: String) {
        if !self.warned {
            self.warned = true;
            log::warn!(
                "{}: denied {what}. {USE_HTTP} (warned once per instance)",
                self.log_prefix
            );
        }
        self.pending.get_or_insert(what);
    }

    /// The sentence to add to the message of the call that ran into a denial (the first one
    /// since the last call), if any.
    pub(crate) fn take(&mut self) -> Option<String> {
        self.pending
            .take()
            .map(|what| format!("it was denied {what}. {USE_HTTP}"))
    }
}

/// Shadows the functions that start a socket with ones that deny it.
pub(crate) fn add_to_linker<T: DeniesSockets>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    deny_socket::<T, TcpSocket>(linker, "tcp", "TCP")?;
    deny_socket::<T, UdpSocket>(linker, "udp", "UDP")?;
    linker
        .instance(&format!("wasi:sockets/ip-name-lookup@{VERSION}"))?
        .func_wrap(
            "resolve-addresses",
            |mut store, (_network, name): (Resource<Network>, String)| {
                // The name is the guest's: shown escaped and cut, as guest text always is.
                let shown = super::guest_output::shown(name, 200);
                store
                    .data_mut()
                    .denied(format!("a name lookup of `{shown}`"));
                Ok((Err::<Resource<ResolveAddressStream>, _>(
                    ErrorCode::AccessDenied,
                ),))
            },
        )?;
    Ok(())
}

/// Shadows `wasi:sockets/{proto}-create-socket.create-{proto}-socket` (whose socket resource
/// is `R`) with a denial naming `label`.
fn deny_socket<T: DeniesSockets, R: 'static>(
    linker: &mut Linker<T>,
    proto: &str,
    label: &'static str,
) -> wasmtime::Result<()> {
    linker
        .instance(&format!("wasi:sockets/{proto}-create-socket@{VERSION}"))?
        .func_wrap(
            &format!("create-{proto}-socket"),
            move |mut store, (family,): (IpAddressFamily,)| {
                store
                    .data_mut()
                    .denied(format!("a {label} socket ({})", family_name(family)));
                Ok((Err::<Resource<R>, _>(ErrorCode::AccessDenied),))
            },
        )?;
    Ok(())
}

fn family_name(family: IpAddressFamily) -> &'static str {
    match family {
        IpAddressFamily::Ipv4 => "IPv4",
        IpAddressFamily::Ipv6 => "IPv6",
    }
}
