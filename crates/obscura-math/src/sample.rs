//! Secret randomness: every secret value is drawn from the operating system's CSPRNG.
//!
//! [`OsSampler`] buffers bytes from `getrandom` (the OS CSPRNG; no user-space generator is keyed
//! in between) and turns them into the distributions the schemes need. All samplers are
//! constant time in the value they produce: the discrete Gaussian compares the random word
//! with every entry of its CDF table, and signs are applied arithmetically.

use zeroize::Zeroize;

/// Failure of the OS random number generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RngError(pub getrandom::Error);

impl std::fmt::Display for RngError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the OS random number generator failed: {}", self.0)
    }
}

impl std::error::Error for RngError {}

/// Fills `bytes` from the OS CSPRNG: the one source of every secret and of every public seed
/// the project draws.
pub fn fill_random(bytes: &mut [u8]) -> Result<(), RngError> {
    #[cfg(feature = "test-secrets")]
    if test_secrets::fill(bytes) {
        return Ok(());
    }
    getrandom::getrandom(bytes).map_err(RngError)
}

/// A fixed byte stream in place of the OS CSPRNG, for the tests that compare two builds of the
/// client byte for byte (the native library and its WebAssembly build, given the same
/// secrets). Compiled only with the `test-secrets` feature, which only those tests enable: it
/// makes every secret public.
#[cfg(feature = "test-secrets")]
pub mod test_secrets {
    use std::sync::{Mutex, MutexGuard};

    use aes::cipher::{KeyIvInit, StreamCipher};

    type Stream = ctr::Ctr128BE<aes::Aes128>;

    static STREAM: Mutex<Option<Stream>> = Mutex::new(None);

    fn stream() -> MutexGuard<'static, Option<Stream>> {
        STREAM
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Until the guard is dropped, every byte this process draws in place of the OS CSPRNG
    /// comes from the AES-128-CTR keystream of `key` (a zero IV, a 128-bit big-endian
    /// counter): AES-128 of the counters 0, 1, 2, ... in turn.
    pub fn install(key: [u8; 16]) -> Installed {
        *stream() = Some(Stream::new(&key.into(), &[0u8; 16].into()));
        Installed(())
    }

    /// The stream in force; dropping it gives the OS CSPRNG back.
    pub struct Installed(());

    impl Drop for Installed {
        fn drop(&mut self) {
            *stream() = None;
        }
    }

    /// Fills `bytes` from the installed stream, if there is one.
    pub(super) fn fill(bytes: &mut [u8]) -> bool {
        match stream().as_mut() {
            Some(stream) => {
                bytes.fill(0);
                stream.apply_keystream(bytes);
                true
            }
            None => false,
        }
    }
}

const BUFFER_BYTES: usize = 4096;

/// A buffered reader of the OS CSPRNG. The buffer is wiped when the sampler is dropped.
pub struct OsSampler {
    buffer: Box<[u8; BUFFER_BYTES]>,
    used: usize,
}

impl OsSampler {
    /// A sampler with an empty buffer.
    pub fn new() -> Self {
        Self {
            buffer: Box::new([0u8; BUFFER_BYTES]),
            used: BUFFER_BYTES,
        }
    }

    /// The next 64 uniformly random bits.
    pub fn next_u64(&mut self) -> Result<u64, RngError> {
        if self.used + 8 > BUFFER_BYTES {
            fill_random(&mut self.buffer[..])?;
            self.used = 0;
        }
        let bytes: [u8; 8] = self.buffer[self.used..self.used + 8]
            .try_into()
            .expect("8-byte slice");
        self.buffer[self.used..self.used + 8].zeroize();
        self.used += 8;
        Ok(u64::from_le_bytes(bytes))
    }

