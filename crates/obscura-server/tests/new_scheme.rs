//! A scheme defined outside Obscura's crates, registered in one line, is built, stored, served
//! over HTTP and queried end to end like the built-in ones.
//!
//! The scheme is trivial PIR: the query carries nothing but its setup's tag, and the answer is
//! the whole database, so the server learns nothing of the record wanted, at the cost of
//! sending everything.

use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::scheme::{Progress, Summary};
use obscura_pir::wire::{self, Digest, Kind, Reader};
use obscura_pir::{Encode, Message, PirClient, PirError, PirServer, Scheme, SetupMessage};
use obscura_server::catalog::Catalog;
use obscura_server::client::HttpClient;
use obscura_server::registry::{Registry, Stored};
use obscura_server::service::{BackgroundService, ServiceConfig};
use obscura_server::store;
use sha2::{Digest as _, Sha256};

const SETUP_KIND: Kind = match Kind::external(0xE0) {
    Some(kind) => kind,
    None => panic!("an external kind"),
};
const QUERY_KIND: Kind = match Kind::external(0xE1) {
    Some(kind) => kind,
    None => panic!("an external kind"),
};
const ANSWER_KIND: Kind = match Kind::external(0xE2) {
    Some(kind) => kind,
    None => panic!("an external kind"),
};

/// Trivial PIR: the whole database is the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Whole;

impl Scheme for Whole {
    const KIND: Kind = SETUP_KIND;
    const NAME: &'static str = "whole";
    type Setup = WholeSetup;
    type Query = WholeQuery;
    type Answer = WholeAnswer;
    type Server = WholeServer;
    type Client = WholeClient;
}

#[derive(Clone, Debug, PartialEq)]
struct WholeSetup {
    records: u64,
    record_bytes: u64,
    digest: Digest,
}

impl SetupMessage for WholeSetup {
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, SETUP_KIND, &self.digest);
        out.extend_from_slice(&self.records.to_le_bytes());
        out.extend_from_slice(&self.record_bytes.to_le_bytes());
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, SETUP_KIND)?;
        let (records, record_bytes) = (reader.u64()?, reader.u64()?);
        reader.finish()?;
        if records
            .checked_mul(record_bytes)
            .is_none_or(|n| n > 1 << 20)
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

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.records,
            item_bytes: self.record_bytes,
            engine: None,
            sub_queries: None,
        }
    }
}

/// A query: the setup's tag, nothing else.
struct WholeQuery(Digest);

impl Encode for WholeQuery {
    const KIND: Kind = QUERY_KIND;

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_compact_header(&mut out, QUERY_KIND, &self.0);
        out
    }
}

impl Message<WholeSetup> for WholeQuery {
    fn from_bytes(bytes: &[u8], setup: &WholeSetup) -> Result<Self, PirError> {
        let (reader, tag) = Reader::open_compact(bytes, QUERY_KIND)?;
        if tag != wire::tag_of(&setup.digest) {
            return Err(PirError::SetupMismatch { what: "query" });
        }
        reader.finish()?;
        Ok(Self(setup.digest))
    }
}

/// An answer: every record.
struct WholeAnswer {
    digest: Digest,
    records: Vec<u8>,
}

impl Encode for WholeAnswer {
    const KIND: Kind = ANSWER_KIND;

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_compact_header(&mut out, ANSWER_KIND, &self.digest);
        out.extend_from_slice(&self.records);
        out
    }
}

impl Message<WholeSetup> for WholeAnswer {
    fn from_bytes(bytes: &[u8], setup: &WholeSetup) -> Result<Self, PirError> {
        let (mut reader, tag) = Reader::open_compact(bytes, ANSWER_KIND)?;
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

struct WholeServer {
    setup: WholeSetup,
    database: PlaintextMatrix,
}

impl PirServer for WholeServer {
    type Scheme = Whole;
    type Data<'a> = (&'a [u8], u64);
    type Options = ();

    fn build(
        (data, record_bytes): (&[u8], u64),
        (): (),
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        let size = record_bytes as usize;
        let records = data.len() / size;
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

    fn public_setup(&self) -> &WholeSetup {
        &self.setup
    }

    fn answer(&self, query: &WholeQuery) -> Result<WholeAnswer, PirError> {
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

    fn answer_batch(&self, queries: &[WholeQuery]) -> Result<Vec<WholeAnswer>, PirError> {
        queries.iter().map(|query| self.answer(query)).collect()
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        vec![&self.database]
    }

    fn from_parts(setup: WholeSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let database = matrices
            .into_iter()
            .next()
            .ok_or(PirError::InvalidParameters("no matrix".into()))?;
        Ok(Self { setup, database })
    }
}

struct WholeClient {
    setup: WholeSetup,
}

impl PirClient for WholeClient {
    type Scheme = Whole;
    type Target<'a> = u64;
    type State = u64;
    type Output = Vec<u8>;

    fn new(setup: WholeSetup) -> Self {
        Self { setup }
    }

    fn setup(&self) -> &WholeSetup {
        &self.setup
    }

    fn query(&mut self, index: u64) -> Result<(WholeQuery, u64), PirError> {
        if index >= self.setup.records {
            return Err(PirError::IndexOutOfRange {
                index,
                records: self.setup.records,
            });
        }
        Ok((WholeQuery(self.setup.digest), index))
    }

    fn decode(&self, index: u64, answer: &WholeAnswer) -> Result<Vec<u8>, PirError> {
        let size = self.setup.record_bytes as usize;
        Ok(answer.records[index as usize * size..][..size].to_vec())
    }
}

#[test]
fn a_scheme_registered_in_one_line_is_stored_served_and_queried() {
    let data: Vec<u8> = (0..40 * 24u32).map(|i| (i * 7 % 251) as u8).collect();
    let server = WholeServer::build((&data, 24), (), &|_, _| {}).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("whole.obs");
    store::write_database(&path, &server.into()).unwrap();

    // Without the registration, the file is refused with a clear reason.
    let refused = Catalog::open(&[&path]).err().unwrap().to_string();
    assert!(
        refused.contains("which no scheme of this build serves"),
        "{refused}"
    );

    let registry = Registry::default().with(Stored::<Whole>::SCHEME);
    let catalog = Catalog::open_with(&[&path], registry).unwrap();
    let service = BackgroundService::start(
        catalog,
        ServiceConfig::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let http = HttpClient::new(&service.url(), None);
    let info = http.list().unwrap().remove(0);
    assert_eq!(
        (info.kind.as_str(), info.records, info.record_bytes),
        ("whole", 40, 24)
    );
    let setup = http.setup::<Whole>("whole").unwrap();
    let mut client = WholeClient::new(setup.clone());
    for index in [0u64, 17, 39] {
        let (query, state) = client.query(index).unwrap();
        let answer = http.query::<Whole>("whole", &setup, &query).unwrap();
        let record = client.decode(state, &answer).unwrap();
        let start = index as usize * 24;
        assert_eq!(record, &data[start..start + 24], "record {index}");
    }
    let queries: Vec<WholeQuery> = (0..3).map(|_| WholeQuery(setup.digest)).collect();
    let answers = http.batch::<Whole>("whole", &setup, &queries).unwrap();
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|answer| answer.records == data));
}
