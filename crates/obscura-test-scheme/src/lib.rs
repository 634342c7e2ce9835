//! A trivial PIR scheme for tests, defined outside Obscura's scheme crate: the query carries
//! nothing but its setup's tag and the answer is the whole database, so the server learns
//! nothing of the record wanted, at the cost of sending everything.
//!
//! [`Whole`] is registered in `obscura-registry` by one line behind its `test-scheme` feature,
//! which the test builds of the CLI, the Python wheel and the WebAssembly package turn on: it
//! is then built, stored, served and fetched like the built-in schemes, with no other change.
//! [`Whole`] of another code stays unregistered, for tests of run-time registration.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::lookup;
use obscura_pir::lwe::{Footprint, RecordShape, Records};
use obscura_pir::scheme::{Progress, Summary};
use obscura_pir::wire::{self, Digest, Kind, Reader};
use obscura_pir::{
    Encode, Found, IndexServer, Lookup, Message, PirClient, PirError, PirServer, Scheme,
    SetupMessage, Target,
};
use sha2::{Digest as _, Sha256};

/// The wire kind of the registered test scheme's setups.
pub const KIND: Kind = kind(CODE);

/// The setup kind code of the registered test scheme; its query and answer kinds follow.
pub const CODE: u8 = 0xE0;

/// The registered test scheme.
pub type TestScheme = Whole<CODE>;

/// The most bytes of records a test database holds (every answer carries them all).
pub const MAX_BYTES: u64 = 1 << 20;

/// The external kind `code`.
const fn kind(code: u8) -> Kind {
    match Kind::external(code) {
        Some(kind) => kind,
        None => panic!("an external kind"),
    }
}

/// Trivial PIR: the whole database is the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Whole<const CODE: u8>;

impl<const CODE: u8> Scheme for Whole<CODE> {
    const KIND: Kind = kind(CODE);
    const NAME: &'static str = "whole";
    type Setup = WholeSetup<CODE>;
    type Query = WholeQuery<CODE>;
    type Answer = WholeAnswer<CODE>;
    type Server = WholeServer<CODE>;
    type Client = WholeClient<CODE>;
}

/// The public setup: the database's shape and a digest of its contents.
#[derive(Clone, Debug, PartialEq)]
pub struct WholeSetup<const CODE: u8> {
    records: u64,
    record_bytes: u64,
    digest: Digest,
}

impl<const CODE: u8> SetupMessage for WholeSetup<CODE> {
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, kind(CODE), &self.digest);
        out.extend_from_slice(&self.records.to_le_bytes());
        out.extend_from_slice(&self.record_bytes.to_le_bytes());
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, kind(CODE))?;
        let (records, record_bytes) = (reader.u64()?, reader.u64()?);
        reader.finish()?;
        if records
            .checked_mul(record_bytes)
            .is_none_or(|n| n > MAX_BYTES)
        {
            return Err(PirError::InvalidParameters("too large".into()));
        }
        Ok(Self {
            records,
            record_bytes,
            digest,
        })
    }

    fn digest(&self) -> &Digest {
        &self.digest
    }

    fn query_bytes(&self) -> u64 {
        wire::COMPACT_HEADER_BYTES as u64
    }

    fn answer_bytes(&self) -> u64 {
        wire::COMPACT_HEADER_BYTES as u64 + self.records * self.record_bytes
    }

    fn matrix_shapes(&self) -> Vec<(usize, usize)> {
        vec![(self.records as usize, self.record_bytes as usize)]
    }

    fn describe(&self) -> String {
        format!(
            "{} records of {} bytes, all of them in every answer",
            self.records, self.record_bytes
        )
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.records,
            item_bytes: self.record_bytes,
            version: 0,
            engine: None,
            sub_queries: None,
            root: None,
        }
    }
}

/// A query: the setup's tag, nothing else.
pub struct WholeQuery<const CODE: u8>(Digest);

impl<const CODE: u8> WholeQuery<CODE> {
    /// The query for the database of `setup`.
    pub fn new(setup: &WholeSetup<CODE>) -> Self {
        Self(setup.digest)
    }
}

impl<const CODE: u8> Encode for WholeQuery<CODE> {
    const KIND: Kind = kind(CODE + 1);

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_compact_header(&mut out, kind(CODE + 1), &self.0);
        out
    }
}

impl<const CODE: u8> Message<WholeSetup<CODE>> for WholeQuery<CODE> {
    fn from_bytes(bytes: &[u8], setup: &WholeSetup<CODE>) -> Result<Self, PirError> {
        let (reader, tag) = Reader::open_compact(bytes, kind(CODE + 1))?;
        if tag != wire::tag_of(&setup.digest) {
            return Err(PirError::SetupMismatch { what: "query" });
        }
        reader.finish()?;
        Ok(Self(setup.digest))
    }
}

/// An answer: every record.
pub struct WholeAnswer<const CODE: u8> {
    digest: Digest,
    records: Vec<u8>,
}

impl<const CODE: u8> WholeAnswer<CODE> {
    /// Every record, end to end.
    pub fn records(&self) -> &[u8] {
        &self.records
    }
}

impl<const CODE: u8> Encode for WholeAnswer<CODE> {
    const KIND: Kind = kind(CODE + 2);

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_compact_header(&mut out, kind(CODE + 2), &self.digest);
        out.extend_from_slice(&self.records);
        out
    }
}

