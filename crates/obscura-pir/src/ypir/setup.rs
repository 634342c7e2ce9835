//! The YPIR public setup: the variant, its layout and the seed of every public polynomial.
//! There is no hint: that is the point of YPIR.

use obscura_math::expand::{MatrixSeed, SEED_BYTES};
use sha2::{Digest as _, Sha256};

use super::shape::{Shape, Variant, YpirShape, YpirSpShape};
use crate::lwe::RecordFormat;
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// The public setup of a YPIR database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicSetup {
    shape: Shape,
    format: RecordFormat,
    data_bytes: u64,
    seed: MatrixSeed,
    digest: Digest,
}

/// Bytes of an encoded setup's body: three codes, four `u64` and the seed.
const BODY_BYTES: usize = 3 + 4 * 8 + SEED_BYTES;

impl PublicSetup {
    /// Assembles a setup; checks that the data fits the records.
    pub fn new(
        shape: Shape,
        format: RecordFormat,
        data_bytes: u64,
        seed: MatrixSeed,
    ) -> Result<Self, PirError> {
        let (records, record_bytes) = (shape.records(), shape.record_bytes());
        let fits = records
            .checked_sub(1)
            .and_then(|full| full.checked_mul(record_bytes))
            .is_some_and(|before_last| {
                data_bytes > before_last && data_bytes <= before_last + record_bytes
            });
        if !fits {
            return Err(PirError::InvalidParameters(format!(
                "{data_bytes} bytes are not {records} records of {record_bytes} bytes"
            )));
        }
        let mut setup = Self {
            shape,
            format,
            data_bytes,
            seed,
            digest: [0; 32],
        };
        let mut hash = Sha256::new();
        hash.update(b"obscura/ypir/setup/v1");
        hash.update(setup.body());
        setup.digest = hash.finalize().into();
        Ok(setup)
    }

    /// The layout.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The variant.
    pub fn variant(&self) -> Variant {
        self.shape.variant()
    }

    /// How records sit in their slots.
    pub fn format(&self) -> RecordFormat {
        self.format
    }

    /// Bytes of data: the last record may be short.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// The seed of the public polynomials.
    pub fn seed(&self) -> MatrixSeed {
        self.seed
    }

    /// The digest that names this setup.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// Bytes of record `index` (the last one may be short).
    pub(super) fn record_len(&self, index: u64) -> u64 {
        let record_bytes = self.shape.record_bytes();
        (self.data_bytes - index * record_bytes).min(record_bytes)
    }

    /// The encoded fields after the envelope.
    fn body(&self) -> Vec<u8> {
        let (log_p, per) = match &self.shape {
            Shape::YpirSp(s) => (0, s.per_column()),
            Shape::Ypir(s) => (s.log_p(), s.per_row()),
        };
        let variant = match self.shape.variant() {
            Variant::Ypir => 1,
            Variant::YpirSp => 2,
        };
        let mut out = Vec::with_capacity(BODY_BYTES);
        out.extend_from_slice(&[variant, self.format.code(), log_p]);
        for value in [
            self.shape.records(),
            self.shape.record_bytes(),
            self.data_bytes,
            per,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&self.seed.0);
        out
    }

    /// The encoded setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(wire::HEADER_BYTES + BODY_BYTES);
        wire::write_header(&mut out, Kind::YPIR_SETUP, &self.digest);
        out.extend_from_slice(&self.body());
        out
    }

    /// Decodes a setup; the layout is checked as when it was planned and the digest recomputed.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::YPIR_SETUP)?;
        let [variant, format, log_p] = [reader.u8()?, reader.u8()?, reader.u8()?];
        let format = RecordFormat::from_code(format)
            .ok_or_else(|| reader.error(format!("unknown record format {format}")))?;
        let (records, record_bytes, data_bytes, per) =
            (reader.u64()?, reader.u64()?, reader.u64()?, reader.u64()?);
        let shape = match variant {
            1 => YpirShape::new(records, record_bytes, log_p, per).map(Shape::Ypir),
            2 if log_p == 0 => YpirSpShape::new(records, record_bytes, per).map(Shape::YpirSp),
            _ => return Err(reader.error(format!("unknown YPIR variant {variant}"))),
        }
        .map_err(|e| reader.inconsistent(e))?;
        let seed = MatrixSeed(reader.take(SEED_BYTES)?.try_into().expect("seed length"));
        reader.finish()?;
        let setup = Self::new(shape, format, data_bytes, seed)
            .map_err(|e| PirError::inconsistent("YPIR setup", e))?;
        if setup.digest != digest {
            return Err(PirError::malformed(
                "YPIR setup",
                "the parameter digest does not match the contents",
            ));
        }
        Ok(setup)
    }
}
