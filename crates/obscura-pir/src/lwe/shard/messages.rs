//! A shard's public setup, queries and answers, and their binary encodings.
//!
//! ```text
//! setup: envelope (magic, version, kind = shard setup, digest)
//!   the plan: its layer (parameters, record format, geometry, worst row norm, seed), the split
//!     (0 rows, 1 columns, one byte), the shard count (u64 LE), each shard's first and end
//!     row or column (u64 LE each)
//!   the shard's index (u64 LE), its version (u64 LE)
//!   its part of the hint: rows x n words (u32 LE), then each row's squared norm (u64 LE)
//! query:  compact envelope (kind = shard query, tag of the shard's setup), one u32 per column
//!   of the shard's block
//! answer: compact envelope (kind = shard answer, tag of the shard's setup), one u32 per row
//!   of the shard's block
//! ```
//!
//! The setup's digest is the SHA-256 of a domain tag and everything after the envelope, so it
//! names the plan, the shard, its version and its part of the hint: a gateway that recorded it
//! when the shards were sealed refuses a shard that holds anything else.

use std::sync::Arc;

use obscura_math::matrix::Matrix;
use sha2::{Digest as _, Sha256};

use super::super::setup::Layer;
use super::{SetupPart, ShardPlan, Split};
use crate::wire::{self, Digest, Kind, Reader, Word as _};
use crate::PirError;

/// The domain tag of a shard setup's digest.
const DOMAIN: &[u8] = b"obscura lwe shard setup";

/// The public setup of one shard: the plan every shard shares, the shard's place in it, its
/// version and its part of the hint and of the rows' norms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardSetup {
    plan: ShardPlan,
    index: usize,
    version: u64,
    /// Shared by the setup's copies.
    part: Arc<SetupPart>,
    digest: Digest,
}

impl ShardSetup {
    /// The setup of shard `index` of `plan`, at `version`, with its `part`.
    pub(super) fn new(plan: ShardPlan, index: usize, version: u64, part: SetupPart) -> Self {
        let mut setup = Self {
            plan,
            index,
            version,
            part: Arc::new(part),
            digest: [0; 32],
        };
        let mut body = Vec::new();
        setup.write_body(&mut body);
        setup.digest = digest_of(&body);
        setup
    }

    /// The plan it belongs to.
    pub fn plan(&self) -> &ShardPlan {
        &self.plan
    }

    /// Its index in the plan.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its version.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Its part of the whole database's setup ([`ShardPlan::setup`] combines them).
    pub fn part(&self) -> &SetupPart {
        &self.part
    }

    /// The digest that names it in queries and answers.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// Rows of its block (of its answers, of its part of the hint).
    pub fn rows(&self) -> u64 {
        self.plan.shape(self.index).0
    }

    /// Columns of its block (of its part of a query).
    pub fn cols(&self) -> u64 {
        self.plan.shape(self.index).1
    }

    /// What its queries and answers are checked against.
    pub fn tag(&self) -> ShardTag {
        ShardTag {
            digest: self.digest,
            rows: self.rows(),
            cols: self.cols(),
        }
    }

