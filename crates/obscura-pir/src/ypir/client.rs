//! The YPIR client: queries (fresh secrets for every query, packing keys included) and
//! decoding.

use obscura_math::expand::PublicMatrix;
use obscura_math::kernels::dot;
use obscura_math::pack;
use obscura_math::sample::{DiscreteGaussian, OsSampler};
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::bits::{bytes_at, regroup};
use super::messages::{dropped_bits, Answer, Query};
use super::packed::{round, PackedLayer, Secret};
use super::params::{DEGREE, FIRST_SIGMA, PLAINTEXT_BITS, ROUNDED_BITS};
use super::scheme::Ypir;
use super::server::first_matrix;
use super::setup::PublicSetup;
use super::shape::{Shape, YpirShape, YpirSpShape};
use crate::lwe::round_digit;
use crate::wire::Digest;
use crate::{PirClient, PirError};

/// The client side of YPIR.
pub struct Client {
    setup: PublicSetup,
    pub(super) layer: PackedLayer,
    /// YPIR's first-layer matrix, with its transforms kept.
    first: Option<PublicMatrix>,
    gaussian: DiscreteGaussian,
}

/// The client's secret state for one query; decodes exactly one answer. Wiped when dropped.
#[derive(ZeroizeOnDrop)]
pub struct QueryState {
    #[zeroize(skip)]
    digest: Digest,
    #[zeroize(skip)]
    index: u64,
    #[zeroize(skip)]
    pub(super) secret: Secret,
    first_secrets: Vec<Vec<u32>>,
}

impl Zeroize for QueryState {
    fn zeroize(&mut self) {
        self.first_secrets.zeroize();
    }
}

impl Client {
    /// A client for the database described by `setup`.
    pub fn new(setup: PublicSetup) -> Self {
        let columns = match setup.shape() {
            Shape::YpirSp(s) => s.columns(),
            Shape::Ypir(s) => s.rows(),
        };
        let first = match setup.shape() {
            Shape::YpirSp(_) => None,
            Shape::Ypir(s) => {
                let mut a = first_matrix(setup.seed(), s.columns());
                a.precompute();
                Some(a)
            }
        };
        Self {
            layer: PackedLayer::new(setup.seed(), columns as usize),
            first,
            gaussian: DiscreteGaussian::new(FIRST_SIGMA),
            setup,
        }
    }

    /// The public setup this client queries.
    pub fn setup(&self) -> &PublicSetup {
        &self.setup
    }

    /// YPIR's first-layer queries for the record at `first_column` of its row: one per digit,
    /// each `A1·s + e + Δ·u` with its own Gaussian secret, rounded to leave out `dropped` low
    /// bits.
    fn first_queries(
        &self,
        a: &PublicMatrix,
        shape: &YpirShape,
        first_column: u64,
        dropped: u32,
    ) -> Result<(Vec<u32>, Vec<Vec<u32>>), PirError> {
        let digits = shape.digits() as usize;
        let mut rng = OsSampler::new();
        let mut secrets = vec![vec![0u32; a.cols()]; digits];
        for secret in &mut secrets {
            rng.fill_gaussian(&self.gaussian, secret)?;
        }
        let delta = 1u32 << (32 - u32::from(shape.log_p()));
        let mut values = Vec::with_capacity(digits * a.rows());
        let mut noise = vec![0u32; a.rows()];
        for (i, mut masked) in a.mul_secrets(&secrets).into_iter().enumerate() {
            rng.fill_gaussian(&self.gaussian, &mut noise)?;
            for (q, &e) in masked.iter_mut().zip(&noise) {
                *q = q.wrapping_add(e);
            }
            let column = first_column as usize + i;
            masked[column] = masked[column].wrapping_add(delta);
            values.extend(masked.iter().map(|&v| round_word(v, dropped)));
            masked.zeroize();
        }
        noise.zeroize();
        Ok((values, secrets))
    }

