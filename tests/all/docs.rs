//! The README's and the docs' code blocks do what they say. Rust blocks are the library's
//! doctests (`crates/lens/src/lib.rs` includes the README and `docs/training-helpers.md`);
//! here: every TOML block is a valid config, every `lens …` line of a shell block runs and
//! succeeds, and the README's exporter in each SDK language is the one
//! `docs/writing-an-exporter.md` shows, which the SDKs' own tests run (`sdk/test.sh`). The
//! README's Python rank runs in `python/tests/test_docs.py`.

use std::path::{Path, PathBuf};

use lens::LensConfig;
use lens::config::ConfigSource;

use crate::lens;

/// A fenced code block: its info string, its text, where it starts.
struct Block {
    info: String,
    text: String,
    file: PathBuf,
    line: usize,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split([',', ' ']).next().unwrap_or("")
    }

    fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn blocks(relative: &str) -> Vec<Block> {
    let file = root().join(relative);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    text: String::new(),
                    file: PathBuf::from(relative),
                    line: i + 1,
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{relative}: a code block is never closed");
    out
}

/// Every Markdown file a user reads.
const DOCS: [&str; 10] = [
    "README.md",
    "CONTRIBUTING.md",
    "docs/configuration.md",
    "docs/processors.md",
    "docs/python.md",
    "docs/reload.md",
    "docs/training-helpers.md",
    "docs/writing-an-exporter.md",
    "guest-examples/README.md",
    "sdk/README.md",
];

#[test]
fn every_toml_block_is_a_valid_config() {
    let mut checked = 0;
    for doc in DOCS {
        for block in blocks(doc).iter().filter(|b| b.lang() == "toml") {
            let origin = ConfigSource::File(block.file.clone());
            if let Err(e) = LensConfig::from_toml_str(&block.text, &origin) {
                panic!("{}: {e}\n{}", block.at(), block.text);
            }
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} TOML blocks");
}

/// A folder with what the docs' commands name: `exporter.wasm` (the built-in exporter),
/// `exporter-v2.wasm` (another build of it: the same bytes and a custom section), `out/`,
/// `lens.toml` (the README's minimal config), and every TOML block of the docs whose first
/// line names its file (`# lens-demo.toml`).
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(crate::builtin_jsonl(), dir.path().join("exporter.wasm")).unwrap();
    let mut v2 = std::fs::read(crate::builtin_jsonl()).unwrap();
    v2.extend_from_slice(&[0, 3, 2, b'v', b'2']); // a custom section named `v2`
    std::fs::write(dir.path().join("exporter-v2.wasm"), v2).unwrap();
    for block in DOCS.iter().flat_map(|d| blocks(d)) {
        let first = block.text.lines().next().unwrap_or_default();
        if block.lang() == "toml"
            && let Some(name) = first.strip_prefix("# ").filter(|n| n.ends_with(".toml"))
        {
            std::fs::write(dir.path().join(name), &block.text).unwrap();
        }
    }
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let minimal = blocks("README.md")
        .into_iter()
        .find(|b| b.lang() == "toml")
        .expect("the README's minimal config");
    std::fs::write(dir.path().join("lens.toml"), minimal.text).unwrap();
    dir
}

/// Every `lens` command of the docs' shell blocks runs and succeeds, in a workspace per block,
/// following the block's `cd`s (a block that makes a project with `lens new` builds and checks
/// it there, with the tools `guest-examples/build.sh` installed).
#[test]
fn every_lens_command_of_a_shell_block_runs() {
    let dir = workspace();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut ran = 0;
    for doc in DOCS {
        for block in blocks(doc).iter().filter(|b| b.lang() == "sh") {
            // Each block starts in the workspace; a project it makes is its own.
            let projects = tempfile::tempdir_in(dir.path()).unwrap();
            let mut cwd = dir.path().to_path_buf();
            for line in block.text.lines() {
                let mut line = line.split('#').next().unwrap().trim();
                if let Some(rest) = line.strip_prefix("cd ") {
                    let (to, then) = rest.split_once("&&").unwrap_or((rest, ""));
                    cwd = cwd.join(to.trim());
                    line = then.trim();
                }
                let Some(args) = line.strip_prefix("lens ") else {
                    continue;
                };
                let mut args: Vec<&str> = args.split_whitespace().collect();
                if args.first() == Some(&"new") {
                    cwd = projects.path().to_path_buf();
                }
                // `--out` of a demo: the run folder stays in the workspace.
                if args.first() == Some(&"demo") && !args.contains(&"--out") {
                    args.extend(["--out", "demo-out"]);
                }
                let out = lens()
                    .args(&args)
                    .current_dir(&cwd)
                    .env("LENS_HOME", root.join("target/lens-test-home"))
                    .env("LENS_TOOLS_DIR", root.join("guest-examples/.tools"))
                    .env(
                        "CARGO_TARGET_DIR",
                        root.join("guest-examples/.tools/project-target"),
                    )
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}: `{line}` failed: {}\n{}",
                    block.at(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                ran += 1;
            }
        }
    }
    assert!(ran >= 8, "{ran} commands");
    assert!(dir.path().join("out/spans.jsonl").exists());
}

/// The text of the block of `lang` number `n` (from 0) of `doc`.
fn nth(doc: &str, lang: &str, n: usize) -> String {
    blocks(doc)
        .into_iter()
        .filter(|b| b.lang() == lang)
        .nth(n)
        .unwrap_or_else(|| panic!("{doc} has no {lang} block {n}"))
        .text
}

#[test]
fn the_readme_exporters_are_the_ones_the_sdk_tests_run() {
    let guide = "docs/writing-an-exporter.md";
    // The README's second Python block, its Rust exporter (the first `rust,ignore`, after the
    // doctests) and its JavaScript block.
    assert_eq!(nth("README.md", "python", 1), nth(guide, "python", 0));
    let readme_rust = blocks("README.md")
        .into_iter()
        .find(|b| b.info == "rust,ignore")
        .unwrap()
        .text;
    assert_eq!(readme_rust, nth(guide, "rust", 0));
    assert_eq!(nth("README.md", "js", 0), nth(guide, "js", 0));
}

#[test]
fn the_readme_starts_with_the_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let first = blocks("README.md").into_iter().next().unwrap();
    assert_eq!((first.lang(), first.line), ("sh", 3), "{readme:.200}");
    let commands: Vec<&str> = first.text.lines().collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].contains("cargo run -- demo"), "{}", commands[0]);
    assert!(commands[1].starts_with("tests/run.sh"), "{}", commands[1]);
    // What they name exists.
    assert!(Path::new(&root().join("tests/run.sh")).exists());
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("\ntests/run.sh\n"),
        ".ci/run runs the README's test command"
    );
}
