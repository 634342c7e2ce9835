//! Sharded databases on disk: the manifest a [`ShardPlan`] is written to, the shards (each an
//! ordinary database file of one [`Shard`]) and the seal that checks and combines them.
//!
//! A sharded database is planned once ([`Manifest::write`] of a new plan), every shard is then
//! built from the plan on its own, anywhere, and the shards are sealed ([`seal`]): each shard
//! file is loaded and verified, every shard must be there once, of the manifest's plan and of
//! one version, and their parts combine into the whole database's public setup, written beside
//! the manifest (`M.setup`). The manifest then records the setup's SHA-256 and each shard's
//! setup SHA-256 and matrix checksum, so whoever serves the database (a gateway) refuses
//! shards that are not these, instead of answering with them.
//!
//! The manifest is JSON, for people and deployment tools to read:
//!
//! ```text
//! {"format": "obscura shard manifest 1", "scheme": "index", "params": "ypir-1024",
//!  "matrix": "negacyclic", "records": "raw", "record_count": …, "capacity": …,
//!  "record_bytes": …, "data_bytes": …, "per_column": …, "log_p": 8, "rows": …, "cols": …,
//!  "seed": "<hex>", "split": "rows", "ranges": [[0, 8192], …],
//!  "sealed": null | {"setup": "M.setup", "setup_sha256": "<hex>",
//!                    "shards": [{"digest": "<hex>", "setup_sha256": "<hex>",
//!                                "matrix_sha256": "<hex>"}, …]}}
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use obscura_math::expand::{MatrixSeed, SEED_BYTES};
use obscura_pir::lwe::{
    Geometry, Layer, LweShard, RecordFormat, Shard, ShardPlan, ShardSetup, ShardTag, Split,
};
use obscura_pir::params::{worst_row_norm, MatrixKind, ParamSet};
use obscura_pir::PirError;
use obscura_registry::setup_sha256;
use serde::{Deserialize, Serialize};

use crate::checksum::MatrixHasher;
use crate::partial::Partial;
use crate::store::{read_database, StoreError};

/// The `format` a manifest names.
pub const FORMAT: &str = "obscura shard manifest 1";

/// What went wrong with a sharded database's files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardsError {
    /// A file could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A shard file could not be loaded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The manifest is not a valid manifest.
    #[error("{}: not a valid shard manifest: {reason}", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The shard files do not make the database the manifest plans.
    #[error("{0}")]
    Shards(String),
    /// The shards' parts do not combine.
    #[error(transparent)]
    Pir(#[from] PirError),
}

/// A sharded database's manifest: its plan and, once sealed, what the shards and the combined
/// setup must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    plan: ShardPlan,
    sealed: Option<Sealed>,
}

/// What a seal recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    /// The file of the combined public setup, beside the manifest.
    pub setup: String,
    /// The combined setup's SHA-256 (its ETag), hex.
    pub setup_sha256: String,
    /// Each shard's, in order.
    pub shards: Vec<SealedShard>,
}

/// What a seal recorded of one shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedShard {
    /// Its setup's digest (what its queries and answers carry), hex.
    pub digest: String,
    /// Its setup's SHA-256 (the ETag its server gives it), hex.
    pub setup_sha256: String,
    /// Its matrix's checksum (SHA-256 over the SHA-256s of its 64 MiB chunks), hex.
    pub matrix_sha256: String,
}

/// The manifest as JSON.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: String,
    scheme: String,
    params: String,
    matrix: String,
    records: String,
    record_count: u64,
    capacity: u64,
    record_bytes: u64,
    data_bytes: u64,
    per_column: u64,
    log_p: u8,
    rows: u64,
    cols: u64,
    seed: String,
    split: String,
    ranges: Vec<[u64; 2]>,
    sealed: Option<Sealed>,
}

impl Manifest {
    /// The manifest of `plan`, not sealed.
    pub fn new(plan: ShardPlan) -> Self {
        Self { plan, sealed: None }
    }

    /// The plan.
    pub fn plan(&self) -> &ShardPlan {
        &self.plan
    }

    /// What the seal recorded, once sealed.
    pub fn sealed(&self) -> Option<&Sealed> {
        self.sealed.as_ref()
    }

    /// What shard `index`'s queries and answers are checked against, once sealed.
    pub fn shard_tag(&self, index: usize) -> Option<ShardTag> {
        let sealed = self.sealed.as_ref()?.shards.get(index)?;
        let digest = hex::decode(&sealed.digest).ok()?.try_into().ok()?;
        let (rows, cols) = self.plan.shape(index);
        Some(ShardTag { digest, rows, cols })
    }

