//! The client side of every index and keyword scheme and of Merkle audit paths behind one type,
//! in plain Rust: a public setup in, queries out as bytes, answers in as bytes. The page's
//! JavaScript carries the bytes to and from `obscura serve`.

use obscura_pir::batch::merkle::Hash;
use obscura_pir::batch::shards::Shards;
use obscura_pir::batch::treepir::{Leaf, TreePir, TreePirClient};
use obscura_pir::double::Double;
use obscura_pir::keyword::Keyword;
use obscura_pir::lwe::Lwe;
use obscura_pir::scheme::{AnswerOf, SetupOf};
use obscura_pir::wire::{Kind, Reader};
use obscura_pir::ypir::Ypir;
use obscura_pir::{Encode, Message, PirClient, PirError, Scheme, SetupMessage};
use sha2::{Digest, Sha256};

/// What an answer decodes to: a record, a key's value (`None`: the key is absent), a leaf's
/// hash, or an audit path (its hashes, leaf to root, one after the other).
pub type Value = Option<Vec<u8>>;

/// Decodes the answer to one query, once.
type Decoder = Box<dyn FnOnce(&[u8]) -> Result<Value, PirError>>;

/// What goes wrong in a lookup.
#[derive(Debug)]
pub enum LookupError {
    /// The library refused a setup, a query or an answer.
    Pir(PirError),
    /// A lookup the database does not serve (the message says which it does).
    Wrong(String),
    /// The answer was already decoded: a query's secret state serves once.
    Spent,
    /// The setup's SHA-256 is not the one expected (the server's ETag, or a pinned hash).
    Hash {
        /// The SHA-256 of the bytes received, in hex.
        found: String,
        /// The SHA-256 expected, in hex.
        expected: String,
    },
}

impl From<PirError> for LookupError {
    fn from(error: PirError) -> Self {
        Self::Pir(error)
    }
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pir(error) => error.fmt(f),
            Self::Wrong(message) => f.write_str(message),
            Self::Spent => f.write_str("this query's answer was already decoded"),
            Self::Hash { found, expected } => write!(
                f,
                "the setup's SHA-256 is {found}, not the expected {expected}: refused"
            ),
        }
    }
}

/// A database's public setup, decoded: the schemes a page can query.
pub enum Setup {
    /// The LWE engine (SimplePIR or FrodoPIR layout).
    Lwe(SetupOf<Lwe>),
    /// DoublePIR.
    Double(SetupOf<Double>),
    /// YPIR or YPIR+SP.
    Ypir(SetupOf<Ypir>),
    /// Keyword PIR.
    Keyword(SetupOf<Keyword>),
    /// A Merkle tree (TreePIR).
    Tree(SetupOf<TreePir>),
}

/// A query made, and the secret state that decodes its answer.
pub struct Pending {
    /// The encoded query, for the database's query route.
    pub query: Vec<u8>,
    /// Bytes the answer has.
    pub answer_bytes: u64,
    decoder: Option<Decoder>,
}

impl Pending {
    /// What `answer` (the bytes the server sent back) carries. Works once.
    pub fn decode(&mut self, answer: &[u8]) -> Result<Value, LookupError> {
        let decoder = self.decoder.take().ok_or(LookupError::Spent)?;
        Ok(decoder(answer)?)
    }
}

/// A query of scheme `S` for `target`, its answer mapped to a [`Value`] by `output`.
fn pending<S: Scheme>(
    setup: &SetupOf<S>,
    target: <S::Client as PirClient>::Target<'_>,
    output: fn(<S::Client as PirClient>::Output) -> Value,
) -> Result<Pending, LookupError>
where
    S::Client: 'static,
    <S::Client as PirClient>::State: 'static,
{
    let mut client = S::Client::new(setup.clone());
    let (query, state) = client.query(target)?;
    Ok(Pending {
        query: query.to_bytes(),
        answer_bytes: setup.answer_bytes(),
        decoder: Some(Box::new(move |bytes| {
            let answer = AnswerOf::<S>::from_bytes(bytes, client.setup())?;
            Ok(output(client.decode(state, &answer)?))
        })),
    })
}

impl Setup {
    /// Decodes a public setup as `obscura serve` sends it, whose SHA-256 must be `sha256`
    /// (hex: the server's `ETag`, with or without its quotes, or a hash pinned out of band). The
    /// setup's own checks cover its lengths and parameters, not every byte of a hint: the hash
    /// does.
    pub fn from_verified(bytes: &[u8], sha256: &str) -> Result<Self, LookupError> {
        let found = hex::encode(Sha256::digest(bytes));
        let expected = sha256.trim().trim_matches('"').to_ascii_lowercase();
        if found != expected {
            return Err(LookupError::Hash { found, expected });
        }
        Self::from_bytes(bytes)
    }

