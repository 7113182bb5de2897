//! Each bad case refused under its test, with a message naming what is wrong, and nothing
//! unverified kept in the store: a layer whose bytes are not its digest, a layer over
//! `max_file_mib`, an image and an index instead of a Wasm artifact, a registry that wants
//! credentials (and takes them from the environment or the Docker config), a `sha256` pin the
//! reference's layer does not have, a manifest over 1 MiB (announced, or chunked and cut off
//! once 1 MiB has arrived).

use std::path::Path;

use lens_test_support::registry::Registry;
use sha2::Digest;

use super::{lens_with, push, put_blob, put_manifest, text};

/// `lens pull REF` with an empty store: its output (it must fail), and whether the store kept
/// anything for the digest.
fn refused_pull(reference: &str) -> (String, bool) {
    let cache = tempfile::tempdir().unwrap();
    let out = lens_with(cache.path())
        .args(["pull", reference])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let digest = reference
        .rsplit_once("@sha256:")
        .map(|(_, d)| d)
        .unwrap_or("");
    let kept = cache.path().join(format!("oci/sha256-{digest}")).exists();
    (text(&out), kept)
}

/// `lens pull lens.toml` of one traces entry naming `pinned`, with the key line `extra`: its
/// output (it must fail).
fn refused_config_pull(pinned: &str, extra: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lens.toml");
    std::fs::write(
        &config,
        format!("[[traces.exporters]]\nkind = \"wasm\"\npath = \"{pinned}\"\n{extra}\n"),
    )
    .unwrap();
    let out = lens_with(dir.path())
        .arg("pull")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    text(&out)
}

#[test]
fn a_layer_whose_bytes_are_not_its_digest_is_refused_while_streaming_and_not_kept() {
    let registry = Registry::start();
    let pinned = push(&registry, &crate::builtin_jsonl(), "acme/tampered", "1.0");
    // Replace the layer's stored bytes (same length) behind the registry's back.
    let layer = super::sha256_of(&crate::builtin_jsonl());
    let data = registry
        .storage()
        .join(format!("blobs/sha256/{}/{layer}/data", &layer[..2]));
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    let (said, kept) = refused_pull(&pinned);
    let tampered = hex::encode(sha2::Sha256::digest(&bytes));
    assert!(
        said.contains(&format!(
            "the registry sent the component layer with digest sha256:{tampered}, not \
             sha256:{layer}: refused, nothing kept"
        )),
        "{said}"
    );
    assert!(!kept);
}

#[test]
fn a_layer_over_max_file_mib_is_refused_before_it_is_downloaded() {
    let registry = Registry::start();
    let big = lens_test_support::dist("python-jsonl.wasm");
    let pinned = push(&registry, &big, "acme/big", "1.0");
    let said = refused_config_pull(&pinned, "max_file_mib = 1");
    let size = std::fs::metadata(&big).unwrap().len();
    assert!(
        said.contains(&format!(
            "the component layer is {size} bytes or more, over the limit of 1048576 bytes \
             (`max_file_mib`): refused, nothing kept"
        )),
        "{said}"
    );
    assert_eq!(registry.blob_downloads("acme/big"), 0);
}

#[test]
fn an_image_and_an_index_are_refused_as_not_wasm_artifacts() {
    let registry = Registry::start();
    let config = put_blob(&registry, "acme/image", b"{}");
    let layer = put_blob(&registry, "acme/image", b"not a tarball");
    let descriptor = |media: &str, digest: &str, size: usize| serde_json::json!({ "mediaType": media, "digest": digest, "size": size });
    let image = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", &config, 2),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar+gzip", &layer, 13)],
    });
    let (image_digest, reference) = put_manifest(&registry, "acme/image", "1.0", &image);
    let (said, kept) = refused_pull(&reference);
    assert!(
        said.contains(
            "its config media type is `application/vnd.oci.image.config.v1+json` (a container \
             image or another artifact); Lens takes a Wasm component artifact"
        ),
        "{said}"
    );
    assert!(!kept);

    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [descriptor(
            "application/vnd.oci.image.manifest.v1+json",
            &format!("sha256:{image_digest}"),
            serde_json::to_vec(&image).unwrap().len()
        )],
    });
    let (_, reference) = put_manifest(&registry, "acme/image", "multi", &index);
    let (said, _) = refused_pull(&reference);
    assert!(
        said.contains("it is an image index (several manifests), not one artifact"),
        "{said}"
    );
}

#[test]
fn a_manifest_over_1_mib_is_refused_while_it_arrives() {
    let registry = Registry::start();
    let config = put_blob(&registry, "acme/huge", b"{}");
    // A well-formed Wasm artifact's manifest, padded past the limit with an annotation.
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": config, "size": 2 },
        "layers": [{ "mediaType": "application/wasm", "digest": config, "size": 2 }],
        "annotations": { "padding": "x".repeat(3 << 19) },
    });
    let (_, reference) = put_manifest(&registry, "acme/huge", "1.0", &manifest);
    let (said, kept) = refused_pull(&reference);
    // The registry announces the length: refused before any of it is read.
    assert!(
        said.contains(&format!(
            "{reference}: its manifest is {} bytes or more, over 1048576: refused while it arrived",
            serde_json::to_vec(&manifest).unwrap().len()
        )),
        "{said}"
    );
    assert!(!kept);
}

