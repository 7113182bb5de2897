//! A vendor integration as a sandboxed exporter: asks for the OTLP protobuf encoding and POSTs
//! each batch, unchanged, to an OTLP/HTTP endpoint with `wasi:http`.
//!
//! Settings:
//! - `endpoint` (required): e.g. `https://ingest.example.com/v1/traces`. The config must list
//!   its host in `allowed_hosts`, or every request is denied.
//! - `api_key_env` (default `VENDOR_API_KEY`): environment variable holding the API key, sent
//!   as `api_key_header` (default `x-api-key`). Grant it with
//!   `env = { VENDOR_API_KEY = { from_host = "VENDOR_API_KEY" } }`; without it no key is sent.
//! - `attempts` (default 3): tries per batch; retries wait 50 ms, 100 ms, … and stop at
//!   `budget_ms` (default 1500), which should stay below the exporter's `call_timeout_ms`.

use std::sync::Mutex;

use wasip2::clocks::monotonic_clock;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};

wit_bindgen::generate!({ path: "../../wit", world: "exporter" });

use exports::lens::exporter::span_exporter::Guest;
use lens::exporter::types::{Batch, Encoding, Resource};

struct Target {
    scheme: Scheme,
    authority: String,
    path: String,
    header: String,
    key: Option<String>,
    attempts: u32,
    budget_ns: u64,
}

static TARGET: Mutex<Option<Target>> = Mutex::new(None);

fn parse_endpoint(url: &str) -> Result<(Scheme, String, String), String> {
    let (scheme, rest) = if let Some(r) = url.strip_prefix("https://") {
        (Scheme::Https, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (Scheme::Http, r)
    } else {
        return Err(format!(
            "endpoint `{url}` must start with http:// or https://"
        ));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/v1/traces"),
    };
    if authority.is_empty() {
        return Err(format!("endpoint `{url}` has no host"));
    }
    Ok((scheme, authority.to_string(), path.to_string()))
}

/// One POST; `Ok(status)` once a response arrived.
fn post(t: &Target, body: &[u8]) -> Result<u16, String> {
    let mut headers = vec![(
        "content-type".to_string(),
        b"application/x-protobuf".to_vec(),
    )];
    if let Some(key) = &t.key {
        headers.push((t.header.clone(), key.as_bytes().to_vec()));
    }
    let fields = Fields::from_list(&headers).map_err(|e| format!("headers: {e:?}"))?;
    let request = OutgoingRequest::new(fields);
    request.set_method(&Method::Post).map_err(|()| "method")?;
    request.set_scheme(Some(&t.scheme)).map_err(|()| "scheme")?;
    request
        .set_authority(Some(&t.authority))
        .map_err(|()| "authority")?;
    request
        .set_path_with_query(Some(&t.path))
        .map_err(|()| "path")?;
    let outgoing = request.body().map_err(|()| "body")?;
    let response = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    // If the request already failed (denied, refused), the body stream is closed: the
    // response future then holds the reason, which beats "stream closed".
    let written = (|| -> Result<(), String> {
        let stream = outgoing.write().map_err(|()| "body stream")?;
        for chunk in body.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("writing the body: {e:?}"))?;
        }
        Ok(())
    })();
    let finished = OutgoingBody::finish(outgoing, None).map_err(|e| format!("{e:?}"));
    response.subscribe().block();
    match response.get() {
        Some(Ok(Err(code))) => Err(format!("{code:?}")),
        Some(Ok(Ok(r))) => written.and(finished).map(|()| r.status()),
        other => written
            .and(finished)
            .and(Err(format!("no response: {other:?}"))),
    }
}

struct VendorHttp;

impl Guest for VendorHttp {
    fn init(settings: Vec<(String, String)>, _resource: Resource) -> Result<Encoding, String> {
        let get = |k: &str| {
            settings
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let endpoint = get("endpoint").ok_or("setting `endpoint` is required")?;
        let (scheme, authority, path) = parse_endpoint(&endpoint)?;
        let key_env = get("api_key_env").unwrap_or_else(|| "VENDOR_API_KEY".into());
        let number = |k: &str, default: u64| -> Result<u64, String> {
            get(k)
                .map(|v| {
                    v.parse()
                        .map_err(|_| format!("`{k}` must be a number, not `{v}`"))
                })
                .unwrap_or(Ok(default))
        };
        *TARGET.lock().unwrap() = Some(Target {
            scheme,
            authority,
            path,
            header: get("api_key_header").unwrap_or_else(|| "x-api-key".into()),
            key: std::env::var(&key_env).ok(),
            attempts: number("attempts", 3)?.max(1) as u32,
            budget_ns: number("budget_ms", 1500)? * 1_000_000,
        });
        Ok(Encoding::OtlpProtobuf)
    }

    fn export(batch: Batch) -> Result<(), String> {
        let Batch::OtlpProtobuf(body) = batch else {
            return Err("this exporter asked for OTLP protobuf batches".into());
        };
        let guard = TARGET.lock().unwrap();
        let t = guard.as_ref().ok_or("export after shutdown")?;
        let started = monotonic_clock::now();
        let mut last = String::new();
        for attempt in 0..t.attempts {
            if attempt > 0 {
                let wait = 50_000_000u64 << (attempt - 1);
                if monotonic_clock::now() - started + wait > t.budget_ns {
                    break;
                }
                monotonic_clock::subscribe_duration(wait).block();
            }
            match post(t, &body) {
                Ok(status) if (200..300).contains(&status) => return Ok(()),
                // Retry what a retry can fix; a 4xx other than 429 will not change.
                Ok(status) if status == 429 || status >= 500 => last = format!("HTTP {status}"),
                Ok(status) => return Err(format!("{}{}: HTTP {status}", t.authority, t.path)),
                Err(e) if e.contains("HttpRequestDenied") => {
                    return Err(format!("{} is not in allowed_hosts", t.authority));
                }
                Err(e) => last = e,
            }
        }
        Err(format!("{}{}: {last}", t.authority, t.path))
    }

    fn force_flush() -> Result<(), String> {
        Ok(())
    }

    fn shutdown() -> Result<(), String> {
        TARGET
            .lock()
            .unwrap()
            .take()
            .map(|_| ())
            .ok_or_else(|| "already shut down".into())
    }
}

export!(VendorHttp);
