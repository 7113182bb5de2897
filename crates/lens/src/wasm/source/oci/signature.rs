//! Signatures of a component in a registry, in cosign's key-pair layout, so a vendor signs with
//! the tool it already uses (`cosign sign --key cosign.key REF@DIGEST`) and a node checks it
//! offline with the vendor's public key (`verify = { key = "acme.pub" }`).
//!
//! The layout: the artifact of digest `sha256:D` is signed by an image manifest tagged
//! `sha256-D.sig` in the same repository, whose layers are each one signature: a "simple
//! signing" payload (`application/vnd.dev.cosign.simplesigning.v1+json`) naming the digest, and
//! the signature of that payload in the layer's `dev.cosignproject.cosign/signature`
//! annotation (ECDSA P-256 over SHA-256, ASN.1 DER, base64). Keys are cosign's: the public key a
//! PEM `PUBLIC KEY` (SubjectPublicKeyInfo), the private key cosign's encrypted PEM (scrypt and
//! NaCl secretbox, its password in `COSIGN_PASSWORD`) or an unencrypted PKCS#8 `PRIVATE KEY`
//! (`openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
//!
//! Only the key is trusted: no transparency log and no certificate is consulted (what `cosign
//! verify --key … --insecure-ignore-tlog` checks). ECDSA P-256 only, cosign's default.
//!
//! Everything read here is untrusted and bounded: a key file ([`MAX_KEY_BYTES`]), a payload
//! ([`MAX_PAYLOAD_BYTES`]), the signatures of one digest ([`MAX_SIGNATURES`]), the cost of
//! decrypting a key (scrypt's parameters as cosign writes them, nothing else).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, UnparsedPublicKey};
use serde::{Deserialize, Serialize};

use super::reference::OciReference;
use crate::error::OciError;

/// The media type of a signature's payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the payload's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// What a payload's `critical.type` says.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The variable holding the password of an encrypted private key (cosign's).
pub const PASSWORD_VAR: &str = "COSIGN_PASSWORD";

/// The largest key file read.
pub const MAX_KEY_BYTES: u64 = 64 << 10;
/// The largest payload read (cosign's are a few hundred bytes).
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 10;
/// The most signatures of one digest read.
pub const MAX_SIGNATURES: usize = 64;

/// The DER prefix of a P-256 public key's SubjectPublicKeyInfo (id-ecPublicKey, prime256v1, a
/// 65-byte uncompressed point): what `cosign generate-key-pair` and openssl write.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The tag holding the signatures of the artifact of `digest` (hex).
pub fn signature_tag(digest: &str) -> String {
    format!("sha256-{digest}.sig")
}

/// One signature as the registry holds it, and as the store keeps it beside the component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    /// The payload, base64.
    pub payload: String,
    /// Its signature, base64 of ASN.1 DER (the annotation's value).
    pub signature: String,
}