    /// Fills `out` with uniform elements of Z_{2^32}.
    pub fn fill_uniform(&mut self, out: &mut [u32]) -> Result<(), RngError> {
        self.fill_with(out, 4, |bytes, chunk| {
            for (value, word) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
                *value = u32::from_le_bytes(word.try_into().expect("4 bytes"));
            }
        })
    }

    /// Fills `out` with uniform ternary values {-1, 0, 1}, stored as elements of Z_{2^32}.
    ///
    /// A 64-bit word `u` maps to `floor(3u / 2^64) - 1`: constant time, bias below 2^-64.
    pub fn fill_ternary(&mut self, out: &mut [u32]) -> Result<(), RngError> {
        self.fill_with(out, 8, |bytes, chunk| {
            for (value, word) in chunk.iter_mut().zip(bytes.chunks_exact(8)) {
                let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                let digit = ((u128::from(word) * 3) >> 64) as u32;
                *value = digit.wrapping_sub(1);
            }
        })
    }

    /// Fills `out` with samples of `gaussian`, stored as elements of Z_{2^32}.
    pub fn fill_gaussian(
        &mut self,
        gaussian: &DiscreteGaussian,
        out: &mut [u32],
    ) -> Result<(), RngError> {
        self.fill_with(out, 8, |bytes, chunk| gaussian.sample_words(bytes, chunk))
    }

    /// Fills `out` a buffer at a time: `bytes_each` fresh bytes of the OS CSPRNG per value,
    /// turned into the values by `convert(bytes, values)`, then wiped. Whatever happens, none
    /// of the bytes is handed out again.
    fn fill_with(
        &mut self,
        out: &mut [u32],
        bytes_each: usize,
        convert: impl Fn(&[u8], &mut [u32]),
    ) -> Result<(), RngError> {
        self.used = BUFFER_BYTES;
        for chunk in out.chunks_mut(BUFFER_BYTES / bytes_each) {
            let bytes = &mut self.buffer[..bytes_each * chunk.len()];
            fill_random(bytes)?;
            convert(bytes, chunk);
            bytes.zeroize();
        }
        Ok(())
    }
}

impl Default for OsSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for OsSampler {
    fn drop(&mut self) {
        self.buffer.zeroize();
    }
}

/// The discrete Gaussian over Z with standard deviation parameter `sigma`, i.e. probability
/// proportional to `exp(-x² / (2σ²))`, sampled by inversion of a 63-bit fixed-point CDF table.
///
/// The table holds `P(|X| ≤ k)` for `k = 0 .. K` where the tail beyond `K = ceil(10σ)` has mass
/// below 2^-70, far under the table's 2^-63 resolution. The table is computed in `f64`, so each
/// entry is within about 2^-52 of the exact value; the statistical distance to the ideal
/// distribution is below 2^-45 per sample, which LWE error sampling tolerates (the lattice
/// estimator's attacks do not distinguish at that level).
#[derive(Clone, Debug)]
pub struct DiscreteGaussian {
    sigma: f64,
    cdf: Vec<u64>,
}

impl DiscreteGaussian {
    /// The sampler for standard deviation `sigma` (must be finite, between 0.5 and 1000).
    ///
    /// # Panics
    /// On a `sigma` outside that range: parameters come from the crate's own tables.
    pub fn new(sigma: f64) -> Self {
        assert!(
            sigma.is_finite() && (0.5..=1000.0).contains(&sigma),
            "unsupported sigma"
        );
        let tail = (10.0 * sigma).ceil() as i64;
        let weight = |k: i64| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp();
        let total: f64 = weight(0) + 2.0 * (1..=tail).map(weight).sum::<f64>();
        let scale = (1u64 << 63) as f64;
        let mut cumulative = 0.0;
        let cdf = (0..tail)
            .map(|k| {
                cumulative += if k == 0 { weight(0) } else { 2.0 * weight(k) };
                ((cumulative / total) * scale).min(scale - 1.0) as u64
            })
            .collect();
        Self { sigma, cdf }
    }

    /// The standard deviation parameter.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// One sample per 8 little-endian bytes of `words`, into `out` (as long as `words` has
    /// words), each as [`sample`](Self::sample) makes it: [`SAMPLE_LANES`] at a time, every
    /// table entry compared with that many words side by side, so the comparisons vectorize
    /// across samples on the CPU's vector unit.
    pub fn sample_words(&self, words: &[u8], out: &mut [u32]) {
        assert_eq!(words.len(), 8 * out.len(), "8 bytes per sample");
        crate::backend::vectorized!(
            crate::backend::Backend::selected(),
            fn(gaussian: &DiscreteGaussian = self, words: &[u8] = words, out: &mut [u32] = out) {
                gaussian.sample_words_inline(words, out)
            }
        )
    }

