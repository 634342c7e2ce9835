//! Building a database in memory from records, key-value pairs or a Merkle tree's leaves, for
//! the CLI and the language bindings alike: the input's shape and the scheme's [`Builder`] (from
//! the registry) give the build, its footprint, the memory check and the progress steps.

use obscura_pir::batch::merkle::MerkleTree;
use obscura_pir::batch::treepir::TreePirServer;
use obscura_pir::keyword::fuse::Arity;
use obscura_pir::keyword::{KeywordOptions, KeywordServer};
use obscura_pir::lwe::{self, EngineOptions, Footprint, Layout, RecordShape};
use obscura_pir::PirError;
use obscura_registry::builders::default_builder;
use obscura_registry::Builder;

use crate::memory::{self, MemoryError};
use crate::store::Database;

/// What a database is built from.
#[derive(Clone, Copy)]
pub enum Records<'a> {
    /// Records served by index, by the scheme of [`BuildOptions::scheme`].
    Index(lwe::Records<'a>),
    /// Key-value pairs, served by key (keyword PIR).
    Pairs(&'a [(Vec<u8>, Vec<u8>)]),
    /// The leaves of a Merkle tree (RFC 6962), served as audit paths (TreePIR).
    Leaves(&'a [&'a [u8]]),
}

/// The sizes of what a database is built from: all a footprint needs, known before the records
/// are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Records served by index.
    Index(RecordShape),
    /// Key-value pairs.
    Pairs {
        /// Pairs.
        count: u64,
        /// The longest value's bytes.
        longest: u64,
        /// Whether every value has the longest one's length.
        uniform: bool,
        /// Bytes of keys and values in all.
        bytes: u64,
    },
    /// A Merkle tree's leaves.
    Leaves {
        /// Leaves.
        count: u64,
        /// Bytes of leaves in all.
        bytes: u64,
    },
}

/// Bytes of a `Vec` besides its contents: what each value held in memory costs.
const VEC_BYTES: u64 = std::mem::size_of::<Vec<u8>>() as u64;

/// Bytes of a slice's pointer and length: what each leaf held in memory costs.
const SLICE_BYTES: u64 = std::mem::size_of::<&[u8]>() as u64;

/// Bytes a Merkle tree holds per leaf: its hash and about one inner node's.
const TREE_BYTES_PER_LEAF: u64 = 64;

impl<'a> Records<'a> {
    /// Fixed-size records of `record_bytes` bytes laid end to end in `bytes` (the last may be
    /// short: it is zero-padded), served by index.
    pub fn raw(bytes: &'a [u8], record_bytes: u64) -> Self {
        Self::Index(lwe::Records::Raw {
            bytes,
            record_bytes,
        })
    }

    /// Records of any length, one per value, served by index.
    pub fn values(values: &'a [Vec<u8>]) -> Self {
        Self::Index(lwe::Records::Values(values))
    }

    /// The records' sizes.
    pub fn shape(&self) -> Shape {
        match *self {
            Self::Index(records) => Shape::Index(records.shape()),
            Self::Pairs(pairs) => {
                let longest = pairs.iter().map(|(_, v)| v.len() as u64).max().unwrap_or(0);
                Shape::Pairs {
                    count: pairs.len() as u64,
                    longest,
                    uniform: pairs.iter().all(|(_, v)| v.len() as u64 == longest),
                    bytes: pairs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum(),
                }
            }
            Self::Leaves(leaves) => Shape::Leaves {
                count: leaves.len() as u64,
                bytes: leaves.iter().map(|leaf| leaf.len() as u64).sum(),
            },
        }
    }
}

impl Shape {
    /// Whether there is nothing to serve.
    pub fn is_empty(&self) -> bool {
        match *self {
            Self::Index(shape) => shape.is_empty(),
            Self::Pairs { count, .. } | Self::Leaves { count, .. } => count == 0,
        }
    }

    /// Bytes of data served (a tree's: its nodes).
    pub fn data_bytes(&self) -> u64 {
        match *self {
            Self::Index(shape) => shape.bytes(),
            Self::Pairs { bytes, .. } => bytes,
            Self::Leaves { count, .. } => count * TREE_BYTES_PER_LEAF,
        }
    }

