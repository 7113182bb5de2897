//! A misbehaving exporter for tests. `settings.mode` picks the misbehaviour; probes report what
//! they found as the export's error so the host test can read it.

use std::sync::Mutex;

wit_bindgen::generate!({ path: "../../../../wit", world: "exporter" });

use exports::lens::exporter::span_exporter::Guest;
use lens::exporter::types::{Batch, Encoding, ExportError, Resource};

struct Settings {
    mode: String,
    sleep_ms: u64,
    every: u64,
    calls: u64,
    authority: String,
}

/// Memory held by `touch-and-sleep`.
static HELD: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// Every setting `init` was given.
static ALL: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn setting(key: &str) -> Option<String> {
    ALL.lock()
        .unwrap()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

static SETTINGS: Mutex<Settings> = Mutex::new(Settings {
    mode: String::new(),
    sleep_ms: 0,
    every: 3,
    calls: 0,
    authority: String::new(),
});

fn http_probe(authority: &str) -> String {
    use wasip2::http::outgoing_handler::handle;
    use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
    let request = OutgoingRequest::new(Fields::new());
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some("/v1/traces"));
    match handle(request, None) {
        Err(code) => format!("http error: {code:?}"),
        Ok(future) => {
            future.subscribe().block();
            match future.get() {
                Some(Ok(Ok(response))) => format!("http status {}", response.status()),
                Some(Ok(Err(code))) => format!("http error: {code:?}"),
                other => format!("http: {other:?}"),
            }
        }
    }
}

fn fill_via_std() -> String {
    use std::io::Write;
    let mut file = match std::fs::File::create("/out/fill") {
        Ok(f) => f,
        Err(e) => return format!("probe fill: cannot create: {e}"),
    };
    let chunk = vec![b'f'; 1 << 20];
    let mut written = 0;
    for _ in 0..64 {
        if let Err(e) = file.write_all(&chunk).and_then(|()| file.flush()) {
            return format!("probe fill: {written} bytes, then: {e}");
        }
        written += chunk.len();
    }
    format!("probe fill: {written} bytes, no error")
}

fn fill_via_descriptor() -> String {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let Some((dir, _)) = wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, path)| path == "/out")
    else {
        return "probe fill-direct: no /out".into();
    };
    let file = match dir.open_at(
        PathFlags::empty(),
        "fill-direct",
        OpenFlags::CREATE,
        DescriptorFlags::WRITE,
    ) {
        Ok(f) => f,
        Err(e) => return format!("probe fill-direct: cannot create: {e:?}"),
    };
    let chunk = vec![b'd'; 1 << 20];
    let mut written = 0u64;
    for _ in 0..64 {
        match file.write(&chunk, written) {
            Ok(n) => written += n,
            Err(e) => return format!("probe fill-direct: {written} bytes, then: {e:?}"),
        }
    }
    format!("probe fill-direct: {written} bytes, no error")
}

/// Header fields as text (values as UTF-8, lossy), so that a value is searchable in a report.
fn shown_fields(entries: &[(String, Vec<u8>)]) -> String {
    let shown: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v)))
        .collect();
    format!("[{}]", shown.join(", "))
}

/// One request to `authority` over plain HTTP with `headers` set by the guest: what the guest
/// can see of it (its headers as it holds them, just before handing it over; the response's
/// status, headers and body).
fn http_exchange(authority: &str, headers: &[(&str, &str)]) -> String {
    use wasip2::http::outgoing_handler::handle;
    use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
    let fields = Fields::new();
    for (k, v) in headers {
        let _ = fields.set(k, &[v.as_bytes().to_vec()]);
    }
    let request = OutgoingRequest::new(fields);
    let _ = request.set_method(&Method::Post);
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some("/ingest"));
    let body = request.body().expect("body");
    let seen = {
        let view = request.headers();
        shown_fields(&view.entries())
    };
    let mut report = format!("request headers seen by the guest: {seen}; ");
    match handle(request, None) {
        Err(code) => report += &format!("error: {code:?}"),
        Ok(future) => {
            {
                let out = body.write().expect("stream");
                let _ = out.blocking_write_and_flush(b"spans");
            }
            let _ = OutgoingBody::finish(body, None);
            future.subscribe().block();
            match future.get() {
                Some(Ok(Ok(response))) => {
                    report += &format!(
                        "status {}; response headers {}; ",
                        response.status(),
                        shown_fields(&response.headers().entries())
                    );
                    if let Ok(incoming) = response.consume()
                        && let Ok(stream) = incoming.stream()
                    {
                        use wasip2::io::streams::StreamError;
                        let mut read = Vec::new();
                        let end = loop {
                            match stream.blocking_read(65536) {
                                Ok(chunk) => read.extend(chunk),
                                Err(StreamError::Closed) => break "closed".to_string(),
                                Err(StreamError::LastOperationFailed(e)) => {
                                    break format!("failed: {}", e.to_debug_string());
                                }
                            }
                        };
                        let shown = if read.len() > 200 {
                            format!("{} bytes", read.len())
                        } else {
                            format!("{:?}", String::from_utf8_lossy(&read))
                        };
                        report += &format!("body {shown}, then {end}");
                    }
                }
                Some(Ok(Err(code))) => report += &format!("error: {code:?}"),
                other => report += &format!("{other:?}"),
            }
        }
    }
    report
}

