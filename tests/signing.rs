//! Signing test vectors: Lodestar's §A7.8 vectors (which pin warrant's signing rule, SHA-256 hex
//! of the canonical document signed as 64 ASCII bytes, to Lodestar's) and warrant's own decision
//! vector, the one `docs/spool.md` documents. The warrant vector was cross-checked with Python
//! (`json.dumps(sort_keys=True, separators=(",", ":"))`, `hashlib`, `cryptography` Ed25519).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use warrant::protocol::canonical;
use warrant::protocol::chain::Appended;
use warrant::protocol::decision::{
    self, DecisionError, DecisionInput, SignatureError, SignedDecision, Verdict, decision_document, sign_decision,
    verify_document,
};
use warrant::protocol::keys::{PinnedKeys, Principal};

/// RFC 8032 §7.1 test 1 secret key.
const RFC8032_SEED: [u8; 32] = [
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4, 0x44, 0x49, 0xc5,
    0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
];

// ---- warrant's decision test vector (docs/spool.md) ----------------------------------------------

const SEED: [u8; 32] = [7u8; 32];
const PUBLIC_KEY_HEX: &str = "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c";
const FINGERPRINT: &str = "SHA256:/oEsEvOrTOasXbaaw1L5BssbEe9D+zPiUu9/9VImOIk";
const PACKET_HASH: &str = "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862";
const DOCUMENT: &str = r#"{"action_class":"email.send.external","agent":"scribe","decided_at":"2026-11-21T09:00:00Z","decision":"approve","domain":"warrant.decision/v1","key":"SHA256:/oEsEvOrTOasXbaaw1L5BssbEe9D+zPiUu9/9VImOIk","packet_hash":"sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862","packet_id":"p-1","principal":"alice","reason":"ok"}"#;
const PAYLOAD_HASH: &str = "38d3d6a2eefb48a8a8aecbaf6910c42515ef1960171115709164ff4646c852ec";
const SIGNATURE: &str = "zg9IC6x3ZxkfTU3FD+qlr5yRRrZwAbwqFTw2WhWts8O9K5S7u4pjd+bYI3aZrgaEknZIJ4a2vVZT+NoCGZwbCQ==";

fn alice() -> Principal {
    Principal::from_seed("alice", &SEED)
}

fn pins_for(name: &str, p: &Principal) -> PinnedKeys {
    let mut pins = PinnedKeys::default();
    pins.pin(name, p.verifying_key());
    pins
}

fn vector_input(packet_hash: &str) -> DecisionInput<'_> {
    DecisionInput {
        stands_in_for: &[],
        packet_id: "p-1",
        packet_hash,
        action_class: "email.send.external",
        agent: "scribe",
        trace_id: "warrant:p-1",
        verdict: Verdict::Approve,
        reason: Some("ok"),
        decided_at: "2026-11-21T09:00:00Z",
    }
}

fn vector_signed() -> SignedDecision {
    let ph = canonical::canonical_hash(&json!({"a": 1}));
    sign_decision(&alice(), &vector_input(&ph))
}

// ---- Lodestar §A7.8 ------------------------------------------------------------------------------

