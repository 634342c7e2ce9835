//! The client: queries (fresh or from a pool of prepared ones) and decoding.

use obscura_math::expand::PublicMatrix;
use obscura_math::kernels::dot;
use obscura_math::matrix::Matrix;
use obscura_math::pack;
use obscura_math::sample::{DiscreteGaussian, OsSampler};
use rayon::prelude::*;
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::messages::{Answer, Query};
use super::scheme::Lwe;
use super::setup::{Layer, PublicSetup};
use crate::params::{Distribution, ParamSet, ANSWER_BITS};
use crate::wire::Digest;
use crate::{PirClient, PirError};

/// The client side of the LWE engine.
pub struct Client {
    setup: PublicSetup,
    masker: Masker,
    pool: Vec<PreparedQuery>,
}

/// What masks a query of one LWE layer: the public matrix `A` (with its transforms kept when it
/// is negacyclic) and the samplers of the secret and the error.
pub(crate) struct Masker {
    a: PublicMatrix,
    /// `A` expanded, when it is small enough that multiplying its rows beats transforming.
    rows: Option<Matrix>,
    set: ParamSet,
    gaussian: Option<DiscreteGaussian>,
}

impl Masker {
    /// The masker of `layer`. It keeps `A`'s rows when they fit
    /// [`MAX_EXPANDED_BYTES`](obscura_math::expand::MAX_EXPANDED_BYTES); otherwise, with a
    /// negacyclic matrix, the forward transforms of `A` (12 bytes per column, up to 64 MiB),
    /// which halves the work of masking each query.
    pub(crate) fn new(layer: &Layer) -> Self {
        let mut a = layer.matrix_a();
        let rows = a
            .expanded()
            .and_then(|words| Matrix::from_vec(a.rows(), a.cols(), words));
        if rows.is_none() {
            a.precompute();
        }
        let set = layer.params().set;
        let gaussian = match set.error() {
            Distribution::Gaussian(sigma) => Some(DiscreteGaussian::new(sigma)),
            _ => None,
        };
        Self {
            a,
            rows,
            set,
            gaussian,
        }
    }

    /// A fresh secret from the OS CSPRNG.
    pub(crate) fn secret(&self) -> Result<Vec<u32>, PirError> {
        let mut secret = vec![0u32; self.set.n()];
        let mut rng = OsSampler::new();
        match self.set.secret() {
            Distribution::UniformModQ => rng.fill_uniform(&mut secret)?,
            Distribution::Ternary => rng.fill_ternary(&mut secret)?,
            Distribution::Gaussian(_) => unreachable!("no parameter set has a Gaussian secret"),
        }
        Ok(secret)
    }

    /// `A·s + e` for each secret: `A`'s kept rows multiplied, or `A` streamed block by block,
    /// or multiplied by NTTs when it is negacyclic.
    pub(crate) fn masked(&self, secrets: &[Vec<u32>]) -> Result<Vec<Vec<u32>>, PirError> {
        /// Error entries sampled per parallel task.
        const ERROR_CHUNK: usize = 1 << 16;
        let mut queries = match &self.rows {
            Some(rows) => secrets.iter().map(|s| rows.mul_vec(s)).collect(),
            None => self.a.mul_secrets(secrets),
        };
        let error = self.set.error();
        for query in &mut queries {
            query.par_chunks_mut(ERROR_CHUNK).try_for_each(|chunk| {
                let mut rng = OsSampler::new();
                let mut noise = vec![0u32; chunk.len()];
                match (error, &self.gaussian) {
                    (Distribution::Gaussian(_), Some(gaussian)) => {
                        rng.fill_gaussian(gaussian, &mut noise)?
                    }
                    (Distribution::Ternary, _) => rng.fill_ternary(&mut noise)?,
                    _ => unreachable!("error distributions are Gaussian or ternary"),
                }
                for (q, &e) in chunk.iter_mut().zip(&noise) {
                    *q = q.wrapping_add(e);
                }
                noise.zeroize();
                Ok::<(), PirError>(())
            })?;
        }
        Ok(queries)
    }
}

/// The `log_p`-bit digit that `Δ·digit + noise` rounds to (Δ = 2^(32 − log_p)).
pub(crate) fn round_digit(noisy: u32, log_p: u8) -> u8 {
    let shift = 32 - u32::from(log_p);
    (noisy.wrapping_add(1 << (shift - 1)) >> shift) as u8
}

/// `A·s + e` and `H·s` for one secret `s`, computed ahead of time; the secret itself is not
/// kept. Wiped when dropped.
#[derive(Zeroize, ZeroizeOnDrop)]
struct PreparedQuery {
    masked: Vec<u32>,
    hint_mask: Vec<u32>,
}

/// The client's secret state for one query; decodes exactly one answer. Wiped when dropped.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct QueryState {
    #[zeroize(skip)]
    digest: Digest,
    index: Option<u64>,
    mask: Mask,
}

/// How the client removes `H·s` from the answer.
#[derive(Zeroize)]
enum Mask {
    /// The secret itself: `H[r]·s` is computed for the rows of the record only.
    Secret(Vec<u32>),
    /// `H·s` for every row, precomputed.
    Rows(Vec<u32>),
}

impl Client {
    /// A client for the database described by `setup`. With a negacyclic matrix it keeps the
    /// forward transforms of `A` (12 bytes per column, up to 64 MiB), which halves the work of
    /// preparing each query.
    pub fn new(setup: PublicSetup) -> Self {
        Self {
            masker: Masker::new(setup.layer()),
            setup,
            pool: Vec::new(),
        }
    }