    /// The file of the combined setup a seal writes beside the manifest at `path`.
    pub fn setup_path(path: &Path) -> PathBuf {
        crate::companion(path, ".setup")
    }

    /// Writes the manifest to `path`, atomically.
    pub fn write(&self, path: &Path) -> Result<(), ShardsError> {
        let layer = self.plan.layer();
        let g = layer.geometry();
        let stored = Stored {
            format: FORMAT.into(),
            scheme: "index".into(),
            params: layer.params().set.name().into(),
            matrix: layer.params().matrix.name().into(),
            records: match layer.format() {
                RecordFormat::Raw => "raw",
                RecordFormat::LengthPrefixed => "values",
            }
            .into(),
            record_count: g.records(),
            capacity: g.capacity(),
            record_bytes: g.record_bytes(),
            data_bytes: g.data_bytes(),
            per_column: g.per_column(),
            log_p: g.log_p(),
            rows: g.rows(),
            cols: g.cols(),
            seed: hex::encode(layer.seed().0),
            split: self.plan.split().name().into(),
            ranges: self
                .plan
                .ranges()
                .iter()
                .map(|r| [r.start, r.end])
                .collect(),
            sealed: self.sealed.clone(),
        };
        let mut json = serde_json::to_vec_pretty(&stored).expect("a manifest serializes");
        json.push(b'\n');
        write_atomically(path, &json)
    }

