//! Proofs of CPU features: values that only detection makes, so that an unsafe call into code
//! compiled for those features rests on holding one (none can exist off x86-64). The one way
//! every SIMD backend of the workspace is picked: the LWE kernels and the NTT
//! ([`crate::kernels::Backend`]) and ECDH-PSI's multi-buffer kernel hold these tokens.

/// Proof that this CPU has AVX2: only [`Avx2Token::detect`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2Token(Proof);

/// Proof that this CPU has AVX-512 F, BW, DQ, VL and VNNI: only [`Avx512Token::detect`] makes
/// one. Every CPU with AVX-512 VNNI (Cascade Lake, Ice Lake,
/// Zen 4 and later) has the other four.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx512Token(Proof);

/// Proof that this CPU has AVX-512 F, DQ and IFMA (52-bit multiply-add): only
/// [`IfmaToken::detect`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IfmaToken(Proof);

#[cfg(target_arch = "x86_64")]
type Proof = ();
#[cfg(not(target_arch = "x86_64"))]
type Proof = std::convert::Infallible;

impl Avx2Token {
    /// The proof, if this CPU has AVX2.
    pub fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            return Some(Self(()));
        }
        None
    }
}

impl Avx512Token {
    /// The proof, if this CPU has AVX-512 F, BW, DQ, VL and VNNI.
    pub fn detect() -> Option<Self> {
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

impl IfmaToken {
    /// The proof, if this CPU has AVX-512 F, DQ and IFMA.
    pub fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512ifma")
        {
            return Some(Self(()));
        }
        None
    }
}
