//! `lens check FILE.wasm`: what an exporter author runs before shipping.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lens::check::{CheckOptions, check_with};
use lens::config::{CredentialSpec, EnvGrant, WasmExporterSpec, WasmPreopen};
use lens::wasm::Signal;

use super::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The component to check: a `.wasm` file, or an `oci://HOST/REPOSITORY[:TAG]@sha256:DIGEST`
    /// reference (pulled into the node's store first).
    file: PathBuf,
    /// For a reference: follow a tag without a digest.
    #[arg(long)]
    allow_unpinned: bool,
    /// For a reference: a registry (`host:port`) reached over plain http (repeatable; loopback
    /// always is).
    #[arg(long = "insecure-registry", value_name = "HOST:PORT")]
    insecure_registries: Vec<String>,
    /// For a reference: use it only if it carries a valid signature by this public key
    /// (cosign's `cosign.pub`), as an entry's `verify = { key = … }`.
    #[arg(long, value_name = "FILE")]
    verify_key: Option<PathBuf>,
    /// A setting handed to the guest's `init` (repeatable), e.g. `--setting path=/out/x.jsonl`;
    /// `SIGNAL:KEY=VALUE` sets it for one signal's suite only (`traces`, `metrics`, `logs`),
    /// over the plain one: `--setting traces:endpoint=http://127.0.0.1:4318/v1/traces`.
    #[arg(long = "setting", value_name = "[SIGNAL:]KEY=VALUE")]
    settings: Vec<String>,
    /// Send a batch again while the guest answers `retryable`, as a rank does (within the
    /// export timeout, 30 s). Without it a case ends at the first `retryable` answer, reported
    /// as such.
    #[arg(long)]
    retry: bool,
    /// Pre-open a host directory (repeatable): `HOST:GUEST` read-only, `HOST:GUEST:rw` writable.
    #[arg(long = "preopen", value_name = "HOST:GUEST[:rw]")]
    preopens: Vec<String>,
    /// An environment variable the guest sees (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// A host the guest may call over wasi:http (repeatable), `host` or `host:port`.
    #[arg(long = "allow-host", value_name = "HOST[:PORT]")]
    allowed_hosts: Vec<String>,
    /// A host-held credential (repeatable): `HEADER@HOST=env:VAR` or `HEADER@HOST=file:PATH`,
    /// e.g. `--credential x-acme-key@ingest.acme.com:443=env:ACME_KEY`; the host adds the header
    /// to the guest's requests to HOST (`http://127.0.0.1:8080` for a local test server), the
    /// guest never sees it. HOST must be allowed (`--allow-host`).
    #[arg(long = "credential", value_name = "HEADER@HOST=env:VAR|file:PATH")]
    credentials: Vec<String>,
    /// Deadline of one guest call, milliseconds.
    #[arg(long, default_value_t = 5000)]
    call_timeout_ms: u64,
    /// Linear memory cap, MiB.
    #[arg(long, default_value_t = lens::wasm::DEFAULT_MEMORY_LIMIT_MIB)]
    memory_limit_mib: u64,
    /// The most the guest may hand the host in one call, MiB (at most the memory cap).
    #[arg(long, default_value_t = lens::config::guest_memory::DEFAULT_MAX_ANSWER_MIB)]
    max_answer_mib: u64,
    /// Skip timing a cold compile when the compilation cache already holds the component (a
    /// second compile, seconds for a Python guest): for an edit–check loop.
    #[arg(long)]
    quick: bool,
    /// Lines of what the guest printed shown under each case (stdout and stderr each); 0 shows
    /// none.
    #[arg(long, default_value_t = 5, value_name = "N")]
    output_lines: usize,
}

/// What the guest wrote to `stream` during a case: its first `max` lines, escaped (the guest's
/// bytes must not drive the terminal), then how much more there was.
fn print_output(stream: &str, copy: &lens::wasm::sandbox::guest_output::CopyBuffer, max: usize) {
    if copy.bytes.is_empty() || max == 0 {
        return;
    }
    let text = String::from_utf8_lossy(&copy.bytes);
    let lines: Vec<&str> = text.lines().collect();
    for line in lines.iter().take(max) {
        println!(
            "            {stream} | {}",
            lens::wasm::sandbox::guest_output::shown(line.to_string(), 300)
        );
    }
    let more = lines.len().saturating_sub(max);
    if more > 0 || copy.cut > 0 {
        let total = copy.bytes.len() as u64 + copy.cut;
        println!(
            "            {stream} | … {more}{} more lines ({total} bytes in all)",
            if copy.cut > 0 { "+" } else { "" }
        );
    }
}