    /// Reads and checks the manifest at `path`.
    pub fn read(path: &Path) -> Result<Self, ShardsError> {
        let invalid = |reason: String| ShardsError::Manifest {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|source| ShardsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let stored: Stored = serde_json::from_slice(&bytes).map_err(|e| invalid(format!("{e}")))?;
        if stored.format != FORMAT {
            return Err(invalid(format!(
                "its format is {:?}, where this build reads {FORMAT:?}",
                stored.format
            )));
        }
        if stored.scheme != "index" {
            return Err(invalid(format!(
                "scheme {:?}: index databases are sharded",
                stored.scheme
            )));
        }
        let set: ParamSet = stored.params.parse().map_err(|e| invalid(format!("{e}")))?;
        let matrix: MatrixKind = stored.matrix.parse().map_err(|e| invalid(format!("{e}")))?;
        let format = match stored.records.as_str() {
            "raw" => RecordFormat::Raw,
            "values" => RecordFormat::LengthPrefixed,
            other => return Err(invalid(format!("records {other:?}: raw or values"))),
        };
        let split: Split = stored.split.parse().map_err(|e| invalid(format!("{e}")))?;
        let seed: [u8; SEED_BYTES] = hex::decode(&stored.seed)
            .ok()
            .and_then(|seed| seed.try_into().ok())
            .ok_or_else(|| invalid(format!("the seed is not {SEED_BYTES} bytes in hex")))?;
        let geometry = Geometry::new(
            stored.record_count,
            stored.record_bytes,
            stored.data_bytes,
            stored.per_column,
            stored.log_p,
        )
        .and_then(|g| g.with_capacity(stored.capacity))
        .map_err(|e| invalid(format!("{e}")))?;
        if (geometry.rows(), geometry.cols()) != (stored.rows, stored.cols) {
            return Err(invalid(format!(
                "its records make a {} x {} matrix, not {} x {}",
                geometry.rows(),
                geometry.cols(),
                stored.rows,
                stored.cols
            )));
        }
        let worst = worst_row_norm(geometry.cols(), geometry.log_p());
        let plan = Layer::new(set, matrix, format, geometry, worst, MatrixSeed(seed))
            .and_then(|layer| {
                let ranges = stored
                    .ranges
                    .iter()
                    .map(|&[start, end]| start..end)
                    .collect();
                ShardPlan::from_parts(layer, split, ranges)
            })
            .map_err(|e| invalid(format!("{e}")))?;
        if let Some(sealed) = &stored.sealed {
            let hex32 = |text: &str| hex::decode(text).is_ok_and(|bytes| bytes.len() == 32);
            let digests = sealed
                .shards
                .iter()
                .flat_map(|s| [&s.digest, &s.setup_sha256]);
            if !digests.chain([&sealed.setup_sha256]).all(|d| hex32(d)) {
                return Err(invalid(
                    "its seal holds a digest that is not 32 bytes in hex".into(),
                ));
            }
            if sealed.shards.len() != plan.shards() {
                return Err(invalid(format!(
                    "its seal records {} shards of {}",
                    sealed.shards.len(),
                    plan.shards()
                )));
            }
        }
        Ok(Self {
            plan,
            sealed: stored.sealed,
        })
    }
}

/// What [`seal`] made.
#[derive(Clone, Debug)]
pub struct SealReport {
    /// The combined setup's file.
    pub setup_path: PathBuf,
    /// Its size in bytes.
    pub setup_bytes: u64,
    /// Its SHA-256.
    pub setup_sha256: [u8; 32],
    /// The shards' version.
    pub version: u64,
}

/// Seals the sharded database of the manifest at `manifest`, whose shards are the database
/// files `shards` (in any order): each is loaded and verified, every shard of the plan must be
/// there once and all of one version, and their parts combine into the whole database's
/// public setup, written to [`Manifest::setup_path`]; the manifest then records it and every
/// shard's setup SHA-256 and matrix checksum. Nothing is written unless all of that holds.
pub fn seal(manifest: &Path, shards: &[PathBuf]) -> Result<SealReport, ShardsError> {
    let mut sealed = Manifest::read(manifest)?;
    let plan = sealed.plan.clone();
    let mut held: Vec<Option<(ShardSetup, SealedShard, PathBuf)>> = vec![None; plan.shards()];
    for path in shards {
        let database = read_database(path)?;
        let shard = database.server::<LweShard>().ok_or_else(|| {
            ShardsError::Shards(format!(
                "{} is not a shard: it holds {}",
                path.display(),
                database.listing().description
            ))
        })?;
        let setup = shard.setup();
        if setup.plan() != &plan {
            return Err(ShardsError::Shards(format!(
                "{} is a shard of another plan than {}",
                path.display(),
                manifest.display()
            )));
        }
        let record = SealedShard {
            digest: hex::encode(setup.digest()),
            setup_sha256: hex::encode(setup_sha256(&database.setup_bytes())),
            matrix_sha256: hex::encode(MatrixHasher::digest(shard.database().as_bytes())),
        };
        let slot = &mut held[setup.index()];
        if let Some((_, _, first)) = slot {
            return Err(ShardsError::Shards(format!(
                "{} and {} are both shard {}",
                first.display(),
                path.display(),
                setup.index()
            )));
        }
        *slot = Some((setup.clone(), record, path.clone()));
    }
    let held: Vec<(ShardSetup, SealedShard, PathBuf)> = held
        .into_iter()
        .enumerate()
        .map(|(index, shard)| {
            shard.ok_or_else(|| {
                ShardsError::Shards(format!(
                    "shard {index} of {} is missing (build it with --shard {index}/{})",
                    plan.shards(),
                    plan.shards()
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let version = held[0].0.version();
    if let Some((setup, _, path)) = held.iter().find(|(s, _, _)| s.version() != version) {
        return Err(ShardsError::Shards(format!(
            "{} holds version {} where shard 0 holds version {version}: seal one version",
            path.display(),
            setup.version()
        )));
    }
    let parts: Vec<_> = held.iter().map(|(setup, _, _)| setup.part()).collect();
    let setup = plan.setup(&parts)?.to_bytes();
    let setup_path = Manifest::setup_path(manifest);
    write_atomically(&setup_path, &setup)?;
    let sha256 = setup_sha256(&setup);
    sealed.sealed = Some(Sealed {
        setup: setup_path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .into_owned(),
        setup_sha256: hex::encode(sha256),
        shards: held.into_iter().map(|(_, record, _)| record).collect(),
    });
    sealed.write(manifest)?;
    Ok(SealReport {
        setup_path,
        setup_bytes: setup.len() as u64,
        setup_sha256: sha256,
        version,
    })
}

/// Builds shard `index` of `manifest`'s plan from `input` (the bytes the plan names for it,
/// [`ShardPlan::input`]) and writes it to `out`, atomically.
pub fn build_shard(
    manifest: &Manifest,
    index: usize,
    input: &[u8],
    out: &Path,
) -> Result<crate::store::WrittenSetup, ShardsError> {
    let shard: Shard = manifest.plan.build(index, input)?;
    Ok(crate::store::write_database(out, &shard.into())?)
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, flushed, renamed.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ShardsError> {
    let io = |source| ShardsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let temp = Partial::beside(path).map_err(io)?;
    temp.file().write_all(bytes).map_err(io)?;
    temp.persist(path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use obscura_pir::lwe::{Client, EngineOptions, Layout};
    use obscura_pir::PirClient;

    fn plan(split: Split, shards: usize) -> ShardPlan {
        let options = EngineOptions {
            layout: Layout::PerColumn(4),
            matrix: Some(MatrixKind::Uniform),
            ..EngineOptions::default()
        };
        let seed = MatrixSeed::random().unwrap();
        ShardPlan::new(1200, 6, RecordFormat::Raw, options, split, shards, seed).unwrap()
    }

    /// Writes the shards of `manifest` (at `path`) built from `data` beside it; their paths.
    fn build_all(manifest: &Manifest, data: &[u8], dir: &Path) -> Vec<PathBuf> {
        (0..manifest.plan().shards())
            .map(|i| {
                let input = manifest.plan().input(i);
                let out = dir.join(format!("db.{i}.obs"));
                build_shard(
                    manifest,
                    i,
                    &data[input.start as usize..input.end as usize],
                    &out,
                )
                .unwrap();
                out
            })
            .collect()
    }

    /// A manifest reads back as written; sealed shards give the whole database's setup, which
    /// retrieves the records through the shards' answers.
    #[test]
    fn a_sealed_database_retrieves_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.shards.json");
        let data: Vec<u8> = (0..1200u32).map(|i| (i * 29 + 3) as u8).collect();
        for split in [Split::Rows, Split::Columns] {
            let manifest = Manifest::new(plan(split, 3));
            manifest.write(&path).unwrap();
            assert_eq!(Manifest::read(&path).unwrap(), manifest);
            let mut files = build_all(&manifest, &data, dir.path());
            files.reverse();
            let report = seal(&path, &files).unwrap();
            let sealed = Manifest::read(&path).unwrap();
            assert_eq!(sealed.plan(), manifest.plan());
            let record = sealed.sealed().unwrap();
            assert_eq!(record.setup_sha256, hex::encode(report.setup_sha256));
            let setup = std::fs::read(&report.setup_path).unwrap();
            assert_eq!(setup_sha256(&setup), report.setup_sha256);
            let setup = obscura_pir::lwe::PublicSetup::from_bytes(&setup).unwrap();
            let shards: Vec<Shard> = files
                .iter()
                .rev()
                .map(|f| {
                    read_database(f)
                        .unwrap()
                        .server::<LweShard>()
                        .unwrap()
                        .clone()
                })
                .collect();
            for shard in &shards {
                assert_eq!(sealed.shard_tag(shard.index()), Some(shard.setup().tag()));
            }
            let mut client = Client::new(setup.clone());
            for index in [0u64, 77, 199] {
                let (query, state) = client.query(index).unwrap();
                let answers: Vec<Vec<u32>> = shards
                    .iter()
                    .map(|s| {
                        let part = sealed.plan().query_part(s.index(), query.values()).unwrap();
                        s.answer_parts(&[part]).unwrap().remove(0)
                    })
                    .collect();
                let answer = sealed.plan().answer(&setup, &answers).unwrap();
                let start = index as usize * 6;
                assert_eq!(
                    client.decode(state, &answer).unwrap(),
                    &data[start..start + 6]
                );
            }
        }
    }

    /// A seal refuses shards missing, given twice, of another plan, or not shards, and writes
    /// nothing then.
    #[test]
    fn a_seal_refuses_shards_that_do_not_make_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.shards.json");
        let data = vec![5u8; 1200];
        let manifest = Manifest::new(plan(Split::Rows, 2));
        manifest.write(&path).unwrap();
        let files = build_all(&manifest, &data, dir.path());
        let refused = |files: &[PathBuf], needle: &str| {
            let error = seal(&path, files).unwrap_err().to_string();
            assert!(error.contains(needle), "{error}");
            assert!(Manifest::read(&path).unwrap().sealed().is_none());
            assert!(!Manifest::setup_path(&path).exists());
        };
        refused(&files[..1], "shard 1 of 2 is missing");
        refused(&[files[0].clone(), files[0].clone()], "are both shard 0");
        let other_dir = dir.path().join("other");
        std::fs::create_dir(&other_dir).unwrap();
        let other = Manifest::new(plan(Split::Rows, 2));
        let strangers = build_all(&other, &data, &other_dir);
        refused(&[files[0].clone(), strangers[1].clone()], "another plan");
        let plain = dir.path().join("plain.obs");
        let server =
            obscura_pir::lwe::Server::from_records(&data, 6, EngineOptions::default(), &|_, _| {})
                .unwrap();
        crate::store::write_database(&plain, &server.into()).unwrap();
        refused(&[files[0].clone(), plain], "is not a shard");
    }
}