    /// Bytes the input takes in memory during a build (each value's `Vec` or leaf's slice
    /// counted).
    pub fn held_bytes(&self) -> u64 {
        match *self {
            Self::Index(RecordShape::Raw { bytes, .. }) => bytes,
            Self::Index(RecordShape::Values { count, bytes, .. }) => bytes + count * VEC_BYTES,
            Self::Pairs { count, bytes, .. } => bytes + 2 * count * VEC_BYTES,
            Self::Leaves { count, bytes } => bytes + count * SLICE_BYTES,
        }
    }
}

/// How a database is built: its scheme and the LWE engine's options (parameters, layout,
/// matrix), and for a keyword database its filter's arity.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions {
    /// The scheme of a database of records (a keyword database runs on the LWE engine).
    pub scheme: &'static dyn Builder,
    /// The LWE engine's options (schemes that fix their own ignore them).
    pub engine: EngineOptions,
    /// Filter slots per key of a keyword database (default: by the number of keys).
    pub arity: Option<Arity>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            scheme: default_builder(),
            engine: EngineOptions::default(),
            arity: None,
        }
    }
}

/// Why a build was refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// There are no records.
    #[error("there are no records to serve")]
    Empty,
    /// An index-only scheme was asked to build a keyword database or a Merkle tree.
    #[error("scheme {scheme} serves records by index; {database} runs on the index scheme")]
    IndexOnly {
        /// The scheme asked for.
        scheme: &'static str,
        /// What the records would make: `a keyword database` or `a Merkle tree`.
        database: &'static str,
    },
    /// Raw records of zero bytes.
    #[error("the record size must be at least 1 byte")]
    ZeroRecordSize,
    /// An arity for records that are not key-value pairs.
    #[error("the arity applies to keyword databases")]
    ArityWithoutKeys,
    /// The build needs more memory than it may use.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The build failed (parameters, sizes).
    #[error(transparent)]
    Pir(#[from] PirError),
}

impl BuildOptions {
    /// Refuses options that do not fit records of `shape`.
    fn check(&self, shape: &Shape) -> Result<(), BuildError> {
        if shape.is_empty() {
            return Err(BuildError::Empty);
        }
        let on_the_engine = match shape {
            Shape::Index(_) => None,
            Shape::Pairs { .. } => Some("a keyword database"),
            Shape::Leaves { .. } => Some("a Merkle tree"),
        };
        if let Some(database) = on_the_engine {
            if self.scheme.name() != default_builder().name() {
                return Err(BuildError::IndexOnly {
                    scheme: self.scheme.name(),
                    database,
                });
            }
        }
        match shape {
            Shape::Index(RecordShape::Raw {
                record_bytes: 0, ..
            }) => Err(BuildError::ZeroRecordSize),
            Shape::Index(_) | Shape::Leaves { .. } if self.arity.is_some() => {
                Err(BuildError::ArityWithoutKeys)
            }
            _ => Ok(()),
        }
    }

    fn keyword(&self) -> KeywordOptions {
        KeywordOptions {
            arity: self.arity,
            params: self.engine.params,
            matrix: self.engine.matrix,
        }
    }

    /// The footprint of a build of records of `shape` with these options, in `layout` (the
    /// layout is ignored where the scheme fixes its own).
    pub fn footprint(&self, shape: &Shape, layout: Layout) -> Result<Footprint, BuildError> {
        self.check(shape)?;
        let options = EngineOptions {
            layout,
            ..self.engine
        };
        Ok(match *shape {
            Shape::Index(records) => self.scheme.footprint(records, options)?,
            Shape::Pairs {
                count,
                longest,
                uniform,
                ..
            } => KeywordServer::footprint(count, longest, uniform, self.keyword())?,
            Shape::Leaves { count, .. } => TreePirServer::footprint(count, options)?,
        })
    }

    /// Checks, before anything is allocated, that a build of records of `shape` fits in memory
    /// (`max_memory`, named `limit_name` in messages, or else what the system has available),
    /// holding `input_bytes` of input besides the database. A refusal names the other layouts that
    /// fit, as `layout_name` spells them. Returns a warning when the setup dwarfs its data.
    pub fn check_memory(
        &self,
        shape: &Shape,
        input_bytes: u64,
        max_memory: Option<u64>,
        limit_name: &'static str,
        layout_name: impl Fn(Layout) -> String,
    ) -> Result<Option<String>, BuildError> {
        let footprint = self.footprint(shape, self.engine.layout)?;
        let takes_layout = match shape {
            Shape::Index(_) => self.scheme.takes_layout(),
            Shape::Pairs { .. } => false,
            Shape::Leaves { .. } => true,
        };
        let alternatives = if takes_layout {
            memory::alternatives(
                self.engine.layout,
                |layout| self.footprint(shape, layout).ok(),
                layout_name,
            )
        } else {
            Vec::new()
        };
        Ok(memory::Plan {
            footprint,
            input_bytes,
            data_bytes: shape.data_bytes(),
            max_memory,
            limit_name,
            alternatives,
        }
        .check()?)
    }

