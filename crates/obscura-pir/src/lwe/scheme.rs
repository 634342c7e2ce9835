//! The LWE engine as a [`Scheme`]: its public setup, query and answer codecs.

use super::{Answer, Client, PublicSetup, Query, Server};
use crate::scheme::{Encode, Message, Scheme, SetupMessage, Summary};
use crate::wire::{Digest, Kind};
use crate::PirError;

/// The LWE engine (SimplePIR and FrodoPIR): records fetched by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lwe;

/// The records of an index database, as [`PirServer::build`](crate::PirServer::build) of every
/// index scheme takes them.
#[derive(Clone, Copy, Debug)]
pub enum Records<'a> {
    /// Records of `record_bytes` bytes laid end to end (the last one may be short; it is
    /// zero-padded).
    Raw {
        /// The records' bytes.
        bytes: &'a [u8],
        /// Bytes per record.
        record_bytes: u64,
    },
    /// Records of any length, one per value; clients get each back exactly.
    Values(&'a [Vec<u8>]),
}

/// The sizes of an index database's records: all a footprint needs, known before the records
/// are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordShape {
    /// Fixed-size records.
    Raw {
        /// Bytes of records.
        bytes: u64,
        /// Bytes per record.
        record_bytes: u64,
    },
    /// Records of any length.
    Values {
        /// Records.
        count: u64,
        /// The longest record's bytes.
        longest: u64,
        /// Bytes of records in all.
        bytes: u64,
    },
}

impl RecordShape {
    /// Bytes of records.
    pub fn bytes(self) -> u64 {
        match self {
            Self::Raw { bytes, .. } | Self::Values { bytes, .. } => bytes,
        }
    }

    /// Whether there are no records.
    pub fn is_empty(self) -> bool {
        match self {
            Self::Raw { bytes, .. } => bytes == 0,
            Self::Values { count, .. } => count == 0,
        }
    }

    /// `raw(bytes, record_bytes)` for fixed-size records, `values(count, longest)` for records
    /// of any length.
    pub fn either<T>(
        self,
        raw: impl FnOnce(u64, u64) -> T,
        values: impl FnOnce(u64, u64) -> T,
    ) -> T {
        match self {
            Self::Raw {
                bytes,
                record_bytes,
            } => raw(bytes, record_bytes),
            Self::Values { count, longest, .. } => values(count, longest),
        }
    }
}

impl<'a> Records<'a> {
    /// `raw(bytes, record_bytes)` for fixed-size records, `values(values)` for records of any
    /// length: how each index scheme's build takes them.
    pub fn either<T>(
        self,
        raw: impl FnOnce(&'a [u8], u64) -> T,
        values: impl FnOnce(&'a [Vec<u8>]) -> T,
    ) -> T {
        match self {
            Self::Raw {
                bytes,
                record_bytes,
            } => raw(bytes, record_bytes),
            Self::Values(list) => values(list),
        }
    }

    /// The records' sizes.
    pub fn shape(&self) -> RecordShape {
        match *self {
            Self::Raw {
                bytes,
                record_bytes,
            } => RecordShape::Raw {
                bytes: bytes.len() as u64,
                record_bytes,
            },
            Self::Values(values) => RecordShape::Values {
                count: values.len() as u64,
                longest: values.iter().map(|v| v.len() as u64).max().unwrap_or(0),
                bytes: values.iter().map(|v| v.len() as u64).sum(),
            },
        }
    }
}

impl Scheme for Lwe {
    const KIND: Kind = Kind::LWE_PUBLIC_SETUP;
    const NAME: &'static str = "index";
    type Setup = PublicSetup;
    type Query = Query;
    type Answer = Answer;
    type Server = Server;
    type Client = Client;
}

impl SetupMessage for PublicSetup {
    fn to_bytes(&self) -> Vec<u8> {
        PublicSetup::to_bytes(self)
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        PublicSetup::from_bytes(bytes)
    }

    fn digest(&self) -> &Digest {
        PublicSetup::digest(self)
    }

    fn patched(self, patch: &[u8]) -> Result<Self, PirError> {
        PublicSetup::patched(self, patch)
    }

    fn patch_encoded(setup: Vec<u8>, patch: &[u8]) -> Result<Vec<u8>, PirError> {
        super::patch::patch_encoded(setup, patch)
    }

    fn query_bytes(&self) -> u64 {
        Query::encoded_len(self)
    }

    fn answer_bytes(&self) -> u64 {
        Answer::encoded_len(self)
    }

    fn matrix_shapes(&self) -> Vec<(usize, usize)> {
        let geometry = self.geometry();
        vec![(geometry.rows() as usize, geometry.cols() as usize)]
    }

    fn describe(&self) -> String {
        let g = self.geometry();
        let engine = super::describe(g, self.params());
        format!(
            "{} records of {} bytes, {engine}",
            g.records(),
            g.record_bytes()
        )
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.geometry().records(),
            item_bytes: self.geometry().record_bytes(),
            version: self.version(),
            engine: Some(self.layer()),
            sub_queries: None,
            root: None,
        }
    }
}

impl Encode for Query {
    const KIND: Kind = Kind::LWE_QUERY;

    fn to_bytes(&self) -> Vec<u8> {
        Query::to_bytes(self)
    }
}

impl Message<PublicSetup> for Query {
    fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        Query::from_bytes(bytes, setup)
    }
}

impl Encode for Answer {
    const KIND: Kind = Kind::LWE_ANSWER;

    fn to_bytes(&self) -> Vec<u8> {
        Answer::to_bytes(self)
    }
}

impl Message<PublicSetup> for Answer {
    fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        Answer::from_bytes(bytes, setup)
    }
}
