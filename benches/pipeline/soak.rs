//! The soak (`--only soak`): a guest that holds 48 MiB and then blocks in a WASI sleep on every
//! call, far past its deadline, exported to without pause for `--soak-s` seconds (180 by
//! default) through four instances. Every call is cancelled at its deadline; the process's
//! resident memory and thread count must stay flat however many instances were discarded.

use std::time::{Duration, Instant};

use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanExporter;
use lens::wasm::WasmSpanExporter;

use crate::{Opts, noop_spec};

/// `VmRSS` (MiB) and `Threads` of this process.
fn rss_and_threads() -> (f64, u64) {
    use lens::testing::process_status;
    (
        process_status("VmRSS") as f64 / 1024.0,
        process_status("Threads"),
    )
}

/// Section `soak`: prints one line per sample.
pub fn soak(opts: &Opts) {
    let mut spec = noop_spec("typed");
    spec.name = Some("soak".into());
    spec.settings
        .insert("mode".into(), "touch-and-sleep".into());
    spec.settings.insert("touch_mib".into(), "48".into());
    spec.settings.insert("sleep_ms".into(), "60000".into());
    spec.call_timeout_ms = Some(200);
    spec.batch.max_concurrent_exports = Some(4);
    let resource = Resource::builder_empty().build();
    let (exporter, stats) = WasmSpanExporter::from_config("soak", &spec, &resource).unwrap();
    let batch = lens::testing::spans::many(16);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(opts.soak_s);
    let mut next_sample = started;
    let calls = std::sync::atomic::AtomicU64::new(0);
    let mut first = None;
    println!("  t s   calls  restarts  deadlines  rss MiB  threads");
    std::thread::scope(|scope| {
        // Four callers, as the batch processor with `max_concurrent_exports = 4`.
        let callers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    while Instant::now() < deadline {
                        let _ = futures_executor::block_on(exporter.export(batch.clone()));
                        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        // A batch processor calls at least every few milliseconds.
                        std::thread::sleep(Duration::from_millis(5));
                    }
                })
            })
            .collect();
        while Instant::now() < deadline {
            if Instant::now() >= next_sample {
                let s = stats.snapshot();
                let (rss, threads) = rss_and_threads();
                let t = started.elapsed().as_secs();
                let deadlines = s
                    .traps
                    .get(&lens::FaultKind::Deadline)
                    .copied()
                    .unwrap_or(0);
                first.get_or_insert((rss, threads));
                println!(
                    "{t:>5} {:>7} {:>9} {:>10} {rss:>8.1} {threads:>8}",
                    calls.load(std::sync::atomic::Ordering::Relaxed),
                    s.restarts,
                    deadlines
                );
                next_sample += Duration::from_secs(10);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        for c in callers {
            c.join().unwrap();
        }
    });
    let (rss, threads) = rss_and_threads();
    let (rss0, threads0) = first.unwrap_or((rss, threads));
    println!(
        "soak: {} calls over {} s, {} instances discarded; RSS {rss0:.1} -> {rss:.1} MiB, threads {threads0} -> {threads}",
        calls.into_inner(),
        opts.soak_s,
        stats.snapshot().traps.values().sum::<u64>()
    );
}
