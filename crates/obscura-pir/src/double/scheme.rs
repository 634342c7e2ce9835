//! DoublePIR as a [`Scheme`]: its public setup, query and answer codecs.

use super::{Answer, Client, PublicSetup, Query, Server};
use crate::scheme::{Encode, Message, Scheme, SetupMessage, Summary};
use crate::wire::{Digest, Kind};
use crate::PirError;

/// Rows a record may span before a DoublePIR setup notes that its answers grow with it.
const SMALL_ROWS: u64 = 8;

/// DoublePIR: records fetched by index, with a hint whose size does not depend on the
/// database's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Double;

impl Scheme for Double {
    const KIND: Kind = Kind::DOUBLE_SETUP;
    const NAME: &'static str = "double";
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

    fn query_bytes(&self) -> u64 {
        Query::encoded_len(self)
    }

    fn answer_bytes(&self) -> u64 {
        Answer::encoded_len(self)
    }

    fn matrix_shapes(&self) -> Vec<(usize, usize)> {
        let (first, second) = (self.first().geometry(), self.second().geometry());
        vec![
            (first.rows() as usize, first.cols() as usize),
            (second.rows() as usize, second.cols() as usize),
        ]
    }

    fn describe(&self) -> String {
        let (first, second) = (self.first().geometry(), self.second().geometry());
        format!(
            "{} records of {} bytes, {}; second layer {} x {}",
            first.records(),
            first.record_bytes(),
            crate::lwe::describe(first, self.first().params()),
            second.rows(),
            second.cols()
        )
    }

    fn note(&self) -> Option<String> {
        let rows = self.rows_per_query();
        (rows > SMALL_ROWS).then(|| {
            format!(
                "a record spans up to {rows} rows, and a DoublePIR query asks for each: its answer is {} bytes; an index database (--scheme index) answers records this large with less",
                self.answer_bytes()
            )
        })
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.first().geometry().records(),
            item_bytes: self.first().geometry().record_bytes(),
            version: self.second().version(),
            engine: Some(self.first()),
            sub_queries: None,
            root: None,
        }
    }
}

impl Encode for Query {
    const KIND: Kind = Kind::DOUBLE_QUERY;

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
    const KIND: Kind = Kind::DOUBLE_ANSWER;

    fn to_bytes(&self) -> Vec<u8> {
        Answer::to_bytes(self)
    }
}

impl Message<PublicSetup> for Answer {
    fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        Answer::from_bytes(bytes, setup)
    }
}