    /// The labels of the build's progress steps for records of `shape`: the progress callback
    /// of [`build`] counts from zero to a new total at each step.
    pub fn steps(&self, shape: &Shape) -> &'static [&'static str] {
        match shape {
            Shape::Index(_) => self.scheme.steps(),
            Shape::Pairs { .. } => &["filling the slots", "computing the hint"],
            Shape::Leaves { .. } => &["encoding the colour classes"],
        }
    }
}

/// Follows a build's progress reports through its steps (see [`BuildOptions::steps`]): each
/// step reports `(done, total)` from zero to its own total, so a report with a new total starts
/// the next step.
pub struct Steps {
    names: Vec<String>,
    state: std::sync::Mutex<(usize, Option<u64>)>,
}

impl Steps {
    /// Steps named `names`, in order; a report past the last step counts in the last.
    pub fn new(names: &[&str]) -> Self {
        Self {
            names: names.iter().map(|name| name.to_string()).collect(),
            state: std::sync::Mutex::new((0, None)),
        }
    }

    /// The name of the first step.
    pub fn first(&self) -> &str {
        self.names.first().map_or("", String::as_str)
    }

    /// The name of the step a report of `total` belongs to, and whether the report starts it.
    pub fn step(&self, total: u64) -> (&str, bool) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let starts = state.1 != Some(total);
        if starts {
            if state.1.is_some() {
                state.0 = (state.0 + 1).min(self.names.len().saturating_sub(1));
            }
            state.1 = Some(total);
        }
        (self.names.get(state.0).map_or("", String::as_str), starts)
    }
}

