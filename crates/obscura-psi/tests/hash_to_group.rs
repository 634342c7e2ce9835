//! Known-answer tests of the hash to ristretto255.

use obscura_psi::hash_to_group::{HashToGroup, PSI_DST};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 9380 appendix K.3: expand_message_xmd(SHA-512), 32-byte outputs.
#[test]
fn rfc9380_expand_message_xmd_sha512() {
    let expander = HashToGroup::new(b"QUUX-V01-CS02-with-expander-SHA512-256");
    let vectors: [(&[u8], &str); 3] = [
        (
            b"",
            "6b9a7312411d92f921c6f68ca0b6380730a1a4d982c507211a90964c394179ba",
        ),
        (
            b"abc",
            "0da749f12fbe5483eb066a5f595055679b976e93abe9be6f0f6318bce7aca8dc",
        ),
        (
            b"abcdef0123456789",
            "087e45a86e2939ee8b91100af1583c4938e0f5fc6c9db4b107b83346bc967f58",
        ),
    ];
    for (msg, expected) in vectors {
        assert_eq!(
            hex(&expander.expand_message::<32>(msg)),
            expected,
            "{msg:?}"
        );
    }
}

/// Outputs longer than one SHA-512 block chain the blocks, and every prefix length is consistent
/// with its own (length-bound) derivation: different lengths give unrelated outputs.
#[test]
fn long_outputs_are_length_bound() {
    let expander = HashToGroup::psi();
    let long = expander.expand_message::<200>(b"item");
    let short = expander.expand_message::<64>(b"item");
    assert_ne!(long[..64], short[..]);
    assert_ne!(long[64..128], long[..64]);
}

/// A tag longer than 255 bytes is hashed first (RFC 9380 §5.3.3), so it is still usable.
#[test]
fn oversized_tags_are_hashed() {
    let long_tag = vec![b'x'; 300];
    let a = HashToGroup::new(&long_tag).hash(b"item");
    let b = HashToGroup::new(&long_tag[..299]).hash(b"item");
    assert_ne!(a.compress(), b.compress());
}

/// The PSI tag separates our hash from others, and the hash is deterministic.
#[test]
fn psi_hash_is_deterministic_and_domain_separated() {
    let psi = HashToGroup::psi();
    assert_eq!(psi.hash(b"alice").compress(), psi.hash(b"alice").compress());
    assert_ne!(psi.hash(b"alice").compress(), psi.hash(b"bob").compress());
    let other = HashToGroup::new(&PSI_DST[1..]);
    assert_ne!(
        psi.hash(b"alice").compress(),
        other.hash(b"alice").compress()
    );
}
