//! The trait family that every PIR scheme implements.
//!
//! Setup is scheme-specific (each scheme has its own options); after it, every scheme has the
//! same life cycle: the client turns an index into a query and a secret state, the server turns a
//! query into an answer, and the client decodes the answer with its state.

use crate::PirError;

/// The server side of a scheme: answers queries it cannot read.
pub trait PirServer {
    /// A client's query.
    type Query;
    /// The server's answer to one query.
    type Answer;

    /// Answers one query.
    fn answer(&self, query: &Self::Query) -> Result<Self::Answer, PirError>;

    /// Answers several queries in one pass over the database, in order.
    fn answer_batch(&self, queries: &[Self::Query]) -> Result<Vec<Self::Answer>, PirError>;
}

/// The client side of a scheme: builds queries and decodes answers.
pub trait PirClient {
    /// A query to send.
    type Query;
    /// The server's answer.
    type Answer;
    /// The secret state that decodes the answer to one query; use it once.
    type State;

    /// A query for record `index` and the state that decodes its answer.
    fn query(&mut self, index: u64) -> Result<(Self::Query, Self::State), PirError>;

    /// The record that `answer` carries.
    fn decode(&self, state: Self::State, answer: &Self::Answer) -> Result<Vec<u8>, PirError>;
}