fn pair(s: &str, what: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("{what} `{s}` is not KEY=VALUE"))
}

/// A `--credential HEADER@HOST=env:VAR|file:PATH`.
fn credential(s: &str) -> Result<CredentialSpec, String> {
    let bad = || format!("--credential `{s}` is not HEADER@HOST=env:VAR or HEADER@HOST=file:PATH");
    let (target, source) = s.split_once('=').ok_or_else(bad)?;
    let (header, host) = target.split_once('@').ok_or_else(bad)?;
    let (from_env, from_file) = match source.split_once(':') {
        Some(("env", var)) => (Some(var.to_string()), None),
        Some(("file", path)) => (None, Some(PathBuf::from(path))),
        _ => return Err(bad()),
    };
    Ok(CredentialSpec {
        host: host.to_string(),
        header: header.to_string(),
        from_env,
        from_file,
        prefix: String::new(),
    })
}

/// The `SIGNAL:KEY=VALUE` settings, by signal; the rest are the entry's.
fn signal_settings(args: &CheckArgs) -> Result<SignalSettings, String> {
    let mut by_signal = Vec::new();
    let mut plain = Vec::new();
    for s in &args.settings {
        let (key, value) = pair(s, "--setting")?;
        let scoped = key.split_once(':').and_then(|(signal, key)| {
            let signal = Signal::ALL.into_iter().find(|s| s.as_str() == signal)?;
            Some((signal, key.to_string()))
        });
        match scoped {
            Some((signal, key)) => by_signal.push((signal, key, value)),
            None => plain.push((key, value)),
        }
    }
    Ok((plain, by_signal))
}

/// Why a failing suite of a component serving several signals may have failed for its
/// settings: the plain ones go to every signal's suite, and a key like `endpoint` usually
/// differs per signal. `None` when the suite passed, the component serves one signal, or no
/// plain setting reached this suite unchanged.
fn shared_settings_note(
    suite: &lens::check::SignalReport,
    signals: usize,
    spec: &WasmExporterSpec,
    by_signal: &[(Signal, String, String)],
) -> Option<String> {
    if signals < 2 || suite.cases.iter().all(|c| c.outcome.is_ok()) {
        return None;
    }
    let shared: Vec<String> = spec
        .settings
        .keys()
        .filter(|k| {
            !by_signal
                .iter()
                .any(|(s, key, _)| *s == suite.signal && key == *k)
        })
        .map(|k| format!("`{k}`"))
        .collect();
    if shared.is_empty() {
        return None;
    }
    let signal = suite.signal.as_str();
    Some(format!(
        "this suite got the plain settings {}, as every signal's suite does; if one of them \
         differs per signal (an endpoint), give {signal} its own: `--setting {signal}:KEY=VALUE`",
        shared.join(", ")
    ))
}

/// The settings for every signal, and those for one.
type SignalSettings = (Vec<(String, String)>, Vec<(Signal, String, String)>);

fn spec(args: &CheckArgs, settings: Vec<(String, String)>) -> Result<WasmExporterSpec, String> {
    let mut preopens = Vec::new();
    for p in &args.preopens {
        let parts: Vec<&str> = p.split(':').collect();
        let (host, guest, read_only) = match parts.as_slice() {
            [h, g] => (h, g, true),
            [h, g, "rw"] => (h, g, false),
            _ => {
                return Err(format!(
                    "--preopen `{p}` is not HOST:GUEST or HOST:GUEST:rw"
                ));
            }
        };
        preopens.push(WasmPreopen {
            host: PathBuf::from(host),
            guest: guest.to_string(),
            read_only,
        });
    }
    Ok(WasmExporterSpec {
        name: Some("check".into()),
        path: args.file.clone(),
        settings: settings.into_iter().collect(),
        env: args
            .env
            .iter()
            .map(|s| pair(s, "--env").map(|(k, v)| (k, EnvGrant::Value(v.into()))))
            .collect::<Result<_, _>>()?,
        preopens,
        allow_unpinned: args.allow_unpinned.then_some(true),
        insecure_registries: args.insecure_registries.clone(),
        verify: args
            .verify_key
            .clone()
            .map(|key| lens::config::VerifySpec { key }),
        allowed_hosts: args.allowed_hosts.clone(),
        credentials: args
            .credentials
            .iter()
            .map(|c| credential(c))
            .collect::<Result<_, _>>()?,
        call_timeout_ms: Some(args.call_timeout_ms),
        memory_limit_mib: Some(args.memory_limit_mib),
        max_answer_mib: Some(args.max_answer_mib.min(args.memory_limit_mib)),
        // What the guest prints is shown under each case instead of in the log.
        forward_stdio: Some(false),
        ..Default::default()
    })
}

