//! `lens report` in a real browser: Debian's Chromium, headless, loads each generated page from
//! `file://`; a test fails on any console message or page error and checks the DOM (the
//! `data-*` attributes the page's script writes) against the run. A screenshot of each page is
//! written under `target/tmp/report-screenshots/`.
//!
//! - [`browser`]: `lens demo`'s report (lanes, steps, the slow rank, the crashed rank, drops);
//! - [`inputs`]: bad and large run folders (skipped lines counted, 1,000 ranks aggregated);
//! - [`perfetto`]: the trace-event file against the run's JSON-lines.

mod browser;
mod inputs;
mod perfetto;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Chromium: `$LENS_CHROMIUM`, else Debian's (`.ci/run` installs it).
fn chromium() -> PathBuf {
    let path = std::env::var_os("LENS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "{} is missing: install Debian's chromium (tests/run.sh does), or set LENS_CHROMIUM",
        path.display()
    );
    path
}

/// Headless Chromium on `url` with the flags a closed network needs, a fresh profile each time.
fn headless(url: &str, profile: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,1800",
            "--virtual-time-budget=15000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("chromium starts");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A page as the browser left it after its script ran.
pub struct Dom {
    pub html: String,
}

impl Dom {
    /// The opening tags of elements whose `class` starts with `class`.
    pub fn tags(&self, class: &str) -> Vec<Tag> {
        let needle = format!("class=\"{class}");
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(at) = self.html[from..].find(&needle) {
            let at = from + at;
            let start = self.html[..at].rfind('<').unwrap();
            let end = at + self.html[at..].find('>').unwrap();
            out.push(Tag(self.html[start..=end].to_string()));
            from = end;
        }
        out
    }

    /// The table rows whose first attribute is `attr` (`<tr data-rank="…"`).
    pub fn rows(&self, attr: &str) -> Vec<Tag> {
        let needle = format!("<tr {attr}=\"");
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(at) = self.html[from..].find(&needle) {
            let start = from + at;
            let end = start + self.html[start..].find('>').unwrap();
            out.push(Tag(self.html[start..=end].to_string()));
            from = end;
        }
        out
    }

    /// The `<body>` tag (the page's state, errors and drawing time).
    pub fn body(&self) -> Tag {
        let at = self.html.find("<body").expect("a body");
        let end = at + self.html[at..].find('>').unwrap();
        Tag(self.html[at..=end].to_string())
    }

    /// The opening tag of the element with this id.
    pub fn by_id(&self, id: &str) -> Tag {
        let needle = format!("id=\"{id}\"");
        let at = self
            .html
            .find(&needle)
            .unwrap_or_else(|| panic!("no #{id} in the page"));
        let start = self.html[..at].rfind('<').unwrap();
        let end = at + self.html[at..].find('>').unwrap();
        Tag(self.html[start..=end].to_string())
    }
}

/// One opening tag.
#[derive(Debug)]
pub struct Tag(pub String);

impl Tag {
    pub fn attr(&self, name: &str) -> Option<String> {
        let needle = format!(" {name}=\"");
        let at = self.0.find(&needle)? + needle.len();
        let len = self.0[at..].find('"')?;
        Some(
            self.0[at..at + len]
                .replace("&amp;", "&")
                .replace("&quot;", "\""),
        )
    }

    pub fn num(&self, name: &str) -> u64 {
        self.attr(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no number {name} in {}", self.0))
    }
}

/// Loads `page`: asserts the script drew it with no error and no console message, writes a
/// screenshot named `shot`, and returns the DOM.
pub fn load(page: &Path, shot: &str) -> Dom {
    load_with(page, "", shot)
}

/// [`load`] with a fragment (`#probe-rank=3`: the page's events probe, see `report.js`).
pub fn load_with(page: &Path, fragment: &str, shot: &str) -> Dom {
    let profiles = tempfile::tempdir().unwrap();
    let url = format!("file://{}{fragment}", page.display());
    let out = headless(&url, &profiles.path().join("dom"), &["--dump-dom"]);
    let html = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "the page wrote to the console: {console:#?}"
    );
    let dom = Dom { html };
    let body = dom.body();
    assert_eq!(
        body.attr("data-errors").as_deref(),
        Some("0"),
        "page errors: {}",
        banner(&dom)
    );
    assert_eq!(
        body.attr("data-state").as_deref(),
        Some("drawn"),
        "{}",
        banner(&dom)
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join(format!("{shot}.png"));
    headless(
        &url,
        &profiles.path().join("shot"),
        &[&format!("--screenshot={}", png.display())],
    );
    assert!(
        std::fs::metadata(&png).unwrap().len() > 10_000,
        "{} is (nearly) empty",
        png.display()
    );
    eprintln!("screenshot: {}", png.display());
    dom
}

fn banner(dom: &Dom) -> String {
    let at = dom.html.find("id=\"error-banner\"").unwrap_or(0);
    dom.html[at..].chars().take(400).collect()
}

/// A Lens JSON-lines span line.
pub fn span_line(name: &str, id: u64, parent: u64, start: u64, end: u64) -> String {
    serde_json::json!({
        "name": name, "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": format!("{id:016x}"), "parent_span_id": format!("{parent:016x}"),
        "kind": "internal", "start_unix_nano": start, "end_unix_nano": end,
        "status": {"code": "unset"}, "attributes": {"i": id}, "events": [], "links": [], "scope": "t",
    })
    .to_string()
}

/// A synthetic run: `ranks` files `rank-N.jsonl` of `steps` steps of 10 ms (`slow`: 15 ms),
/// each with one child.
pub fn synthetic_run(dir: &Path, ranks: u32, steps: u64, slow: Option<u32>) {
    const T0: u64 = 1_765_000_000_000_000_000;
    for rank in 0..ranks {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("rank-{rank}.jsonl"))).unwrap(),
        );
        let step = if Some(rank) == slow {
            15_000_000
        } else {
            10_000_000
        };
        for i in 0..steps {
            let start = T0 + i * 20_000_000 + u64::from(rank) * 1000;
            let id = (u64::from(rank) << 32) | (i * 2 + 1);
            writeln!(
                f,
                "{}",
                span_line("compute", id + 1, id, start + 1000, start + 6_000_000)
            )
            .unwrap();
            writeln!(f, "{}", span_line("step", id, 0, start, start + step)).unwrap();
        }
    }
}

/// `lens report ARGS` on `dir`; asserts it succeeded, returns its stdout.
pub fn report(dir: &Path, args: &[&str]) -> String {
    let out = crate::lens()
        .arg("report")
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