    /// The encoded setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::LWE_SHARD_SETUP, &self.digest);
        self.write_body(&mut out);
        out
    }

    /// Appends everything after the envelope to `out` (which the digest is the hash of).
    fn write_body(&self, out: &mut Vec<u8>) {
        let plan = &self.plan;
        let (hint, norms) = (self.part.hint.as_slice(), &self.part.norms);
        out.reserve(
            Layer::ENCODED_BYTES + 17 + 16 * plan.shards() + 4 * hint.len() + 8 * norms.len(),
        );
        plan.layer().write(out);
        out.push(match plan.split() {
            Split::Rows => 0,
            Split::Columns => 1,
        });
        for value in [plan.shards() as u64]
            .into_iter()
            .chain(plan.ranges().iter().flat_map(|r| [r.start, r.end]))
            .chain([self.index as u64, self.version])
        {
            out.extend_from_slice(&value.to_le_bytes());
        }
        wire::extend_parallel(out, &wire::le_bytes(hint));
        for norm in norms {
            out.extend_from_slice(&norm.to_le_bytes());
        }
    }

    /// Decodes a setup: every length is checked before allocating, the plan is checked as
    /// [`ShardPlan::from_parts`] checks it, and the digest is recomputed from the contents.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::LWE_SHARD_SETUP)?;
        if digest_of(reader.rest()) != digest {
            return Err(reader.error("the digest does not match the contents"));
        }
        let layer = Layer::read(&mut reader)?;
        let split = match reader.u8()? {
            0 => Split::Rows,
            1 => Split::Columns,
            code => return Err(reader.error(format!("unknown split {code}"))),
        };
        let shards = reader.u64()?;
        // Each shard's range takes 16 bytes: no more shards than the bytes left allow.
        if shards.saturating_mul(16) > reader.rest().len() as u64 {
            return Err(reader.error(format!("{shards} shards' ranges are not all there")));
        }
        let ranges = (0..shards)
            .map(|_| Ok(reader.u64()?..reader.u64()?))
            .collect::<Result<Vec<_>, PirError>>()?;
        let plan =
            ShardPlan::from_parts(layer, split, ranges).map_err(|e| reader.inconsistent(e))?;
        let index = reader.u64()?;
        if index >= shards {
            return Err(reader.error(format!("shard {index} of {shards}")));
        }
        let index = index as usize;
        let version = reader.u64()?;
        let (rows, n) = (plan.rows_of(index), plan.layer().params().n());
        let expected = rows.checked_mul(n * 4 + 8);
        if expected != Some(reader.rest().len()) {
            return Err(reader.error(format!(
                "{} bytes where a part of {rows} rows takes {}",
                reader.rest().len(),
                expected.map_or("more".into(), |e| e.to_string())
            )));
        }
        let hint = reader.words_raw::<u32>(rows * n)?;
        let norms = reader
            .take(rows * 8)?
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        reader.finish()?;
        let hint = Matrix::from_vec(rows, n, hint).expect("length checked");
        Ok(Self {
            plan,
            index,
            version,
            part: Arc::new(SetupPart { hint, norms }),
            digest,
        })
    }
}

/// The digest of a shard setup with `body` after its envelope.
fn digest_of(body: &[u8]) -> Digest {
    let mut hash = Sha256::new();
    hash.update(DOMAIN);
    hash.update(body);
    hash.finalize().into()
}

/// What a shard's queries and answers are checked against: its setup's digest and its block's
/// shape. A gateway holds these for each shard, not the shards' setups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardTag {
    /// The digest of the shard's setup.
    pub digest: Digest,
    /// Rows of its block: entries of an answer.
    pub rows: u64,
    /// Columns of its block: entries of a query.
    pub cols: u64,
}

impl ShardTag {
    /// The digest its messages carry.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }
}

/// A shard's part of a query: the query's entries of the shard's columns (all of them for a
/// split by rows), tagged with the shard's setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardQuery {
    pub(super) digest: Digest,
    pub(super) values: Vec<u32>,
}

impl ShardQuery {
    /// The query of the shard `tag` names for `part`, its part of a query of the whole
    /// database ([`ShardPlan::query_part`]); refused when `part` is not one entry per column
    /// of the shard's block.
    pub fn new(tag: &ShardTag, part: &[u32]) -> Result<Self, PirError> {
        let query = Self {
            digest: tag.digest,
            values: part.to_vec(),
        };
        query.check(tag)?;
        Ok(query)
    }
}

/// A shard's answer: its block times its part of the query, in full words (one per row of the
/// block), tagged with the shard's setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardAnswer {
    pub(super) digest: Digest,
    pub(super) values: Vec<u32>,
}

vector_message!(
    ShardQuery,
    u32,
    Kind::LWE_SHARD_QUERY,
    ShardTag,
    |t: &ShardTag| t.cols
);
vector_message!(
    ShardAnswer,
    u32,
    Kind::LWE_SHARD_ANSWER,
    ShardTag,
    |t: &ShardTag| t.rows
);