    /// YPIR+SP's record: its words, from the packed rows the answer carries.
    fn decode_ypir_sp(&self, shape: &YpirSpShape, state: &QueryState, answer: &Answer) -> Vec<u8> {
        let packing = shape.packing();
        let stride = DEGREE / packing.group;
        let words: Vec<u32> = answer
            .masks
            .chunks_exact(DEGREE)
            .zip(answer.bodies.chunks_exact(DEGREE))
            .flat_map(|(mask, body)| {
                let values = self
                    .layer
                    .decrypt(&state.secret, mask, body, PLAINTEXT_BITS);
                (0..packing.group).map(move |i| values[i * stride])
            })
            .take(shape.rows() as usize)
            .collect();
        let (_, start) = shape.locate(state.index).expect("a located index");
        let len = self.setup.record_len(state.index) as usize;
        bytes_at(&words, PLAINTEXT_BITS, start, len)
    }

    /// YPIR's record: the hint row and the answers from the packed chunks, then each digit.
    fn decode_ypir(
        &self,
        shape: &YpirShape,
        state: &QueryState,
        answer: &Answer,
    ) -> Result<Vec<u8>, PirError> {
        let chunks =
            self.layer
                .decrypt(&state.secret, &answer.masks, &answer.bodies, PLAINTEXT_BITS);
        let hint_chunks = shape.hint_positions().into_iter().map(|c| chunks[c]);
        let lift = |v: u32| v << (32 - ROUNDED_BITS);
        let hint: Vec<u32> = regroup(
            hint_chunks,
            PLAINTEXT_BITS,
            ROUNDED_BITS,
            super::params::FIRST_DIMENSION,
        )
        .into_iter()
        .map(lift)
        .collect();
        let answer_chunks = (0..shape.answer_chunks()).map(|i| chunks[shape.answer_position(i)]);
        let answers = regroup(
            answer_chunks,
            PLAINTEXT_BITS,
            ROUNDED_BITS,
            shape.digits() as usize,
        );
        let digits: Vec<u8> = answers
            .into_iter()
            .zip(&state.first_secrets)
            .map(|(value, secret)| {
                round_digit(lift(value).wrapping_sub(dot(&hint, secret)), shape.log_p())
            })
            .collect();
        let mut record = vec![0u8; self.setup.record_len(state.index) as usize];
        pack::unpack_into(&digits, u32::from(shape.log_p()), 0, &mut record);
        Ok(record)
    }
}

/// A first-layer entry without its `dropped` low bits, rounded as the packed layer's are
/// ([`round`]), modulo 2^(32 − dropped).
fn round_word(v: u32, dropped: u32) -> u32 {
    round(u64::from(v), dropped) as u32 & (u32::MAX >> dropped)
}

impl PirClient for Client {
    type Scheme = Ypir;
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
        let secret = self.layer.secret()?;
        let dropped = dropped_bits(&self.setup);
        let (first, first_secrets, second) = match (self.setup.shape(), &self.first) {
            (Shape::YpirSp(s), _) => {
                let (column, _) = s.locate(index)?;
                let second =
                    self.layer
                        .query(&secret, column as usize, PLAINTEXT_BITS, dropped[1])?;
                (Vec::new(), Vec::new(), second)
            }
            (Shape::Ypir(s), Some(a)) => {
                let (row, first_column) = s.locate(index)?;
                let (first, secrets) = self.first_queries(a, s, first_column, dropped[0])?;
                let second = self
                    .layer
                    .query(&secret, row as usize, PLAINTEXT_BITS, dropped[1])?;
                (first, secrets, second)
            }
            (Shape::Ypir(_), None) => unreachable!("a YPIR client keeps its first matrix"),
        };
        let keys = self.layer.key_bodies(&secret)?;
        let digest = *self.setup.digest();
        let state = QueryState {
            digest,
            index,
            secret,
            first_secrets,
        };
        let query = Query {
            digest,
            first,
            second,
            keys,
            dropped,
        };
        Ok((query, state))
    }

    fn decode(&self, state: QueryState, answer: &Answer) -> Result<Vec<u8>, PirError> {
        if state.digest != *self.setup.digest() {
            return Err(PirError::SetupMismatch {
                what: "query state",
            });
        }
        answer.check(&self.setup)?;
        let slot = match self.setup.shape() {
            Shape::YpirSp(s) => self.decode_ypir_sp(s, &state, answer),
            Shape::Ypir(s) => self.decode_ypir(s, &state, answer)?,
        };
        self.setup.format().value(slot)
    }
}