/// The simple-signing payload cosign signs for `reference`'s artifact of `digest` (hex).
pub fn payload(reference: &OciReference, digest: &str) -> Vec<u8> {
    let json = serde_json::json!({
        "critical": {
            "identity": {
                "docker-reference": format!("{}/{}", reference.registry, reference.repository)
            },
            "image": { "docker-manifest-digest": format!("sha256:{digest}") },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    });
    serde_json::to_vec(&json).expect("a JSON value serializes")
}

/// A public key an entry trusts.
#[derive(Debug, Clone)]
pub struct VerifyKey {
    path: PathBuf,
    /// The uncompressed P-256 point.
    point: Vec<u8>,
}

impl VerifyKey {
    /// Reads the PEM public key at `path`.
    pub fn read(path: &Path) -> Result<Self, OciError> {
        let bad = |why: String| OciError::Key {
            key: path.to_path_buf(),
            why,
        };
        let text = read_key_file(path).map_err(bad)?;
        let der = pem_section(&text, &["PUBLIC KEY"]).map_err(bad)?.1;
        let point = der
            .strip_prefix(&P256_SPKI_PREFIX[..])
            .filter(|p| p.len() == 65 && p[0] == 4)
            .ok_or_else(|| {
                bad("it is not an ECDSA P-256 public key (cosign's default, `cosign.pub`)".into())
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            point: point.to_vec(),
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether one of `signatures` is this key's over a payload naming `digest` (hex); if
    /// none, why not, in words for an error.
    pub fn verify(&self, digest: &str, signatures: &[Signed]) -> Result<(), String> {
        if signatures.is_empty() {
            return Err("it carries no signature".into());
        }
        let key = UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, &self.point);
        let mut other_digest = None;
        for s in signatures {
            let (Ok(payload), Ok(sig)) = (BASE64.decode(&s.payload), BASE64.decode(&s.signature))
            else {
                continue;
            };
            if key.verify(&payload, &sig).is_err() {
                continue;
            }
            match signed_digest(&payload) {
                Some(d) if d == format!("sha256:{digest}") => return Ok(()),
                Some(d) => other_digest = Some(d),
                None => other_digest = Some("a payload that is not cosign's".into()),
            }
        }
        Err(match other_digest {
            Some(d) => format!("this key signed {d}, not sha256:{digest}"),
            None => format!(
                "none of its {} signature{} is by this key",
                signatures.len(),
                if signatures.len() == 1 { "" } else { "s" }
            ),
        })
    }
}

/// The digest a verified payload names, if it is a cosign simple-signing payload.
fn signed_digest(payload: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let critical = &json["critical"];
    (critical["type"].as_str() == Some(PAYLOAD_TYPE))
        .then(|| critical["image"]["docker-manifest-digest"].as_str())
        .flatten()
        .map(str::to_string)
}

/// A private key `lens push --sign-key` signs with.
pub struct SignKey {
    pair: EcdsaKeyPair,
}

impl SignKey {
    /// Reads the PEM private key at `path`: cosign's encrypted key (its password from
    /// `password`, [`PASSWORD_VAR`] for the command line) or an unencrypted PKCS#8 key.
    pub fn read(path: &Path, password: Option<&str>) -> Result<Self, OciError> {
        let bad = |why: String| OciError::Key {
            key: path.to_path_buf(),
            why,
        };
        let text = read_key_file(path).map_err(bad)?;
        let (label, der) = pem_section(
            &text,
            &[
                "ENCRYPTED SIGSTORE PRIVATE KEY",
                "ENCRYPTED COSIGN PRIVATE KEY",
                "PRIVATE KEY",
                "EC PRIVATE KEY",
            ],
        )
        .map_err(bad)?;
        let pkcs8 = match label {
            "PRIVATE KEY" => der,
            "EC PRIVATE KEY" => {
                return Err(bad(
                    "it is a SEC1 key; convert it to PKCS#8 with `openssl pkcs8 \
                     -topk8 -nocrypt -in KEY -out KEY.pk8`"
                        .into(),
                ));
            }
            _ => {
                let password = password.ok_or_else(|| {
                    bad(format!(
                        "it is encrypted and {PASSWORD_VAR} is not set (cosign's password variable)"
                    ))
                })?;
                decrypt(&der, password).map_err(bad)?
            }
        };
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &pkcs8,
            &ring::rand::SystemRandom::new(),
        )
        .map_err(|e| bad(format!("it is not an ECDSA P-256 private key ({e})")))?;
        Ok(Self { pair })
    }

    /// The signature of `payload`, as the annotation holds it.
    pub fn sign(&self, payload: &[u8]) -> Result<Signed, OciError> {
        let sig = self
            .pair
            .sign(&ring::rand::SystemRandom::new(), payload)
            .map_err(|e| OciError::Key {
                key: PathBuf::new(),
                why: format!("signing failed ({e})"),
            })?;
        Ok(Signed {
            payload: BASE64.encode(payload),
            signature: BASE64.encode(sig.as_ref()),
        })
    }

    /// The public half, as the uncompressed point (for tests and messages).
    pub fn public_point(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }
}

/// A key file's text, at most [`MAX_KEY_BYTES`].
fn read_key_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it ({e})"))?;
    let mut text = String::new();
    file.take(MAX_KEY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read it as text ({e})"))?;
    if text.len() as u64 > MAX_KEY_BYTES {
        return Err(format!("it is over {MAX_KEY_BYTES} bytes: not a key"));
    }
    Ok(text)
}

/// The first PEM section of `text` with one of `labels`, decoded: its label and bytes.
fn pem_section<'l>(text: &str, labels: &[&'l str]) -> Result<(&'l str, Vec<u8>), String> {
    for label in labels {
        let begin = format!("-----BEGIN {label}-----");
        let end = format!("-----END {label}-----");
        let Some(start) = text.find(&begin) else {
            continue;
        };
        let body = &text[start + begin.len()..];
        let stop = body
            .find(&end)
            .ok_or_else(|| format!("its `{begin}` section has no end"))?;
        let b64: String = body[..stop]
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let der = BASE64
            .decode(b64)
            .map_err(|e| format!("its `{label}` section is not base64 ({e})"))?;
        return Ok((label, der));
    }
    Err(format!(
        "it has no PEM section {}",
        labels
            .iter()
            .map(|l| format!("`{l}`"))
            .collect::<Vec<_>>()
            .join(" or ")
    ))
}

/// cosign's encrypted private key: a JSON envelope (go-securesystemslib's `encrypted`).
#[derive(Deserialize)]
struct Envelope {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// The PKCS#8 key inside cosign's envelope `der` (the section's bytes are the JSON).
fn decrypt(der: &[u8], password: &str) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let envelope: Envelope = serde_json::from_slice(der)
        .map_err(|e| format!("its encrypted section is not cosign's envelope ({e})"))?;
    let (kdf, cipher) = (&envelope.kdf, &envelope.cipher);
    if kdf.name != "scrypt" || cipher.name != "nacl/secretbox" {
        return Err(format!(
            "it is encrypted with {}/{}, not scrypt/nacl/secretbox",
            kdf.name, cipher.name
        ));
    }
    // The parameters cosign writes (2^15 or 2^16, 8, 1): anything else could make the
    // derivation take any time and memory, so it is refused.
    let log_n = match (kdf.params.n, kdf.params.r, kdf.params.p) {
        (32768, 8, 1) => 15,
        (65536, 8, 1) => 16,
        (n, r, p) => {
            return Err(format!(
                "its scrypt parameters N={n}, r={r}, p={p} are not cosign's (N=32768 or 65536, r=8, p=1)"
            ));
        }
    };
    let decode = |what: &str, s: &str| {
        BASE64
            .decode(s)
            .map_err(|e| format!("its {what} is not base64 ({e})"))
    };
    let salt = decode("salt", &kdf.salt)?;
    let nonce = decode("nonce", &cipher.nonce)?;
    let ciphertext = decode("ciphertext", &envelope.ciphertext)?;
    if nonce.len() != 24 {
        return Err(format!("its nonce is {} bytes, not 24", nonce.len()));
    }
    let params = scrypt::Params::new(log_n, 8, 1, 32).map_err(|e| e.to_string())?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| e.to_string())?;
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(&key.into());
    cipher
        .decrypt(nonce.as_slice().into(), ciphertext.as_slice())
        .map_err(|_| {
            format!("it does not decrypt: a wrong password ({PASSWORD_VAR}) or a damaged key")
        })
}

#[cfg(test)]
mod tests;