/// Every way a guest has to learn a host-held credential, tried: its environment, its
/// settings, the headers of its own request (with its own guess set under the credential's
/// header), requests to the credential's host, to the same server by another name and to a
/// second allowed host, and its whole linear memory afterwards. Everything found is written to
/// `/out/found.txt` (and the memory to `/out/memory.bin`): a granted folder, the last way out.
fn steal_credential() -> String {
    let header = setting("header").unwrap_or_else(|| "x-acme-key".into());
    let targets: Vec<String> = setting("targets")
        .unwrap_or_default()
        .split(',')
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect();
    let mut found = String::new();
    found += &format!("env: {:?}\n", std::env::vars().collect::<Vec<_>>());
    found += &format!("settings: {:?}\n", ALL.lock().unwrap());
    for target in &targets {
        found += &format!(
            "{target}: {}\n",
            http_exchange(target, &[(&header, "guest-guess"), ("x-other", "1")])
        );
    }
    if let Err(e) = std::fs::write("/out/found.txt", &found) {
        return format!("probe steal: cannot write: {e}");
    }
    // The whole memory, as it is after the requests (from address 1: Rust has no slice at 0).
    let size = core::arch::wasm32::memory_size(0) * 65536;
    let memory: Vec<u8> = (1..size)
        .map(|at| unsafe { core::ptr::read_volatile(at as *const u8) })
        .collect();
    if let Err(e) = std::fs::write("/out/memory.bin", &memory) {
        return format!("probe steal: cannot write memory: {e}");
    }
    format!("probe steal: done, {} bytes of memory", memory.len())
}

struct Hostile;

