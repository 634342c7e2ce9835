//! Arithmetic core of Obscura.
//!
//! Everything here works in Z_{2^32} with wrapping arithmetic (the LWE modulus q = 2^32 is the
//! machine word, so reduction is free):
//!
//! - [`matrix`]: dense matrices of `u32` and of plaintext digits;
//! - [`layout`]: the storage order of plaintext digits (column panels of row groups of tiles);
//! - [`memory`]: large zeroed buffers, on huge pages where the system has them;
//! - [`mix`]: MurmurHash3's 64-bit finalizer and vectorized runs of it;
//! - [`expand`]: public matrices expanded from a 16-byte seed with AES-128-CTR, block by block;
//! - [`sample`]: secret vectors (uniform, ternary, discrete Gaussian) drawn from the OS CSPRNG;
//! - [`threads`]: the thread count of parallel work and rayon pools of it;
//! - [`pack`]: dense packing of byte strings into `w`-bit plaintext digits and back;
//! - [`ring`]: ring-LWE arithmetic modulo a product of two NTT primes (transforms,
//!   automorphisms, gadget decomposition, key and modulus switching);
//! - [`kernels`]: the hot loops (matrix-vector and matrix-matrix products), portable reference
//!   first, SIMD versions beside it;
//! - [`backend`]: the one choice of vector unit (AVX2, AVX-512 and their sub-features, or
//!   portable) for every kernel, detected once or forced by `OBSCURA_BACKEND`.
//!
//! Public randomness ([`expand`]) and secret randomness ([`sample`]) never share a generator.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod expand;
pub mod hint;
pub mod hint_delta;
pub mod kernels;
pub mod layout;
pub mod matrix;
pub mod memory;
pub mod mix;
pub mod ntt;
#[cfg(target_arch = "x86_64")]
mod ntt_avx512;
pub mod pack;
pub mod ring;
pub mod sample;
pub mod threads;
