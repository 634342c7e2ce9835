//! YPIR as a [`Scheme`]: its public setup, query and answer codecs.

use super::server::matrix_shapes;
use super::{Answer, Client, PublicSetup, Query, Server, Shape};
use crate::scheme::{Encode, Message, Scheme, SetupMessage, Summary};
use crate::wire::{Digest, Kind};
use crate::PirError;

/// YPIR and YPIR+SP: records fetched by index, with no hint to download.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ypir;

impl Scheme for Ypir {
    const KIND: Kind = Kind::YPIR_SETUP;
    const NAME: &'static str = "ypir";
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
        matrix_shapes(self)
    }

    fn describe(&self) -> String {
        let layout = match self.shape() {
            Shape::Ypir(s) => format!(
                "first layer {} x {} of {}-bit digits ({} per record), packed layer 2048 x {}",
                s.rows(),
                s.columns(),
                s.log_p(),
                s.digits(),
                s.rows()
            ),
            Shape::YpirSp(s) => format!(
                "{} x {} words of 15 bits, {} records per column",
                s.rows(),
                s.columns(),
                s.per_column()
            ),
        };
        format!(
            "{} records of {} bytes, {layout}, failure probability 2^{:.0}, no hint",
            self.shape().records(),
            self.shape().record_bytes(),
            self.shape().log_failure()
        )
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.shape().records(),
            item_bytes: self.shape().record_bytes(),
            version: 0,
            engine: None,
            sub_queries: None,
            root: None,
        }
    }
}

impl Encode for Query {
    const KIND: Kind = Kind::YPIR_QUERY;

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
    const KIND: Kind = Kind::YPIR_ANSWER;

    fn to_bytes(&self) -> Vec<u8> {
        Answer::to_bytes(self)
    }
}

impl Message<PublicSetup> for Answer {
    fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        Answer::from_bytes(bytes, setup)
    }
}