    /// [`sample_words`](Self::sample_words) written for the compiler to vectorize (for the
    /// selected backend's vector unit).
    #[inline(always)]
    fn sample_words_inline(&self, words: &[u8], out: &mut [u32]) {
        for (out, words) in out
            .chunks_mut(SAMPLE_LANES)
            .zip(words.chunks(8 * SAMPLE_LANES))
        {
            let mut uniform = [0u64; SAMPLE_LANES];
            let mut negative = [0u32; SAMPLE_LANES];
            for ((u, n), word) in uniform
                .iter_mut()
                .zip(&mut negative)
                .zip(words.chunks_exact(8))
            {
                let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                (*u, *n) = (word >> 1, (word & 1) as u32);
            }
            let mut magnitude = [0u64; SAMPLE_LANES];
            for &threshold in &self.cdf {
                for (m, &u) in magnitude.iter_mut().zip(&uniform) {
                    *m += threshold.wrapping_sub(u).wrapping_sub(1) >> 63;
                }
            }
            for ((value, &m), &n) in out.iter_mut().zip(&magnitude).zip(&negative) {
                *value = ((m as u32) ^ n.wrapping_neg()).wrapping_add(n);
            }
            uniform.zeroize();
            magnitude.zeroize();
        }
    }

    /// Maps 64 uniform bits to one sample (as an element of Z_{2^32}), in constant time.
    pub fn sample(&self, word: u64) -> u32 {
        let uniform = word >> 1;
        let negative = (word & 1) as u32;
        // magnitude = #{k : uniform >= cdf[k]}; both sides are below 2^63 so the sign bit of the
        // difference is the comparison.
        let magnitude = self
            .cdf
            .iter()
            .map(|&threshold| threshold.wrapping_sub(uniform).wrapping_sub(1) >> 63)
            .sum::<u64>() as u32;
        (magnitude ^ negative.wrapping_neg()).wrapping_add(negative)
    }
}

/// Samples a Gaussian sampler compares with each table entry side by side (eight 64-bit lanes
/// make one AVX-512 register).
pub const SAMPLE_LANES: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(value: u32) -> i64 {
        i64::from(value as i32)
    }

    #[test]
    fn batched_samples_are_the_single_ones() {
        // Every table boundary and its neighbours, both signs, and a partial last batch.
        let gaussian = DiscreteGaussian::new(11.0);
        let mut words: Vec<u64> = gaussian
            .cdf
            .iter()
            .flat_map(|&t| [t.wrapping_sub(1), t, t + 1])
            .flat_map(|u| [u << 1, (u << 1) | 1])
            .collect();
        words.extend([0, 1, u64::MAX, u64::MAX - 1, 0x8000_0000_0000_0000]);
        let mut rng = OsSampler::new();
        for _ in 0..1003 {
            words.push(rng.next_u64().unwrap());
        }
        assert_ne!(words.len() % SAMPLE_LANES, 0);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut batched = vec![0u32; words.len()];
        gaussian.sample_words(&bytes, &mut batched);
        let single: Vec<u32> = words.iter().map(|&w| gaussian.sample(w)).collect();
        assert_eq!(batched, single);
    }

    #[test]
    fn gaussian_moments_match_sigma() {
        let gaussian = DiscreteGaussian::new(11.0);
        let mut rng = OsSampler::new();
        let mut out = vec![0u32; 200_000];
        rng.fill_gaussian(&gaussian, &mut out).unwrap();
        let n = out.len() as f64;
        let mean = out.iter().map(|&v| signed(v) as f64).sum::<f64>() / n;
        let var = out
            .iter()
            .map(|&v| (signed(v) as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!(mean.abs() < 0.2, "mean {mean}");
        assert!((var.sqrt() - 11.0).abs() < 0.2, "std {}", var.sqrt());
        assert!(out.iter().all(|&v| signed(v).abs() <= 110));
    }

    #[test]
    fn gaussian_inversion_extremes() {
        let gaussian = DiscreteGaussian::new(6.4);
        assert_eq!(gaussian.sample(0), 0);
        assert_eq!(gaussian.sample(1), 0);
        let top = gaussian.sample(u64::MAX - 1);
        let bottom = gaussian.sample(u64::MAX);
        assert_eq!(signed(top), -signed(bottom));
        assert_eq!(signed(top), gaussian.cdf.len() as i64);
    }

    #[test]
    fn ternary_values_and_balance() {
        let mut rng = OsSampler::new();
        let mut out = vec![0u32; 30_000];
        rng.fill_ternary(&mut out).unwrap();
        let mut counts = [0usize; 3];
        for &v in &out {
            let s = signed(v);
            assert!((-1..=1).contains(&s));
            counts[(s + 1) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn uniform_words_differ() {
        let mut rng = OsSampler::new();
        let mut out = vec![0u32; 1025];
        rng.fill_uniform(&mut out).unwrap();
        let distinct: std::collections::HashSet<_> = out.iter().collect();
        assert!(distinct.len() > 1000);
    }
}