// The RFC 8032 seed gives Lodestar's operator key, and the three §A7.8 rows reproduce exactly: canonical string, payload_hash, signature.
#[test]
fn lodestar_a7_8_vectors_reproduce() {
    let operator = Principal::from_seed("operator", &RFC8032_SEED);
    assert_eq!(
        canonical::hex(operator.verifying_key().as_bytes()),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    );
    assert!(operator.public_pem().contains("MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="));
    let base = json!({"request_id": "req-1", "action_id": "act-1", "kind": "granted", "approver_id": "operator", "at": "2026-06-07T00:00:00Z"});
    let mut with_reason = base.clone();
    with_reason["reason"] = json!("ok");
    let mut denied = base.clone();
    denied["kind"] = json!("denied");
    let rows = [
        (
            &base,
            r#"{"action_id":"act-1","approver_id":"operator","at":"2026-06-07T00:00:00Z","kind":"granted","request_id":"req-1"}"#,
            "5616f940cd601c9b9a7123de416556f856f7d164b137a3b2524359abccace8fd",
            "puX79bA5jvZmqqifrzmks3rYJvDMnWKzD+ZSEJZLqmRePd+4Ktl9KtU5+NNrLw+AbmVwYt3nFr0T4CSdX+sVCA==",
        ),
        (
            &with_reason,
            r#"{"action_id":"act-1","approver_id":"operator","at":"2026-06-07T00:00:00Z","kind":"granted","reason":"ok","request_id":"req-1"}"#,
            "714e27957829ea698aa56dc89c7f26eab08cc6bb17901cdf37f68d862639dfe3",
            "k4sUAoTTN0oBHv6Szf0Jw+ps5NOPTEkdCvIQyVWvaZsoPY7Ne363kVOTsTXcAFRWeHADI7A1omM4q3A7faT5DA==",
        ),
        (
            &denied,
            r#"{"action_id":"act-1","approver_id":"operator","at":"2026-06-07T00:00:00Z","kind":"denied","request_id":"req-1"}"#,
            "b492a470f3a230e4c927bc9e85cd81783e684f6f8b8518ffa006b9b02f2950ab",
            "zuPEHpkIAZy+iVCrMcGSYyWDRcgkRuTyECVwHMDf45MNHFAdVZjlHwAawLsTCN4jAy/kiai4cRTnKm9SsGHTDA==",
        ),
    ];
    for (doc, canon, hash, sig) in rows {
        assert_eq!(canonical::to_canonical_string(doc), canon);
        assert_eq!(decision::payload_hash(doc), hash);
        assert_eq!(warrant::protocol::canonical::sha256_hex(canon.as_bytes()), hash);
        // The message signed is the 64 ASCII bytes of the hex hash.
        let signature = operator.sign(hash.as_bytes());
        assert_eq!(STANDARD.encode(signature.to_bytes()), sig);
        // sign_document applies the same rule.
        let detached = decision::sign_document(&operator, doc);
        assert_eq!(detached["payload_hash"], json!(hash));
        assert_eq!(detached["signature"], json!(sig));
        assert_eq!(detached["algorithm"], json!("ed25519"));
        assert!(operator.verifying_key().verify_strict(hash.as_bytes(), &signature).is_ok());
    }
}

// ---- warrant's own vector --------------------------------------------------------------------------

