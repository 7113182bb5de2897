//! `lens build` for Python bundles what the code imports inside functions (componentize-py
//! keeps only what is imported while it builds), and fails, naming the file, line and module,
//! when a lazy import of the project's own code cannot be imported.

use std::path::Path;

use crate::project::{lens_in, ok};

/// A new span exporter whose `export` first runs `body` (Python, indented by 8).
fn project_with(outside: &Path, body: &str) -> std::path::PathBuf {
    ok(lens_in(outside).args(["new", "python", "lazy"]));
    let project = outside.join("lazy");
    let app = project.join("app.py");
    let source = std::fs::read_to_string(&app).unwrap();
    let edited = source.replacen(
        "    def export(self, spans):\n",
        &format!("    def export(self, spans):\n{body}"),
        1,
    );
    assert_ne!(edited, source, "the template's export moved");
    std::fs::write(&app, edited).unwrap();
    project
}

#[test]
fn a_module_imported_inside_a_function_is_bundled() {
    let outside = tempfile::tempdir().unwrap();
    let project = project_with(
        outside.path(),
        "        import fractions\n        print(\"lazy\", fractions.Fraction(1, 3))\n",
    );
    ok(lens_in(&project).arg("build"));
    let report = ok(lens_in(&project).args(["check", "build/lazy.wasm", "--quick"]));
    assert!(report.ends_with("PASS\n"), "{report}");
    assert!(report.contains("stdout | lazy 1/3"), "{report}");
}

#[test]
fn a_lazy_import_that_cannot_be_bundled_fails_the_build_naming_it() {
    let outside = tempfile::tempdir().unwrap();
    let project = project_with(
        outside.path(),
        "        try:\n            import lens_surely_optional  # noqa: F401\n        \
         except ImportError:\n            pass\n        import lens_surely_missing  # noqa: F401\n",
    );
    let line = 1 + std::fs::read_to_string(project.join("app.py"))
        .unwrap()
        .lines()
        .position(|l| l.trim_start().starts_with("import lens_surely_missing"))
        .unwrap();
    let out = lens_in(&project).arg("build").output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    // The guarded one is optional; the other is named with its line.
    assert!(
        text.contains(&format!(
            "lens build: app.py line {line} imports `lens_surely_missing` inside a function, and \
             it cannot be imported now (No module named 'lens_surely_missing'): componentize-py \
             bundles only what is imported while it builds. Add its package to \
             requirements.txt, or import it at the top of app.py"
        )),
        "{text}"
    );
    assert!(!text.contains("`lens_surely_optional`"), "{text}");
}
