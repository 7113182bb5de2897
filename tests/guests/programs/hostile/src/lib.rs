//! A misbehaving exporter for tests. `settings.mode` picks the misbehaviour; probes report what
//! they found as the export's error so the host test can read it.

use std::sync::Mutex;

wit_bindgen::generate!({ path: "../../../../wit", world: "exporter" });

use exports::lens::exporter::span_exporter::Guest;
use lens::exporter::types::{Batch, Encoding, Resource};

struct Settings {
    mode: String,
    sleep_ms: u64,
    every: u64,
    calls: u64,
    authority: String,
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

struct Hostile;

impl Guest for Hostile {
    fn init(settings: Vec<(String, String)>, _resource: Resource) -> Result<Encoding, String> {
        let get = |k: &str| {
            settings
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let mut s = SETTINGS.lock().unwrap();
        s.mode = get("mode").ok_or("setting `mode` is required")?;
        s.sleep_ms = get("sleep_ms").and_then(|v| v.parse().ok()).unwrap_or(0);
        s.every = get("every").and_then(|v| v.parse().ok()).unwrap_or(3);
        s.authority = get("authority").unwrap_or_else(|| "127.0.0.1:9".into());
        if s.mode == "refuse-init" {
            return Err("this exporter refuses to start".into());
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

    fn export(batch: Batch) -> Result<(), String> {
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
            "print" => {
                println!("hello from the guest");
                eprintln!("{}", "x".repeat(5000));
                print!("no newline at the end");
                // A reactor never exits, so nothing flushes Rust's line-buffered stdout for it.
                std::io::Write::flush(&mut std::io::stdout()).map_err(|e| e.to_string())
            }
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
            "http" => Err(format!("probe {}", http_probe(&authority))),
            other => Err(format!("unknown mode `{other}`")),
        }
    }

    fn force_flush() -> Result<(), String> {
        Ok(())
    }

    fn shutdown() -> Result<(), String> {
        Ok(())
    }
}

export!(Hostile);