#[test]
fn a_registry_wanting_credentials_names_where_they_were_looked_for_and_takes_them_from_env_or_docker_config()
 {
    let registry = Registry::start_with_basic_auth("acme", "s3cret-pass");
    let cache = tempfile::tempdir().unwrap();
    let reference = registry.reference("acme/private", "1.0");
    let with_env = |c: &mut std::process::Command| {
        c.env("LENS_REGISTRY_USERNAME", "acme")
            .env("LENS_REGISTRY_PASSWORD", "s3cret-pass");
    };
    let mut pushing = lens_with(cache.path());
    with_env(&mut pushing);
    let out = pushing
        .arg("push")
        .arg(crate::builtin_jsonl())
        .arg(&reference)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let pinned = text(&out)
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("path = \"")
                .map(|l| l.trim_end_matches('"').to_string())
        })
        .unwrap();

    // None given: refused, saying where credentials were looked for; no secret printed.
    let (said, kept) = refused_pull(&pinned);
    assert!(
        said.contains(&format!(
            "registry {} refused access (401 Unauthorized): credentials were looked for in \
             LENS_REGISTRY_USERNAME/LENS_REGISTRY_PASSWORD (unset), then the Docker config",
            registry.authority()
        )),
        "{said}"
    );
    assert!(!kept);

    // From the environment.
    let mut pulling = lens_with(cache.path());
    with_env(&mut pulling);
    let out = pulling.args(["pull", &pinned]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("s3cret-pass"));

    // From a Docker config.
    let other = tempfile::tempdir().unwrap();
    let docker = other.path().join("docker");
    std::fs::create_dir(&docker).unwrap();
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode("acme:s3cret-pass");
    std::fs::write(
        docker.join("config.json"),
        serde_json::json!({ "auths": { registry.authority(): { "auth": auth } } }).to_string(),
    )
    .unwrap();
    let out = lens_with(other.path())
        .env("DOCKER_CONFIG", &docker)
        .args(["pull", &pinned])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn an_entrys_sha256_must_be_the_layer_the_reference_names() {
    let registry = Registry::start();
    let pinned = push(&registry, &crate::builtin_jsonl(), "acme/pin", "1.0");
    let wrong = "0".repeat(64);
    let said = refused_config_pull(&pinned, &format!("sha256 = \"{wrong}\""));
    let layer = super::sha256_of(Path::new(&crate::builtin_jsonl()));
    assert!(
        said.contains(&format!(
            "{pinned} names a component whose sha256 is {layer}, but the entry pins sha256 = {wrong}"
        )),
        "{said}"
    );
}

#[test]
fn a_push_of_a_file_that_is_not_a_component_is_refused_naming_it() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.wasm");
    std::fs::write(&file, "not a component").unwrap();
    let out = lens_with(dir.path())
        .arg("push")
        .arg(&file)
        .arg(registry.reference("acme/notes", "1.0"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "error: pushing {}: {}: the file is not a component `oci-wasm` can describe",
            file.display(),
            registry.reference("acme/notes", "1.0")
        )),
        "{}",
        text(&out)
    );
    assert!(!registry.log_text().contains("PUT /v2/acme/notes/manifests"));
}

/// A registry (a stub on 127.0.0.1) that answers every manifest with 2 MiB in 64 KiB chunks and
/// no `Content-Length`: the manifest is refused once 1 MiB has arrived, the rest never read.
#[test]
fn a_chunked_manifest_over_1_mib_is_refused_once_1_mib_has_arrived() {
    const STUB: &str = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if "/manifests/" not in self.path:
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            return
        self.send_response(200)
        self.send_header("content-type", "application/vnd.oci.image.manifest.v1+json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for _ in range(32):
                chunk = b" " * 65536
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
    def handle(self):
        try:
            super().handle()
        except OSError:
            pass
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_port, flush=True)
s.serve_forever()
"#;
    let mut stub = std::process::Command::new("python3")
        .args(["-c", STUB])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(stub.stdout.take().unwrap()),
        &mut port,
    )
    .unwrap();
    let reference = format!(
        "oci://127.0.0.1:{}/acme/chunked:1.0@sha256:{}",
        port.trim(),
        "0".repeat(64)
    );
    let (said, kept) = refused_pull(&reference);
    let _ = stub.kill();
    let _ = stub.wait();
    let arrived: u64 = said
        .split("its manifest is ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        said.contains("bytes or more, over 1048576: refused while it arrived"),
        "{said}"
    );
    // Stopped within a chunk or so of the limit, not after the whole 2 MiB.
    assert!((1 << 20) < arrived && arrived < (3 << 19), "{said}");
    assert!(!kept);
}