    /// The public setup this client queries.
    pub fn setup(&self) -> &PublicSetup {
        &self.setup
    }

    /// Prepares `count` more queries for the pool, in one pass over `A` and one over the hint.
    /// Each later call to [`PirClient::query`] takes one from the pool, so its online cost is
    /// one addition.
    pub fn preprocess(&mut self, count: usize) -> Result<(), PirError> {
        let secrets = (0..count)
            .map(|_| self.masker.secret())
            .collect::<Result<Vec<_>, _>>()?;
        let masked = self.masker.masked(&secrets)?;
        // H·s for every secret in one pass over the hint.
        let refs: Vec<&[u32]> = secrets.iter().map(|s| &s[..]).collect();
        let hint_masks = self.setup.hint().mul_vecs(&refs);
        for ((mut secret, masked), hint_mask) in secrets.into_iter().zip(masked).zip(hint_masks) {
            secret.zeroize();
            self.pool.push(PreparedQuery { masked, hint_mask });
        }
        Ok(())
    }

    /// How many prepared queries are left in the pool.
    pub fn prepared(&self) -> usize {
        self.pool.len()
    }
}

impl Client {
    /// A query with Δ at each of `columns` (a keyword lookup sums the 3 or 4 filter slots of
    /// its key); decode its answer with [`Client::decode_digits`].
    pub fn query_columns(&mut self, columns: &[u64]) -> Result<(Query, QueryState), PirError> {
        let cols = self.setup.geometry().cols();
        if let Some(&column) = columns.iter().find(|&&c| c >= cols) {
            return Err(PirError::IndexOutOfRange {
                index: column,
                records: cols,
            });
        }
        self.query_at(columns, None)
    }

    /// The digits (mod p) of every row carried by the answer to a [`Client::query_columns`]
    /// query: row `r` is the sum of the queried columns' entries in row `r`.
    pub fn decode_digits(&self, state: QueryState, answer: &Answer) -> Result<Vec<u8>, PirError> {
        self.check(&state, answer)?;
        Ok(self.digits(&state, answer, 0..self.setup.geometry().rows() as usize))
    }

    /// A query with Δ added at `columns`, from the pool when it has a prepared one.
    fn query_at(
        &mut self,
        columns: &[u64],
        index: Option<u64>,
    ) -> Result<(Query, QueryState), PirError> {
        let (mut values, mask) = match self.pool.pop() {
            Some(mut prepared) => (
                std::mem::take(&mut prepared.masked),
                Mask::Rows(std::mem::take(&mut prepared.hint_mask)),
            ),
            None => {
                let secret = self.masker.secret()?;
                let masked = self
                    .masker
                    .masked(std::slice::from_ref(&secret))?
                    .pop()
                    .expect("one query");
                (masked, Mask::Secret(secret))
            }
        };
        let delta = self.setup.params().delta();
        for &column in columns {
            values[column as usize] = values[column as usize].wrapping_add(delta);
        }
        let digest = *self.setup.digest();
        Ok((
            Query { digest, values },
            QueryState {
                digest,
                index,
                mask,
            },
        ))
    }

    /// Checks that a state and an answer belong to this client's setup.
    fn check(&self, state: &QueryState, answer: &Answer) -> Result<(), PirError> {
        if state.digest != *self.setup.digest() {
            return Err(PirError::SetupMismatch {
                what: "query state",
            });
        }
        answer.check(&self.setup)
    }

    /// The rounded digits of `rows` of an answer, `H·s` removed.
    fn digits(&self, state: &QueryState, answer: &Answer, rows: std::ops::Range<usize>) -> Vec<u8> {
        let log_p = self.setup.params().log_p;
        rows.map(|r| {
            let mask = match &state.mask {
                Mask::Secret(secret) => dot(self.setup.hint().row(r), secret),
                Mask::Rows(rows) => rows[r],
            };
            let received = u32::from(answer.values[r]) << (32 - ANSWER_BITS);
            round_digit(received.wrapping_sub(mask), log_p)
        })
        .collect()
    }
}

impl PirClient for Client {
    type Scheme = Lwe;
    type Target<'a> = u64;
    type State = QueryState;
    type Output = Vec<u8>;
    crate::lookup::index_lookup!(QueryState);

    fn new(setup: PublicSetup) -> Self {
        Client::new(setup)
    }

    fn setup(&self) -> &PublicSetup {
        Client::setup(self)
    }

    fn query(&mut self, index: u64) -> Result<(Query, QueryState), PirError> {
        let location = self.setup.geometry().locate(index)?;
        self.query_at(&[location.column], Some(index))
    }

    fn decode(&self, state: QueryState, answer: &Answer) -> Result<Vec<u8>, PirError> {
        self.check(&state, answer)?;
        let index = state.index.ok_or_else(|| {
            PirError::malformed("query state", "it is for columns: use decode_digits")
        })?;
        let location = self.setup.geometry().locate(index)?;
        let first = location.first_row as usize;
        let digits = self.digits(&state, answer, first..first + location.row_count as usize);
        let mut record = vec![0u8; location.len as usize];
        pack::unpack_into(
            &digits,
            u32::from(self.setup.params().log_p),
            location.skip_bits,
            &mut record,
        );
        self.setup.format().value(record)
    }
}