impl Guest for Hostile {
    fn init(settings: Vec<(String, String)>, _resource: Resource) -> Result<Encoding, String> {
        let get = |k: &str| {
            settings
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        *ALL.lock().unwrap() = settings.clone();
        let mut s = SETTINGS.lock().unwrap();
        s.mode = get("mode").ok_or("setting `mode` is required")?;
        s.sleep_ms = get("sleep_ms").and_then(|v| v.parse().ok()).unwrap_or(0);
        s.every = get("every").and_then(|v| v.parse().ok()).unwrap_or(3);
        s.authority = get("authority").unwrap_or_else(|| "127.0.0.1:9".into());
        if s.mode == "refuse-init" {
            return Err("this exporter refuses to start".into());
        }
        if s.mode == "trap-init" {
            panic!("this exporter traps in init");
        }
        if let Some(ms) = get("init_sleep_ms").and_then(|v| v.parse().ok()) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        match get("encoding").as_deref() {
            None | Some("typed") => Ok(Encoding::Typed),
            Some("otlp") => Ok(Encoding::OtlpProtobuf),
            Some("otlp-json") => Ok(Encoding::OtlpJson),
            Some(other) => Err(format!("unknown encoding `{other}`")),
        }
    }

    fn export(batch: Batch) -> Result<(), ExportError> {
        export(batch).map_err(ExportError::Rejected)
    }

    fn force_flush() -> Result<(), String> {
        Ok(())
    }

    fn shutdown() -> Result<(), String> {
        Ok(())
    }
}

/// What `mode` does with a batch; an error is a rejection.
fn export(batch: Batch) -> Result<(), String> {
    {
        let (mode, sleep_ms, every, calls, authority) = {
            let mut s = SETTINGS.lock().unwrap();
            s.calls += 1;
            (
                s.mode.clone(),
                s.sleep_ms,
                s.every,
                s.calls,
                s.authority.clone(),
            )
        };
        let names: Vec<String> = match &batch {
            Batch::Typed(groups) => groups
                .iter()
                .flat_map(|g| g.spans.iter().map(|s| s.name.clone()))
                .collect(),
            Batch::OtlpProtobuf(_) | Batch::OtlpJson(_) => Vec::new(),
        };
        match mode.as_str() {
            "loop" => loop {
                std::hint::spin_loop();
            },
            "memory-bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(std::hint::black_box(vec![7u8; 1 << 20]));
                }
            }
            // Accepts everything and does nothing: the pure cost of crossing the boundary.
            "noop" => Ok(()),
            "panic-on-boom" => {
                if names.iter().any(|n| n == "boom") {
                    panic!("a span named boom");
                }
                Ok(())
            }
            "trap-every" => {
                if calls % every == 0 {
                    panic!("trap on call {calls}");
                }
                Ok(())
            }
            "huge-error" => Err("E".repeat(10 << 20)),
            "slow" => {
                std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
                Ok(())
            }
            // Holds `touch_mib` MiB of touched memory, then blocks in a WASI sleep on every call:
            // what an abandoned instance would keep alive.
            "touch-and-sleep" => {
                let mib = setting("touch_mib")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(48);
                let mut held = HELD.lock().unwrap();
                if held.is_empty() {
                    *held = vec![1u8; mib << 20];
                }
                drop(held);
                std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
                Ok(())
            }
            "print" => {
                println!("hello from the guest");
                // A backslash and an `n`, not a newline: the log must tell them apart.
                println!(r"C:\new\table");
                eprintln!("{}", "x".repeat(5000));
                print!("no newline at the end");
                // A reactor never exits, so nothing flushes Rust's line-buffered stdout for it.
                std::io::Write::flush(&mut std::io::stdout()).map_err(|e| e.to_string())
            }
            // Text meant to fool a terminal or a log reader: colours, a window title, a
            // carriage return, and a newline followed by a line that looks like Lens's own.
            "escapes" => {
                let forged = "\u{1b}[31mred\u{1b}[0m \u{1b}]0;owned\u{7} \r\n[WARN lens] all good";
                eprintln!("stderr says {forged}");
                Err(format!("error says {forged}"))
            }
            // `mib` MiB on stdout without a newline.
            "huge-stdout" => {
                let chunk = vec![b'z'; 1 << 20];
                let mut out = std::io::stdout();
                let mib = setting("mib").and_then(|v| v.parse().ok()).unwrap_or(100);
                for _ in 0..mib {
                    std::io::Write::write_all(&mut out, &chunk).map_err(|e| e.to_string())?;
                }
                std::io::Write::flush(&mut out).map_err(|e| e.to_string())
            }
            // Writes 1 MiB at a time into /out/fill until a write fails (or 64 MiB).
            "disk-fill" => Err(fill_via_std()),
            // The same through `descriptor.write` directly.
            "disk-fill-direct" => Err(fill_via_descriptor()),
            "read-file" => Err(format!(
                "probe read /etc/passwd: {:?}",
                std::fs::read_to_string("/etc/passwd").map(|s| s.len())
            )),
            "read-env" => Err(format!(
                "probe env: {:?}",
                std::env::vars().collect::<Vec<_>>()
            )),
            "socket" => Err(format!(
                "probe socket: {:?}",
                std::net::TcpStream::connect("127.0.0.1:9").map(|_| ())
            )),
            // A UDP socket and a name lookup, the other two ways to a socket.
            "udp-and-lookup" => {
                use std::net::ToSocketAddrs;
                Err(format!(
                    "probe udp: {:?}; lookup: {:?}",
                    std::net::UdpSocket::bind("127.0.0.1:0").map(|_| ()),
                    "collector.example:4318".to_socket_addrs().map(|_| ())
                ))
            }
            "http" => Err(format!("probe {}", http_probe(&authority))),
            "steal-credential" => Err(steal_credential()),
            // One write of `mib` MiB (default 32) to stdout in a single host call.
            "huge-write" => {
                let mib = setting("mib").and_then(|v| v.parse().ok()).unwrap_or(32);
                let out = wasip2::cli::stdout::get_stdout();
                Err(format!(
                    "probe huge-write: {:?}",
                    out.write(&vec![b'w'; mib << 20])
                ))
            }
            // Creates host resources (header fields) until the host refuses one.
            "resource-loop" => {
                let mut held = Vec::new();
                loop {
                    held.push(wasip2::http::types::Fields::new());
                    if held.len() > 10_000_000 {
                        return Err(format!("probe resource-loop: {} resources", held.len()));
                    }
                }
            }
            other => Err(format!("unknown mode `{other}`")),
        }
    }
}

export!(Hostile);