impl<const CODE: u8> Message<WholeSetup<CODE>> for WholeAnswer<CODE> {
    fn from_bytes(bytes: &[u8], setup: &WholeSetup<CODE>) -> Result<Self, PirError> {
        let (mut reader, tag) = Reader::open_compact(bytes, kind(CODE + 2))?;
        if tag != wire::tag_of(&setup.digest) {
            return Err(PirError::SetupMismatch { what: "answer" });
        }
        let records = reader
            .take((setup.records * setup.record_bytes) as usize)?
            .to_vec();
        reader.finish()?;
        Ok(Self {
            digest: setup.digest,
            records,
        })
    }
}

/// The server: the records, one per matrix row.
#[derive(Clone)]
pub struct WholeServer<const CODE: u8> {
    setup: WholeSetup<CODE>,
    database: PlaintextMatrix,
}

impl<const CODE: u8> IndexServer for WholeServer<CODE> {
    const STEPS: &'static [&'static str] = &["copying the records"];

    fn footprint_for(shape: RecordShape, (): &()) -> Result<Footprint, PirError> {
        let (bytes, record_bytes) =
            shape.either(|b, r| (b, r), |count, longest| (count * longest, longest));
        let whole = bytes - bytes % record_bytes.max(1);
        Ok(Footprint::of(whole, 0, 0, wire::HEADER_BYTES as u64 + 16))
    }
}

impl<const CODE: u8> PirServer for WholeServer<CODE> {
    type Scheme = Whole<CODE>;
    type Data<'a> = Records<'a>;
    type Options = ();

    fn build(records: Records<'_>, (): (), progress: Progress<'_>) -> Result<Self, PirError> {
        let Records::Raw {
            bytes: data,
            record_bytes,
        } = records
        else {
            return Err(PirError::InvalidParameters(
                "the test scheme is built from fixed-size records".into(),
            ));
        };
        let size = record_bytes as usize;
        let records = data.len().checked_div(size).unwrap_or(0);
        if records == 0 || data.len() > MAX_BYTES as usize {
            return Err(PirError::InvalidParameters(format!(
                "the test scheme serves 1 to {MAX_BYTES} bytes of whole records"
            )));
        }
        let database = PlaintextMatrix::from_fn(records, size, |r, c, digits| {
            digits.copy_from_slice(&data[r * size + c..][..digits.len()]);
        });
        progress(1, 1);
        let digest = Sha256::new()
            .chain_update(b"whole")
            .chain_update(data)
            .finalize()
            .into();
        let setup = WholeSetup {
            records: records as u64,
            record_bytes,
            digest,
        };
        Ok(Self { setup, database })
    }

    fn public_setup(&self) -> &WholeSetup<CODE> {
        &self.setup
    }

    fn answer(&self, query: &WholeQuery<CODE>) -> Result<WholeAnswer<CODE>, PirError> {
        if query.0 != self.setup.digest {
            return Err(PirError::SetupMismatch { what: "query" });
        }
        let (rows, cols) = (self.database.rows(), self.database.cols());
        let records = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .map(|(r, c)| self.database.get(r, c))
            .collect();
        Ok(WholeAnswer {
            digest: self.setup.digest,
            records,
        })
    }

    fn answer_batch(
        &self,
        queries: &[WholeQuery<CODE>],
    ) -> Result<Vec<WholeAnswer<CODE>>, PirError> {
        queries.iter().map(|query| self.answer(query)).collect()
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        vec![&self.database]
    }

    fn from_parts(
        setup: WholeSetup<CODE>,
        matrices: Vec<PlaintextMatrix>,
    ) -> Result<Self, PirError> {
        let database = matrices
            .into_iter()
            .next()
            .ok_or(PirError::InvalidParameters("no matrix".into()))?;
        Ok(Self { setup, database })
    }
}

/// The client: the setup is all it needs.
pub struct WholeClient<const CODE: u8> {
    setup: WholeSetup<CODE>,
}

impl<const CODE: u8> PirClient for WholeClient<CODE> {
    type Scheme = Whole<CODE>;
    type Target<'a> = u64;
    type State = u64;
    type Output = Vec<u8>;
    const LOOKUP: Lookup = Lookup::Index;
    type Pending = u64;

    fn new(setup: WholeSetup<CODE>) -> Self {
        Self { setup }
    }

    fn setup(&self) -> &WholeSetup<CODE> {
        &self.setup
    }

    fn query(&mut self, index: u64) -> Result<(WholeQuery<CODE>, u64), PirError> {
        if index >= self.setup.records {
            return Err(PirError::IndexOutOfRange {
                index,
                records: self.setup.records,
            });
        }
        Ok((WholeQuery(self.setup.digest), index))
    }

    fn decode(&self, index: u64, answer: &WholeAnswer<CODE>) -> Result<Vec<u8>, PirError> {
        let size = self.setup.record_bytes as usize;
        Ok(answer.records[index as usize * size..][..size].to_vec())
    }

    fn lookup(&mut self, target: Target<'_>) -> Result<(Vec<u8>, u64), PirError> {
        match target {
            Target::Index(index) => lookup::encoded_query(self, index),
            other => Err(lookup::wrong_lookup(Self::LOOKUP, &other)),
        }
    }

    fn found(&self, index: u64, answer: &[u8]) -> Result<Found, PirError> {
        lookup::decoded_answer(self, index, answer).map(Found::Record)
    }
}