// The documented warrant decision vector: key, packet hash, canonical document, payload hash and signature are fixed bytes.
#[test]
fn warrant_decision_vector() {
    let p = alice();
    assert_eq!(canonical::hex(p.verifying_key().as_bytes()), PUBLIC_KEY_HEX);
    assert_eq!(p.fingerprint(), FINGERPRINT);
    assert_eq!(canonical::canonical_hash(&json!({"a": 1})), PACKET_HASH);
    assert_eq!(canonical::sha256_prefixed(br#"{"a":1}"#), PACKET_HASH);

    let signed = vector_signed();
    assert_eq!(canonical::to_canonical_string(&signed.document), DOCUMENT);
    assert_eq!(signed.document, decision_document(&vector_input(PACKET_HASH), "alice", FINGERPRINT));
    assert_eq!(decision::payload_hash(&signed.document), PAYLOAD_HASH);
    assert_eq!(warrant::protocol::canonical::sha256_hex(DOCUMENT.as_bytes()), PAYLOAD_HASH);
    assert_eq!(
        signed.signature,
        json!({
            "algorithm": "ed25519",
            "signer": "alice",
            "key_fingerprint": FINGERPRINT,
            "payload_hash": PAYLOAD_HASH,
            "signature": SIGNATURE,
        })
    );
    // Signing is deterministic (Ed25519), and the raw signature is over the ASCII hex.
    assert_eq!(STANDARD.encode(p.sign(PAYLOAD_HASH.as_bytes()).to_bytes()), SIGNATURE);
    assert_eq!(SIGNATURE.len(), 88);

    let pins = pins_for("alice", &p);
    let pin = verify_document(&signed.document, &signed.signature, &pins).expect("vector verifies");
    assert_eq!(pin.principal, "alice");
    assert_eq!(pin.fingerprint, FINGERPRINT);
}

// The document has no `reason` key at all (not null) when no reason is given, so the hash differs.
#[test]
fn reason_is_omitted_not_null_when_absent() {
    let mut input = vector_input(PACKET_HASH);
    input.reason = None;
    let doc = decision_document(&input, "alice", FINGERPRINT);
    assert!(doc.get("reason").is_none(), "{doc}");
    assert_ne!(decision::payload_hash(&doc), PAYLOAD_HASH);
    let text = canonical::to_canonical_string(&doc);
    assert_eq!(text, DOCUMENT.replace(r#","reason":"ok""#, ""));
}

// Editing the signed reason after signing is rejected as an edited document.
#[test]
fn edited_reason_fails() {
    let signed = vector_signed();
    let pins = pins_for("alice", &alice());
    let mut doc = signed.document.clone();
    doc["reason"] = json!("ok, and also wire the money");
    let err = verify_document(&doc, &signed.signature, &pins).expect_err("edited reason must fail");
    assert!(matches!(&err, SignatureError::Edited { now, .. } if *now == decision::payload_hash(&doc)), "{err}");
    // Removing it is an edit too.
    doc.as_object_mut().map(|m| m.remove("reason"));
    let err = verify_document(&doc, &signed.signature, &pins).expect_err("removed reason must fail");
    assert!(matches!(err, SignatureError::Edited { .. }), "{err}");
}

// An approval cannot be flipped to a refusal (or back): the decision is signed.
#[test]
fn flipped_decision_fails() {
    let signed = vector_signed();
    let pins = pins_for("alice", &alice());
    let mut doc = signed.document.clone();
    doc["decision"] = json!("refuse");
    let err = verify_document(&doc, &signed.signature, &pins).expect_err("flipped verdict must fail");
    assert!(matches!(err, SignatureError::Edited { .. }), "{err}");
    // Recomputing payload_hash to match the flipped document does not help: the signature is then forged.
    let mut sig = signed.signature.clone();
    sig["payload_hash"] = json!(decision::payload_hash(&doc));
    let err = verify_document(&doc, &sig, &pins).expect_err("re-hashed flip must fail");
    assert_eq!(err, SignatureError::Forged { role: "pinned", fingerprint: FINGERPRINT.to_owned() });
}

// A valid signature from a key that is not pinned is rejected, naming the key.
#[test]
fn unpinned_key_fails() {
    let signed = vector_signed();
    let err = verify_document(&signed.document, &signed.signature, &PinnedKeys::default()).expect_err("no pins");
    assert!(matches!(&err, SignatureError::Unpinned(m) if m.contains(FINGERPRINT)), "{err}");
    // Pinning some other key does not help either.
    let other = Principal::from_seed("alice", &[8u8; 32]);
    let err = verify_document(&signed.document, &signed.signature, &pins_for("alice", &other)).expect_err("other pin");
    assert!(matches!(err, SignatureError::Unpinned(_)), "{err}");
}

// The key is pinned, but for another principal: alice's key cannot speak for bob nor bob's pin for alice.
#[test]
fn key_pinned_for_another_principal_fails() {
    let signed = vector_signed();
    let pins = pins_for("bob", &alice());
    let err = verify_document(&signed.document, &signed.signature, &pins).expect_err("pinned for bob");
    assert!(
        matches!(&err, SignatureError::PinnedForAnother { pinned_for, signer, .. } if pinned_for == "bob" && signer == "alice"),
        "{err}"
    );

    // bob's pinned key signing a document that claims to be alice's decision.
    let bob = Principal::from_seed("bob", &[9u8; 32]);
    let mut pins = pins_for("alice", &alice());
    pins.pin("bob", bob.verifying_key());
    let doc = decision_document(&vector_input(PACKET_HASH), "alice", &bob.fingerprint());
    let mut sig = decision::sign_document(&bob, &doc);
    let err = verify_document(&doc, &sig, &pins).expect_err("bob signing as alice");
    assert!(
        matches!(&err, SignatureError::NotThePrincipal { signer, principal } if signer == "bob" && principal.as_deref() == Some("alice")),
        "{err}"
    );
    sig["signer"] = json!("alice");
    let err = verify_document(&doc, &sig, &pins).expect_err("bob's key claimed for alice");
    assert!(matches!(&err, SignatureError::PinnedForAnother { pinned_for, .. } if pinned_for == "bob"), "{err}");
}

// A signature made by an attacker's key but labelled with alice's fingerprint is a forgery.
#[test]
fn forged_signature_fails() {
    let signed = vector_signed();
    let pins = pins_for("alice", &alice());
    let mallory = Principal::from_seed("alice", &[13u8; 32]);
    let mut sig = signed.signature.clone();
    sig["signature"] = json!(STANDARD.encode(mallory.sign(PAYLOAD_HASH.as_bytes()).to_bytes()));
    let err = verify_document(&signed.document, &sig, &pins).expect_err("forged");
    assert!(matches!(err, SignatureError::Forged { role: "pinned", .. }), "{err}");
    // Wrong algorithm and malformed signature bytes are rejected with their own messages.
    let mut sig = signed.signature.clone();
    sig["algorithm"] = json!("rsa");
    assert_eq!(verify_document(&signed.document, &sig, &pins), Err(SignatureError::Algorithm(Some("rsa".into()))));
    let mut sig = signed.signature.clone();
    sig["signature"] = json!("not base64!");
    assert!(matches!(verify_document(&signed.document, &sig, &pins), Err(SignatureError::NotBase64(_))));
    let mut sig = signed.signature.clone();
    sig["signature"] = json!(STANDARD.encode([0u8; 32]));
    assert_eq!(verify_document(&signed.document, &sig, &pins), Err(SignatureError::NotSixtyFourBytes));
    // The document's `key` must name the signing key.
    let mut doc = signed.document.clone();
    doc["key"] = json!(mallory.fingerprint());
    let mut sig = signed.signature.clone();
    sig["payload_hash"] = json!(decision::payload_hash(&doc));
    assert_eq!(verify_document(&doc, &sig, &pins), Err(SignatureError::KeyDiffers));
}

// The decision file built from the vector verifies for its packet, and is refused for another packet or changed content.
#[test]
fn decision_file_of_the_vector() {
    let signed = vector_signed();
    let pins = pins_for("alice", &alice());
    let appended = Appended { chain_index: 1, entry_hash: format!("sha256:{}", "ab".repeat(32)), record: Value::Null };
    let file = decision::decision_file(&signed, &appended);
    let ok = decision::verify_decision_file(&file, "p-1", Some(PACKET_HASH), &pins).expect("verifies");
    assert_eq!(ok.verdict, Verdict::Approve);
    assert_eq!(ok.principal, "alice");
    assert_eq!(ok.reason.as_deref(), Some("ok"));
    assert_eq!(ok.decided_at, "2026-11-21T09:00:00Z");
    assert_eq!(ok.entry_hash.as_deref(), Some(appended.entry_hash.as_str()));
    assert!(matches!(
        decision::verify_decision_file(&file, "p-2", Some(PACKET_HASH), &pins),
        Err(DecisionError::WrongPacket { .. })
    ));
    let other_hash = canonical::canonical_hash(&json!({"a": 2}));
    assert!(matches!(
        decision::verify_decision_file(&file, "p-1", Some(&other_hash), &pins),
        Err(DecisionError::PacketChanged { .. })
    ));
    // The unsigned summary cannot contradict the signed document.
    let mut lying = file.clone();
    lying["decision"] = json!("refuse");
    assert!(matches!(
        decision::verify_decision_file(&lying, "p-1", Some(PACKET_HASH), &pins),
        Err(DecisionError::Signature(_))
    ));
}