    /// Decodes a public setup as `obscura serve` sends it (its digest and lengths checked);
    /// see [`Setup::from_verified`] for setups from a network.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LookupError> {
        Ok(match Reader::envelope_kind(bytes)? {
            Kind::LWE_PUBLIC_SETUP => Self::Lwe(SetupMessage::from_bytes(bytes)?),
            Kind::DOUBLE_SETUP => Self::Double(SetupMessage::from_bytes(bytes)?),
            Kind::YPIR_SETUP => Self::Ypir(SetupMessage::from_bytes(bytes)?),
            Kind::KEYWORD_SETUP => Self::Keyword(SetupMessage::from_bytes(bytes)?),
            Kind::TREEPIR_SETUP => Self::Tree(SetupMessage::from_bytes(bytes)?),
            kind => {
                return Err(LookupError::Wrong(format!(
                    "the setup is a {}, which this client does not query",
                    kind.describe()
                )))
            }
        })
    }

    /// The lookup the database serves: `index`, `keyword` or `merkle`.
    pub fn lookup(&self) -> &'static str {
        match self {
            Self::Keyword(_) => "keyword",
            Self::Tree(_) => "merkle",
            _ => "index",
        }
    }

    /// Records (index databases), keys (keyword databases) or leaves (Merkle trees).
    pub fn items(&self) -> u64 {
        match self {
            Self::Lwe(s) => s.summary().items,
            Self::Double(s) => s.summary().items,
            Self::Ypir(s) => s.summary().items,
            Self::Keyword(s) => s.summary().items,
            Self::Tree(s) => s.leaves(),
        }
    }

    /// The root of a Merkle tree, which every audit path is verified against.
    pub fn root(&self) -> Option<Hash> {
        match self {
            Self::Tree(setup) => Some(*setup.root()),
            _ => None,
        }
    }

    /// A query for record `index` of an index database.
    pub fn query_index(&self, index: u64) -> Result<Pending, LookupError> {
        match self {
            Self::Lwe(setup) => pending::<Lwe>(setup, index, Some),
            Self::Double(setup) => pending::<Double>(setup, index, Some),
            Self::Ypir(setup) => pending::<Ypir>(setup, index, Some),
            _ => Err(self.wrong_lookup()),
        }
    }

    /// A query for the value under `key` in a keyword database.
    pub fn query_key(&self, key: &[u8]) -> Result<Pending, LookupError> {
        match self {
            Self::Keyword(setup) => pending::<Keyword>(setup, key, |value| value),
            _ => Err(self.wrong_lookup()),
        }
    }

    /// A request for the audit path of leaf `leaf` of a Merkle tree, whose hash is `leaf_hash`:
    /// it decodes to the path, leaf to root, verified against the tree's root.
    pub fn query_audit_path(&self, leaf: u64, leaf_hash: Hash) -> Result<Pending, LookupError> {
        let Self::Tree(setup) = self else {
            return Err(self.wrong_lookup());
        };
        let target = Leaf {
            index: leaf,
            hash: leaf_hash,
        };
        pending::<TreePir>(setup, target, |path| Some(path.concat()))
    }

    /// A request for the hash of leaf `leaf` of a Merkle tree, for a client that knows only its
    /// index: it looks like any audit path request. The hash it decodes to is proved to be the
    /// leaf's when its audit path ([`Setup::query_audit_path`]) verifies with it.
    pub fn query_leaf_hash(&self, leaf: u64) -> Result<Pending, LookupError> {
        let Self::Tree(setup) = self else {
            return Err(self.wrong_lookup());
        };
        let mut client = TreePirClient::new(setup.clone());
        let (queries, state) = client.query_leaf_hash(leaf)?;
        Ok(Pending {
            query: Shards(queries).to_bytes(),
            answer_bytes: setup.answer_bytes(),
            decoder: Some(Box::new(move |bytes| {
                let answers = AnswerOf::<TreePir>::from_bytes(bytes, client.setup())?;
                Ok(Some(client.decode_leaf_hash(state, &answers.0)?.to_vec()))
            })),
        })
    }

    /// The error for a lookup this database does not serve, naming the one it does.
    fn wrong_lookup(&self) -> LookupError {
        LookupError::Wrong(match self.lookup() {
            "keyword" => "a keyword database: fetch values by key".into(),
            "merkle" => "a Merkle tree: fetch audit paths by leaf".into(),
            _ => "an index database: fetch records by index".into(),
        })
    }
}
