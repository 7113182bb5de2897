use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};

use super::*;

const DIGEST: &str = "4f1c2d3e4f1c2d3e4f1c2d3e4f1c2d3e4f1c2d3e4f1c2d3e4f1c2d3e4f1c2d3e";
const OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000001";

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = BASE64.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A fresh key pair written to `dir` as `NAME.key` (PKCS#8) and `NAME.pub` (SPKI).
fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf, Vec<u8>) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        pkcs8.as_ref(),
        &rng,
    )
    .unwrap();
    let spki = [&P256_SPKI_PREFIX[..], pair.public_key().as_ref()].concat();
    let (private, public) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    std::fs::write(&private, pem("PRIVATE KEY", pkcs8.as_ref())).unwrap();
    std::fs::write(&public, pem("PUBLIC KEY", &spki)).unwrap();
    (private, public, pkcs8.as_ref().to_vec())
}

/// `pkcs8` in cosign's encrypted envelope under `password`, with scrypt's `n`.
fn encrypted(pkcs8: &[u8], password: &str, n: u64) -> String {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let (salt, nonce) = ([7u8; 32], [9u8; 24]);
    let params = scrypt::Params::new(n.trailing_zeros() as u8, 8, 1, 32).unwrap();
    let mut key = [0u8; 32];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).unwrap();
    let ciphertext = crypto_secretbox::XSalsa20Poly1305::new(&key.into())
        .encrypt(nonce.as_slice().into(), pkcs8)
        .unwrap();
    let envelope = serde_json::json!({
        "kdf": { "name": "scrypt", "params": { "N": n, "r": 8, "p": 1 }, "salt": BASE64.encode(salt) },
        "cipher": { "name": "nacl/secretbox", "nonce": BASE64.encode(nonce) },
        "ciphertext": BASE64.encode(ciphertext),
    });
    pem(
        "ENCRYPTED SIGSTORE PRIVATE KEY",
        &serde_json::to_vec(&envelope).unwrap(),
    )
}

fn reference() -> OciReference {
    OciReference::parse(&format!(
        "oci://127.0.0.1:5000/acme/exporter@sha256:{DIGEST}"
    ))
    .unwrap()
}

#[test]
fn the_payload_is_cosigns_simple_signing_document() {
    assert_eq!(
        String::from_utf8(payload(&reference(), DIGEST)).unwrap(),
        format!(
            "{{\"critical\":{{\"identity\":{{\"docker-reference\":\"127.0.0.1:5000/acme/exporter\"}},\
             \"image\":{{\"docker-manifest-digest\":\"sha256:{DIGEST}\"}},\
             \"type\":\"cosign container image signature\"}},\"optional\":null}}"
        )
    );
    assert_eq!(
        signature_tag(DIGEST),
        format!("sha256-{DIGEST}.sig"),
        "cosign's tag"
    );
}

#[test]
fn a_signature_verifies_with_its_key_only_and_only_for_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public, _) = key_pair(dir.path(), "acme");
    let (_, stranger, _) = key_pair(dir.path(), "stranger");
    let signer = SignKey::read(&private, None).unwrap();
    let signed = signer.sign(&payload(&reference(), DIGEST)).unwrap();
    let key = VerifyKey::read(&public).unwrap();
    assert_eq!(key.verify(DIGEST, std::slice::from_ref(&signed)), Ok(()));
    // Among others, in any order.
    let other = SignKey::read(&key_pair(dir.path(), "other").0, None)
        .unwrap()
        .sign(&payload(&reference(), DIGEST))
        .unwrap();
    assert_eq!(key.verify(DIGEST, &[other.clone(), signed.clone()]), Ok(()));

    let by_stranger = VerifyKey::read(&stranger).unwrap();
    assert_eq!(
        by_stranger.verify(DIGEST, &[signed.clone(), other]),
        Err("none of its 2 signatures is by this key".into())
    );
    assert_eq!(
        key.verify(OTHER, std::slice::from_ref(&signed)),
        Err(format!(
            "this key signed sha256:{DIGEST}, not sha256:{OTHER}"
        ))
    );
    assert_eq!(
        key.verify(DIGEST, &[]),
        Err("it carries no signature".into())
    );

    // One changed byte of the payload, or of the signature, or garbage: not this key's.
    let mut payload_bytes = BASE64.decode(&signed.payload).unwrap();
    payload_bytes[10] ^= 1;
    let tampered = Signed {
        payload: BASE64.encode(&payload_bytes),
        ..signed.clone()
    };
    let mut sig = BASE64.decode(&signed.signature).unwrap();
    let last = sig.len() - 1;
    sig[last] ^= 1;
    let bad_sig = Signed {
        signature: BASE64.encode(&sig),
        ..signed.clone()
    };
    let garbage = Signed {
        payload: "%%%".into(),
        signature: "not base64".into(),
    };
    for s in [tampered, bad_sig, garbage] {
        assert_eq!(
            key.verify(DIGEST, &[s]),
            Err("none of its 1 signature is by this key".into())
        );
    }
}