/// Builds the database of `records` as `options` say, on the current rayon pool, reporting
/// `(done, total)` of each step of [`BuildOptions::steps`] to `progress`.
pub fn build(
    records: Records<'_>,
    options: &BuildOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Database, BuildError> {
    options.check(&records.shape())?;
    Ok(match records {
        Records::Index(records) => options.scheme.build(records, options.engine, progress)?,
        Records::Pairs(pairs) => {
            KeywordServer::from_pairs(pairs, options.keyword(), progress)?.into()
        }
        Records::Leaves(leaves) => {
            let tree = MerkleTree::from_leaves(leaves);
            TreePirServer::from_tree(&tree, options.engine, progress)?.into()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use obscura_pir::keyword::Keyword;
    use obscura_pir::lwe::Lwe;
    use obscura_pir::{PirClient, PirServer, Scheme};

    fn fetch<S: Scheme>(
        database: &Database,
        target: <S::Client as PirClient>::Target<'_>,
    ) -> <S::Client as PirClient>::Output {
        let server = database.server::<S>().expect("the scheme built");
        let mut client = S::Client::new(server.public_setup().clone());
        let (query, state) = client.query(target).unwrap();
        client
            .decode(state, &server.answer(&query).unwrap())
            .unwrap()
    }

    #[test]
    fn every_scheme_builds_from_raw_records_and_values() {
        let data: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
        let values: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; usize::from(i % 9)]).collect();
        for scheme in obscura_registry::builders() {
            assert_eq!(
                obscura_registry::builder(scheme.name()).unwrap().name(),
                scheme.name()
            );
            let options = BuildOptions {
                scheme,
                ..BuildOptions::default()
            };
            let raw = Records::raw(&data, 6);
            let database = build(raw, &options, &|_, _| {}).unwrap();
            assert_eq!(
                database.listing().kind,
                scheme.name().replace("ypir-sp", "ypir")
            );
            for records in [raw, Records::values(&values)] {
                let footprint = options.footprint(&records.shape(), Layout::Square).unwrap();
                assert!(footprint.peak_bytes() > 0);
                assert_eq!(options.steps(&records.shape()).len(), 1);
            }
        }
        let index = build(
            Records::values(&values),
            &BuildOptions::default(),
            &|_, _| {},
        )
        .unwrap();
        assert_eq!(fetch::<Lwe>(&index, 17), values[17]);
    }

    #[test]
    fn a_new_total_starts_the_next_step() {
        let steps = Steps::new(&["fill", "hint"]);
        assert_eq!(steps.step(10), ("fill", true));
        assert_eq!(steps.step(10), ("fill", false));
        assert_eq!(steps.step(7), ("hint", true));
        assert_eq!(steps.step(7), ("hint", false));
        assert_eq!(steps.step(3), ("hint", true), "past the last step");
    }

    #[test]
    fn keyword_databases_build_from_pairs() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..40u8)
            .map(|i| (format!("key {i}").into_bytes(), vec![i; 3]))
            .collect();
        let options = BuildOptions::default();
        let shape = Records::Pairs(&pairs).shape();
        assert_eq!(options.steps(&shape).len(), 2);
        let database = build(Records::Pairs(&pairs), &options, &|_, _| {}).unwrap();
        assert_eq!(fetch::<Keyword>(&database, b"key 9"), Some(vec![9; 3]));
        assert_eq!(fetch::<Keyword>(&database, b"absent"), None);
    }

    #[test]
    fn merkle_trees_build_from_leaves() {
        use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
        use obscura_pir::batch::treepir::{Leaf, TreePir};
        let data: Vec<Vec<u8>> = (0..21u32)
            .map(|i| format!("leaf {i}").into_bytes())
            .collect();
        let leaves: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let options = BuildOptions::default();
        let shape = Records::Leaves(&leaves).shape();
        assert_eq!(options.steps(&shape).len(), 1);
        assert!(
            options
                .footprint(&shape, Layout::Square)
                .unwrap()
                .peak_bytes()
                > 0
        );
        let database = build(Records::Leaves(&leaves), &options, &|_, _| {}).unwrap();
        let tree = MerkleTree::from_leaves(&leaves);
        assert_eq!(database.listing().root, Some(tree.root()));
        let leaf = Leaf {
            index: 13,
            hash: leaf_hash(&data[13]),
        };
        let path = fetch::<TreePir>(&database, leaf);
        assert_eq!(path, tree.audit_path(13).unwrap());
        let keyword_only = BuildOptions {
            arity: Some(Arity::Three),
            ..BuildOptions::default()
        };
        assert!(matches!(
            build(Records::Leaves(&leaves), &keyword_only, &|_, _| {}),
            Err(BuildError::ArityWithoutKeys)
        ));
    }

    #[test]
    fn options_that_do_not_fit_are_refused() {
        let pairs = vec![(b"k".to_vec(), b"v".to_vec())];
        let ypir = BuildOptions {
            scheme: obscura_registry::builder("ypir").unwrap(),
            ..BuildOptions::default()
        };
        let Err(refused) = build(Records::Pairs(&pairs), &ypir, &|_, _| {}) else {
            panic!("a keyword database on YPIR was built");
        };
        assert!(
            matches!(
                refused,
                BuildError::IndexOnly {
                    scheme: "ypir",
                    database: "a keyword database"
                }
            ),
            "{refused}"
        );
        let empty = build(Records::values(&[]), &BuildOptions::default(), &|_, _| {});
        assert!(matches!(empty, Err(BuildError::Empty)));
        let zero = Records::raw(b"abc", 0);
        assert!(matches!(
            build(zero, &BuildOptions::default(), &|_, _| {}),
            Err(BuildError::ZeroRecordSize)
        ));
        let arity = BuildOptions {
            arity: Some(Arity::Three),
            ..BuildOptions::default()
        };
        assert!(matches!(
            build(Records::values(&[vec![1]]), &arity, &|_, _| {}),
            Err(BuildError::ArityWithoutKeys)
        ));
    }

    /// 4,000 records per column over 3 MB would need a hint of 11 GiB; one per column fits.
    #[test]
    fn a_build_larger_than_the_limit_is_refused_with_a_layout_that_fits() {
        let shape = Shape::Index(RecordShape::Raw {
            bytes: 3_000_000,
            record_bytes: 1024,
        });
        let options = BuildOptions {
            engine: EngineOptions {
                layout: Layout::PerColumn(4000),
                ..EngineOptions::default()
            },
            ..BuildOptions::default()
        };
        let name = |layout: Layout| format!("{layout:?}");
        let refused = options
            .check_memory(&shape, 0, Some(1 << 30), "the limit", name)
            .unwrap_err();
        let message = refused.to_string();
        assert!(
            message.contains("but the limit allows 1.0 GiB; OnePerColumn would need"),
            "{message}"
        );
        assert!(options
            .check_memory(&shape, 0, Some(1 << 40), "the limit", name)
            .is_ok());
    }
}
