//! The host's folders are its stages, and a stage uses only the stages before it: read from
//! the sources, so that a new `use` going the wrong way (or through the root's re-exports,
//! which would hide one) fails here rather than growing a cycle.

/// The stages in order; `exporters` and `processors` are the two roles, neither using the other.
const STAGES: [&str; 8] = [
    "source",
    "checks",
    "artefact",
    "sandbox",
    "lanes",
    "reload",
    "exporters",
    "processors",
];

fn rank(stage: &str) -> usize {
    STAGES.iter().position(|s| *s == stage).unwrap()
}

/// `(file, line, what it names)` for each path into the host (`crate::wasm::…`, or `super::…`
/// in a stage's own `mod.rs`) in the code of `stage`, comments left out.
fn references(stage: &str) -> Vec<(String, usize, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/wasm");
    let mut found = Vec::new();
    let mut dirs = vec![root.join(stage)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let is_stage_mod = path == root.join(stage).join("mod.rs");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let mut named = Vec::new();
                for (prefix, applies) in [("crate::wasm::", true), ("super::", is_stage_mod)] {
                    if !applies {
                        continue;
                    }
                    for (i, _) in code.match_indices(prefix) {
                        let rest = &code[i + prefix.len()..];
                        let end = rest
                            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .unwrap_or(rest.len());
                        named.push(rest[..end].to_string());
                    }
                }
                for name in named {
                    found.push((path.display().to_string(), n + 1, name));
                }
            }
        }
    }
    found
}

#[test]
fn each_stage_uses_only_the_stages_before_it() {
    let mut wrong = Vec::new();
    for stage in STAGES {
        for (file, line, named) in references(stage) {
            let roles = ["exporters", "processors"];
            let other_role =
                named != stage && roles.contains(&stage) && roles.contains(&named.as_str());
            let earlier = STAGES.contains(&named.as_str()) && rank(&named) <= rank(stage);
            if !earlier || other_role {
                wrong.push(format!("{file}:{line}: {stage} uses `{named}`"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_a_reference() {
    // The lanes start instances from the sandbox: a reference the scan must find, or the test
    // above could pass by finding nothing.
    let lanes = references("lanes");
    assert!(
        lanes.iter().any(|(_, _, named)| named == "sandbox"),
        "{lanes:?}"
    );
}
