//! Checking the group elements a peer sends.

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};

use crate::PeerError;

/// The point encoded by `bytes`, which must be a canonical ristretto255 encoding of a point
/// other than the identity (whose encoding, the only all-zero one, is refused first).
pub(crate) fn decode(bytes: &[u8; 32]) -> Result<RistrettoPoint, PeerError> {
    if bytes == &[0u8; 32] {
        return Err(PeerError::IdentityPoint);
    }
    CompressedRistretto(*bytes)
        .decompress()
        .ok_or(PeerError::InvalidPoint)
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
    use curve25519_dalek::scalar::Scalar;

    use super::*;

    fn hex(digits: &str) -> [u8; 32] {
        std::array::from_fn(|i| u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).unwrap())
    }

    /// RFC 9496 appendix A.1: the encodings of 1 B, ..., 15 B (0 B, the identity, is refused).
    #[test]
    fn rfc9496_multiples_of_the_generator_decode() {
        let multiples = [
            "e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76",
            "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919",
            "94741f5d5d52755ece4f23f044ee27d5d1ea1e2bd196b462166b16152a9d0259",
            "da80862773358b466ffadfe0b3293ab3d9fd53c5ea6c955358f568322daf6a57",
            "e882b131016b52c1d3337080187cf768423efccbb517bb495ab812c4160ff44e",
            "f64746d3c92b13050ed8d80236a7f0007c3b3f962f5ba793d19a601ebb1df403",
            "44f53520926ec81fbd5a387845beb7df85a96a24ece18738bdcfa6a7822a176d",
            "903293d8f2287ebe10e2374dc1a53e0bc887e592699f02d077d5263cdd55601c",
            "02622ace8f7303a31cafc63f8fc48fdc16e1c8c8d234b2f0d6685282a9076031",
            "20706fd788b2720a1ed2a5dad4952b01f413bcf0e7564de8cdc816689e2db95f",
            "bce83f8ba5dd2fa572864c24ba1810f9522bc6004afe95877ac73241cafdab42",
            "e4549ee16b9aa03099ca208c67adafcafa4c3f3e4e5303de6026e3ca8ff84460",
            "aa52e000df2e16f55fb1032fc33bc42742dad6bd5a8fc0be0167436c5948501f",
            "46376b80f409b29dc2b5f6f0c52591990896e5716f41477cd30085ab7f10301e",
            "e0c418f7c8d9c4cdd7395b93ea124f3ad99021bb681dfc3302a9d99a2e53e64e",
        ];
        for (k, encoding) in (1u8..).zip(multiples.map(hex)) {
            let point = decode(&encoding).unwrap();
            assert_eq!(point, Scalar::from(k) * RISTRETTO_BASEPOINT_POINT, "{k} B");
            assert_eq!(point.compress().to_bytes(), encoding);
        }
        assert_eq!(decode(&[0u8; 32]), Err(PeerError::IdentityPoint));
    }

    /// Bad encodings from RFC 9496 appendix A.2 (the non-canonical and negative field elements,
    /// and the first two of its non-square ones) are all refused.
    #[test]
    fn rfc9496_bad_encodings_are_refused() {
        let bad = [
            // Non-canonical field encodings.
            "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            // Negative field elements.
            "0100000000000000000000000000000000000000000000000000000000000000",
            "01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "ed57ffd8c914fb201471d1c3d245ce3c746fcbe63a3679d51b6a516c77d7f060",
            // Non-square x^2.
            "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
            "4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f",
        ];
        for encoding in bad.map(hex) {
            assert_eq!(
                decode(&encoding),
                Err(PeerError::InvalidPoint),
                "{encoding:02x?}"
            );
        }
    }
}
