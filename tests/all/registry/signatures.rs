//! `verify = { key = … }`: a component signed in cosign's key-pair layout (`lens push
//! --sign-key`, keys made by openssl, the signature checked by openssl too) loads with its key
//! and offline after that; unsigned, signed by another key, or signed for another digest, it
//! is refused naming the reference and the key, before its layer is downloaded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use lens_test_support::registry::Registry;

use super::{lens_with, put_blob, put_manifest, text};

/// An ECDSA P-256 key pair made by openssl: (`NAME.key` PKCS#8, `NAME.pub`).
fn openssl_key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
    };
    let (k, p) = (private.to_str().unwrap(), public.to_str().unwrap());
    run(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        k,
    ]);
    run(&["pkey", "-in", k, "-pubout", "-out", p]);
    (private, public)
}

/// `lens push FILE REF` (with `--sign-key KEY` if given): the pinned reference and the output.
fn push_signed(
    registry: &Registry,
    file: &Path,
    repository: &str,
    key: Option<&Path>,
) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lens_with(dir.path());
    cmd.arg("push")
        .arg(file)
        .arg(registry.reference(repository, "1.0"));
    if let Some(key) = key {
        cmd.arg("--sign-key").arg(key);
    }
    let out = cmd.output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    (super::pinned_line(&said), said)
}

/// `lens pull REF --verify-key KEY` with `cache` as the store.
fn pull(cache: &Path, reference: &str, key: &Path) -> std::process::Output {
    lens_with(cache)
        .args(["pull", reference, "--verify-key"])
        .arg(key)
        .output()
        .unwrap()
}

/// The body of a `GET` of `target` from `registry`, asking for `accept`.
fn get(registry: &Registry, target: &str, accept: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(registry.authority()).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n",
        registry.authority()
    )
    .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 200"), "GET {target}");
    answer[end + 4..].to_vec()
}

fn digest_of(pinned: &str) -> &str {
    pinned.rsplit_once("@sha256:").unwrap().1
}

#[test]
fn a_component_signed_by_lens_push_verifies_with_openssl_and_loads_with_its_key_offline_after() {
    let mut registry = Registry::start();
    let keys = tempfile::tempdir().unwrap();
    let (private, public) = openssl_key_pair(keys.path(), "acme");
    let (pinned, said) = push_signed(
        &registry,
        &crate::builtin_jsonl(),
        "acme/signed",
        Some(&private),
    );
    let digest = digest_of(&pinned).to_string();
    assert!(
        said.contains(&format!(
            "signed with {} (cosign's layout, tag sha256-{digest}.sig)",
            private.display()
        )),
        "{said}"
    );

    // The signature is cosign's, and openssl (not Lens) says it is the key's.
    let manifest: serde_json::Value = serde_json::from_slice(&get(
        &registry,
        &format!("/v2/acme/signed/manifests/sha256-{digest}.sig"),
        "application/vnd.oci.image.manifest.v1+json",
    ))
    .unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    let layer = &layers[0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = get(
        &registry,
        &format!(
            "/v2/acme/signed/blobs/{}",
            layer["digest"].as_str().unwrap()
        ),
        "*/*",
    );
    let claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        claims["critical"]["image"]["docker-manifest-digest"],
        format!("sha256:{digest}")
    );
    assert_eq!(
        claims["critical"]["type"],
        "cosign container image signature"
    );
    let signature = base64::engine::general_purpose::STANDARD
        .decode(
            layer["annotations"]["dev.cosignproject.cosign/signature"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    let (payload_file, sig_file) = (keys.path().join("payload"), keys.path().join("sig"));
    std::fs::write(&payload_file, &payload).unwrap();
    std::fs::write(&sig_file, &signature).unwrap();
    let verified = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(&public)
        .arg("-signature")
        .arg(&sig_file)
        .arg(&payload_file)
        .output()
        .unwrap();
    assert!(verified.status.success(), "{}", text(&verified));

    // Verified, stored with its signature; then a start needs no registry at all.
    let cache = tempfile::tempdir().unwrap();
    let out = pull(cache.path(), &pinned, &public);
    assert!(out.status.success(), "{}", text(&out));
    let signatures = cache
        .path()
        .join(format!("oci/sha256-{digest}/signatures.json"));
    assert!(signatures.is_file());
    // Stored without `verify` first: the signatures are asked for when an entry wants them.
    let unverified = tempfile::tempdir().unwrap();
    let out = lens_with(unverified.path())
        .args(["pull", &pinned])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stored = unverified
        .path()
        .join(format!("oci/sha256-{digest}/signatures.json"));
    assert!(!stored.exists());
    let out = pull(unverified.path(), &pinned, &public);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stored.is_file());
    registry.stop();
    let config = cache.path().join("lens.toml");
    std::fs::write(
        &config,
        format!(
            "[[traces.exporters]]\nkind = \"wasm\"\npath = \"{pinned}\"\nverify = {{ key = \"keys/acme.pub\" }}\n"
        ),
    )
    .unwrap();
    std::fs::create_dir(cache.path().join("keys")).unwrap();
    std::fs::copy(&public, cache.path().join("keys/acme.pub")).unwrap();
    let offline = lens_with(cache.path())
        .arg("pull")
        .arg(&config)
        .output()
        .unwrap();
    assert!(offline.status.success(), "{}", text(&offline));
    assert!(
        text(&offline).contains("already in the cache"),
        "{}",
        text(&offline)
    );
}

/// cosign's payload for `repository`'s artifact of `digest`, signed by openssl with `key`:
/// (payload, base64 signature).
fn openssl_signature(
    registry: &Registry,
    repository: &str,
    digest: &str,
    key: &Path,
) -> (Vec<u8>, String) {
    let payload = serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": { "docker-reference": format!("{}/{repository}", registry.authority()) },
            "image": { "docker-manifest-digest": format!("sha256:{digest}") },
            "type": "cosign container image signature",
        },
        "optional": null,
    }))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("payload");
    std::fs::write(&file, &payload).unwrap();
    let out = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(key)
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    (
        payload,
        base64::engine::general_purpose::STANDARD.encode(out.stdout),
    )
}