pub fn run(args: CheckArgs) -> ExitCode {
    let (spec, by_signal) = match signal_settings(&args)
        .and_then(|(plain, by_signal)| Ok((spec(&args, plain)?, by_signal)))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let options = CheckOptions::default()
        .with_cold_compile(!args.quick)
        .with_retry(args.retry)
        .with_signal_settings(&by_signal);
    let report = match check_with(&spec, options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    println!("{}", args.file.display());
    println!(
        "  size          {} bytes, sha256 {}",
        report.size, report.sha256
    );
    let interfaces: Vec<&str> = report
        .signals
        .iter()
        .map(|s| s.interface.as_str())
        .collect();
    println!("  exports       {} (valid)", interfaces.join(", "));
    let st = &report.structure;
    println!(
        "  structure     nesting {}, {} components and modules, {} instances, {} types, {} \
         functions, {} imports/exports/aliases",
        st.nesting, st.units, st.instances, st.types, st.functions, st.names
    );
    match report.cold_compile {
        Some(t) => println!("  cold compile  {:.1} ms", t.as_secs_f64() * 1e3),
        None => println!("  cold compile  skipped (--quick: the cache holds it)"),
    }
    println!(
        "  cached load   {:.1} ms{}",
        report.cached_load.as_secs_f64() * 1e3,
        if report.cache_hit {
            ""
        } else {
            " (not served from the cache)"
        }
    );
    println!("  capabilities  (what it imports; each needs a grant in the config to do anything)");
    for (group, imports) in &report.capabilities {
        println!("    {group:<12} {}", imports.join(", "));
        if *group == "sockets" {
            // CPython links them in: every Python component imports them, few use them.
            println!(
                "                 never granted: a use is denied and said so. {}",
                lens::wasm::USE_HTTP
            );
        }
    }
    println!(
        "  worst case    {} MiB per instance (memory_limit_mib {} + max_answer_mib {}); an \
         entry holds lanes × this",
        spec.memory_mib() + spec.answer_mib(),
        spec.memory_mib(),
        spec.answer_mib()
    );
    if !spec.credentials.is_empty() {
        println!("  credentials   (added by the host; the guest never holds them)");
        for c in &spec.credentials {
            println!("    {}", c.describe());
        }
    }
    let mut total = 0;
    for signal in &report.signals {
        println!("  {} ({})", signal.interface, signal.signal.as_str());
        println!("    encoding      {}", signal.encoding.unwrap_or("-"));
        println!("    conformance");
        for c in &signal.cases {
            match &c.outcome {
                Ok(_) => println!("      ok    {}", c.name),
                Err(e) => println!("      FAIL  {}: {e}", c.name),
            }
            print_output("stdout", &c.stdout, args.output_lines);
            print_output("stderr", &c.stderr, args.output_lines);
        }
        total += signal.cases.len();
        if let Some(note) = shared_settings_note(signal, report.signals.len(), &spec, &by_signal) {
            println!("    note          {note}");
        }
        if let Some(ns) = signal.per_item_ns {
            let item = match signal.signal {
                lens::wasm::Signal::Traces => "span (10k spans, batches of 512)",
                lens::wasm::Signal::Metrics => "data point (1,000 in one collection)",
                lens::wasm::Signal::Logs => "log record (10k records, batches of 512)",
            };
            println!("    cost          {:.2} µs per {item}", ns / 1e3);
        }
        println!(
            "    peak memory   {:.1} MiB",
            signal.peak_memory_bytes as f64 / (1 << 20) as f64
        );
    }
    let failures = report.failures();
    if failures.is_empty() {
        println!("PASS");
        ExitCode::SUCCESS
    } else {
        println!("FAIL: {} of {total} checks failed", failures.len());
        ExitCode::from(EXIT_RUN_FAILED)
    }
}
