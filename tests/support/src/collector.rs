//! A real OTLP collector for tests: rotel (PyPI's `rotel` ships the binary) on 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::config::OtlpProtocol;

/// The rotel collector binary: `$LENS_ROTEL_BIN`, else the one PyPI's `rotel` ships.
pub fn rotel_binary() -> String {
    if let Ok(p) = std::env::var("LENS_ROTEL_BIN") {
        return p;
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import rotel, os; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))",
        ])
        .output()
        .expect("python3 is needed to locate rotel");
    assert!(
        out.status.success(),
        "the rotel collector is not installed (pip install rotel; .ci/run does): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A rotel collector on 127.0.0.1 printing every span, metric and log record it receives.
pub struct Collector {
    child: Child,
    pub grpc_port: u16,
    pub http_port: u16,
    verbosity: &'static str,
    output: Arc<Mutex<String>>,
    dir: tempfile::TempDir,
}

impl Collector {
    /// A collector printing each span in detail (names, attributes, resource).
    pub fn start() -> Self {
        Self::spawn("detailed")
    }

    /// A collector printing one count line per request (for load tests).
    pub fn start_quiet() -> Self {
        Self::spawn("basic")
    }

    fn spawn(verbosity: &'static str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (grpc_port, http_port) = (free_port(), free_port());
        let output = Arc::new(Mutex::new(String::new()));
        let child = Self::run(verbosity, grpc_port, http_port, &dir, &output);
        Self {
            child,
            grpc_port,
            http_port,
            verbosity,
            output,
            dir,
        }
    }

    /// Kills the collector (a crash, an OOM kill, a node drain): its ports refuse connections.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the collector again on the same ports, its output appended to what it printed.
    pub fn restart(&mut self) {
        self.kill();
        self.child = Self::run(
            self.verbosity,
            self.grpc_port,
            self.http_port,
            &self.dir,
            &self.output,
        );
    }

    /// Starts rotel on the ports and waits until both listen.
    fn run(
        verbosity: &str,
        grpc_port: u16,
        http_port: u16,
        dir: &tempfile::TempDir,
        output: &Arc<Mutex<String>>,
    ) -> Child {
        let mut child = Command::new(rotel_binary())
            .args([
                "start",
                "--otlp-grpc-endpoint",
                &format!("127.0.0.1:{grpc_port}"),
                "--otlp-http-endpoint",
                &format!("127.0.0.1:{http_port}"),
                "--exporter",
                "blackhole",
                "--debug-log",
                "traces",
                "--debug-log",
                "metrics",
                "--debug-log",
                "logs",
                "--debug-log-verbosity",
                verbosity,
                "--log-format",
                "json",
            ])
            .arg("--pid-file")
            .arg(dir.path().join("rotel.pid"))
            .arg("--log-file")
            .arg(dir.path().join("rotel.log"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting rotel");
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let out = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mut o = out.lock().unwrap();
                    o.push_str(&line);
                    o.push('\n');
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        for port in [grpc_port, http_port] {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "rotel did not listen: {}",
                    output.lock().unwrap()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        child
    }

    /// This collector's OTLP endpoint for `signal` over `protocol`.
    pub fn endpoint(&self, protocol: OtlpProtocol, signal: lens::Signal) -> String {
        match protocol {
            OtlpProtocol::Grpc => format!("http://127.0.0.1:{}", self.grpc_port),
            OtlpProtocol::HttpProtobuf => {
                format!("http://127.0.0.1:{}/v1/{signal}", self.http_port)
            }
            other => panic!("no endpoint for {other:?}"),
        }
    }

    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits until `pred` holds for the collector's output.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.output();
            if pred(&out) {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "collector never saw {what}; output:\n{out}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Spans the collector counted (`Received traces.` lines of a quiet collector).
    pub fn spans_counted(out: &str) -> u64 {
        out.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["msg"] == "Received traces.")
            .filter_map(|v| v["spans"].as_u64())
            .sum()
    }

    /// Span names the collector printed (`Name : x` lines).
    pub fn span_names(out: &str) -> Vec<String> {
        out.lines()
            .filter_map(|l| l.trim().strip_prefix("Name").map(|r| r.trim_start()))
            .filter_map(|r| r.strip_prefix(':'))
            .map(|r| r.trim().to_string())
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
