//! Proofs of CPU features: values that only detection makes, so that an unsafe call into code
//! compiled for those features rests on holding one (none can exist off x86-64).

/// Proof that this CPU has AVX2: only detection makes one ([`super::Backend::available`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2Token(Proof);

/// Proof that this CPU has AVX-512 F, BW, DQ, VL and VNNI: only detection makes one
/// ([`super::Backend::available`]). Every CPU with AVX-512 VNNI (Cascade Lake, Ice Lake,
/// Zen 4 and later) has the other four.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx512Token(Proof);

#[cfg(target_arch = "x86_64")]
type Proof = ();
#[cfg(not(target_arch = "x86_64"))]
type Proof = std::convert::Infallible;

impl Avx2Token {
    /// The proof, if this CPU has AVX2.
    pub(super) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            return Some(Self(()));
        }
        None
    }
}

impl Avx512Token {
    /// The proof, if this CPU has AVX-512 F, BW, DQ, VL and VNNI.
    pub(super) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
        {
            return Some(Self(()));
        }
        None
    }
}