/// Puts `signatures` as the signatures of `repository`'s artifact of `digest`, in cosign's
/// layout (replacing any there).
fn put_signatures(
    registry: &Registry,
    repository: &str,
    digest: &str,
    signatures: &[(Vec<u8>, String)],
) {
    let config = b"{}";
    let config_digest = put_blob(registry, repository, config);
    let layers: Vec<serde_json::Value> = signatures
        .iter()
        .map(|(payload, signature)| {
            serde_json::json!({
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "digest": put_blob(registry, repository, payload),
                "size": payload.len(),
                "annotations": { "dev.cosignproject.cosign/signature": signature },
            })
        })
        .collect();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": config.len(),
        },
        "layers": layers,
    });
    put_manifest(
        registry,
        repository,
        &format!("sha256-{digest}.sig"),
        &manifest,
    );
}

#[test]
fn unsigned_or_signed_by_another_key_or_for_another_digest_is_refused_before_the_download() {
    let registry = Registry::start();
    let keys = tempfile::tempdir().unwrap();
    let (acme_key, acme) = openssl_key_pair(keys.path(), "acme");
    let (stranger_key, _) = openssl_key_pair(keys.path(), "stranger");
    let (pinned, _) = push_signed(&registry, &crate::builtin_jsonl(), "acme/unsigned", None);
    let digest = digest_of(&pinned).to_string();
    let layer = super::sha256_of(&crate::builtin_jsonl());
    let refused = |why: &str| {
        let cache = tempfile::tempdir().unwrap();
        let out = pull(cache.path(), &pinned, &acme);
        assert!(!out.status.success());
        assert_eq!(
            text(&out).trim_end(),
            format!(
                "error: wasm exporter `unsigned` ({pinned}): {pinned}: refused, not signed by the key {}: {why} \
                 (signatures are looked for at the tag sha256-{digest}.sig of its repository, cosign's \
                 layout: `cosign sign --key cosign.key {pinned}` or `lens push --sign-key`)",
                acme.display()
            )
        );
        assert!(
            !cache.path().join(format!("oci/sha256-{digest}")).exists(),
            "nothing kept"
        );
        assert!(
            !registry
                .log_text()
                .contains(&format!("GET /v2/acme/unsigned/blobs/sha256:{layer}")),
            "the layer was downloaded"
        );
    };
    refused("it carries no signature");

    let by_stranger = openssl_signature(&registry, "acme/unsigned", &digest, &stranger_key);
    put_signatures(
        &registry,
        "acme/unsigned",
        &digest,
        std::slice::from_ref(&by_stranger),
    );
    refused("none of its 1 signature is by this key");

    // The right key, over a payload naming another digest (a signature moved from another
    // artifact).
    let other = "1".repeat(64);
    let moved = openssl_signature(&registry, "acme/unsigned", &other, &acme_key);
    put_signatures(
        &registry,
        "acme/unsigned",
        &digest,
        &[by_stranger.clone(), moved],
    );
    refused(&format!(
        "this key signed sha256:{other}, not sha256:{digest}"
    ));

    // The right key over the right payload, signed by openssl rather than Lens: taken.
    let good = openssl_signature(&registry, "acme/unsigned", &digest, &acme_key);
    put_signatures(&registry, "acme/unsigned", &digest, &[by_stranger, good]);
    let cache = tempfile::tempdir().unwrap();
    let out = pull(cache.path(), &pinned, &acme);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn verify_on_a_file_a_missing_key_and_a_private_key_as_the_public_one_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lens.toml");
    std::fs::write(
        &config,
        "[[traces.exporters]]\nkind = \"wasm\"\npath = \"x.wasm\"\nverify = { key = \"acme.pub\" }\n",
    )
    .unwrap();
    let out = lens_with(dir.path())
        .args(["config", "validate"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains(
            "`allow_unpinned`, `insecure_registries` and `verify` are for an `oci://` path \
             (a file is pinned by `sha256`)"
        ),
        "{}",
        text(&out)
    );

    // Read before any network: the registry named here does not exist.
    let reference = format!("oci://127.0.0.1:9/acme/x@sha256:{}", "a".repeat(64));
    let absent = dir.path().join("absent.pub");
    let out = pull(dir.path(), &reference, &absent);
    assert!(
        text(&out).contains(&format!("key {}: cannot read it (", absent.display())),
        "{}",
        text(&out)
    );
    let (private, _) = openssl_key_pair(dir.path(), "acme");
    let out = pull(dir.path(), &reference, &private);
    assert!(
        text(&out).contains(&format!(
            "key {}: it has no PEM section `PUBLIC KEY`",
            private.display()
        )),
        "{}",
        text(&out)
    );
}
