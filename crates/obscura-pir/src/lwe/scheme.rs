//! The LWE engine as a [`Scheme`]: its public setup, query and answer codecs.

use super::{Answer, Client, PublicSetup, Query, Server};
use crate::scheme::{Encode, Message, Scheme, SetupMessage, Summary};
use crate::wire::{Digest, Kind};
use crate::PirError;

/// The LWE engine (SimplePIR and FrodoPIR): records fetched by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lwe;

/// Records of `record_bytes` bytes laid end to end (the last one may be short; it is
/// zero-padded): what [`Server::build`](crate::PirServer::build) sets up.
#[derive(Clone, Copy, Debug)]
pub struct Records<'a> {
    /// The records' bytes.
    pub bytes: &'a [u8],
    /// Bytes per record.
    pub record_bytes: u64,
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

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.geometry().records(),
            item_bytes: self.geometry().record_bytes(),
            engine: Some(self.layer()),
            sub_queries: None,
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