#[test]
fn a_payload_signed_by_the_key_but_not_cosigns_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public, _) = key_pair(dir.path(), "acme");
    let signed = SignKey::read(&private, None)
        .unwrap()
        .sign(format!("{{\"digest\":\"sha256:{DIGEST}\"}}").as_bytes())
        .unwrap();
    assert_eq!(
        VerifyKey::read(&public).unwrap().verify(DIGEST, &[signed]),
        Err(format!(
            "this key signed a payload that is not cosign's, not sha256:{DIGEST}"
        ))
    );
}

#[test]
fn cosigns_encrypted_private_key_signs_with_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let (_, public, pkcs8) = key_pair(dir.path(), "acme");
    let path = dir.path().join("cosign.key");
    std::fs::write(&path, encrypted(&pkcs8, "s3cret", 32768)).unwrap();
    let signer = SignKey::read(&path, Some("s3cret")).unwrap();
    let signed = signer.sign(&payload(&reference(), DIGEST)).unwrap();
    assert_eq!(
        VerifyKey::read(&public).unwrap().verify(DIGEST, &[signed]),
        Ok(())
    );

    let why = |password| match SignKey::read(&path, password) {
        Err(OciError::Key { key, why }) => {
            assert_eq!(key, path);
            why
        }
        Ok(_) => panic!("read with {password:?}"),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        why(Some("wrong")),
        "it does not decrypt: a wrong password (COSIGN_PASSWORD) or a damaged key"
    );
    assert_eq!(
        why(None),
        "it is encrypted and COSIGN_PASSWORD is not set (cosign's password variable)"
    );
    // Parameters that would make the derivation cost anything: refused before deriving.
    std::fs::write(&path, encrypted(&pkcs8, "s3cret", 1 << 10)).unwrap();
    assert_eq!(
        why(Some("s3cret")),
        "its scrypt parameters N=1024, r=8, p=1 are not cosign's (N=32768 or 65536, r=8, p=1)"
    );
}

#[test]
fn a_file_that_is_not_a_usable_key_is_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public, _) = key_pair(dir.path(), "acme");
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let public_why = |path: &Path| match VerifyKey::read(path) {
        Err(OciError::Key { why, .. }) => why,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        public_why(&private),
        "it has no PEM section `PUBLIC KEY`",
        "a private key where the public one goes"
    );
    assert!(public_why(&dir.path().join("absent.pub")).starts_with("cannot read it ("));
    // An RSA key's SubjectPublicKeyInfo (the algorithm differs from the first bytes on).
    let rsa = file(
        "rsa.pub",
        &pem(
            "PUBLIC KEY",
            &[0x30, 0x82, 0x01, 0x22, 0x30, 0x0d, 0x06, 0x09],
        ),
    );
    assert_eq!(
        public_why(&rsa),
        "it is not an ECDSA P-256 public key (cosign's default, `cosign.pub`)"
    );
    let cut = file("cut.pub", "-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n");
    assert_eq!(
        public_why(&cut),
        "its `-----BEGIN PUBLIC KEY-----` section has no end"
    );
    let huge = file("huge.pub", &"x".repeat(MAX_KEY_BYTES as usize + 1));
    assert_eq!(
        public_why(&huge),
        format!("it is over {MAX_KEY_BYTES} bytes: not a key")
    );

    let private_why = |path: &Path| match SignKey::read(path, None) {
        Err(OciError::Key { why, .. }) => why,
        Ok(_) => panic!("{} read as a private key", path.display()),
        Err(e) => panic!("{e}"),
    };
    let sec1 = file("sec1.key", &pem("EC PRIVATE KEY", &[1, 2, 3]));
    assert!(private_why(&sec1).starts_with("it is a SEC1 key; convert it to PKCS#8"));
    assert!(private_why(&public).starts_with("it has no PEM section `ENCRYPTED SIGSTORE"));
    let junk = file("junk.key", &pem("PRIVATE KEY", b"not DER"));
    assert!(private_why(&junk).starts_with("it is not an ECDSA P-256 private key"));
}
