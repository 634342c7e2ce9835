//! New versions of a keyword database: the delta table of the keys changed since the last
//! compaction, and the compaction that folds it into the main table.
//!
//! A batch of upserts and deletes leaves the main table as it is: the delta table is built again
//! from the keys it held and the batch's, each row's value flagged present (then the value) or
//! deleted, and every lookup queries both tables, the delta's row deciding when it holds the
//! key. So a version costs work and bytes in proportion to the keys changed since the last
//! compaction, and every lookup has the same shape whatever its key's history. Once the delta
//! holds more than a sixteenth of the main table's keys (and more than [`COMPACT_FLOOR`]), the
//! batch compacts instead: every row read back and a new main table built of the keys present,
//! with no delta, which costs about two full builds.

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

use super::fuse::Arity;
use super::index::KeywordIndex;
use super::row::{key_digest, DIGEST_BYTES};
use super::server::{build_table, repeated_digest, Seeds, Server, Stored};
use super::setup::{Setup, Table};
use super::KeywordOptions;
use crate::{Change, PirError};

/// The flag of a delta row whose key holds the value after it.
const PRESENT: u8 = 1;
/// The flag of a delta row whose key was deleted.
const DELETED: u8 = 0;

/// Delta keys past which a batch compacts even when they are under a sixteenth of the main
/// table's: a delta this small costs a lookup next to nothing.
const COMPACT_FLOOR: u64 = 64;

/// Whether a delta of `delta` keys beside a main table of `main` keys is folded into it.
fn compacts(delta: u64, main: u64) -> bool {
    delta > (main / 16).max(COMPACT_FLOOR)
}

/// The value a delta row stands for: `Some` for a key present, `None` for one deleted (or a
/// row of no known flag).
pub(super) fn present(row: &[u8]) -> Option<Vec<u8>> {
    match row.split_first() {
        Some((&PRESENT, value)) => Some(value.to_vec()),
        _ => None,
    }
}

/// A delta row's value: the flag, then the value of a key present.
fn flagged(value: Option<&[u8]>) -> Vec<u8> {
    match value {
        Some(value) => [&[PRESENT], value].concat(),
        None => vec![DELETED],
    }
}

/// The options a table of the database is built again with: the main table's parameters and
/// public matrix kind, and `arity` (`None` picks it by key count).
fn options<I: KeywordIndex>(main: &Table<I>, arity: Option<Arity>) -> KeywordOptions {
    let params = I::engine(&main.index).params();
    KeywordOptions {
        arity,
        params: params.set,
        matrix: Some(params.matrix),
    }
}

/// One key of a batch: its digest, the key (for messages) and its new value, `None` to delete.
struct Changed<'a> {
    digest: [u8; DIGEST_BYTES],
    key: &'a [u8],
    value: Option<&'a [u8]>,
}

/// The keys of a batch, checked: upserts and deletes by key only, each key once.
fn changed_keys(changes: &[Change]) -> Result<Vec<Changed<'_>>, PirError> {
    let changed = changes
        .iter()
        .map(|change| match change {
            Change::Upsert { key, value } => Ok(Changed {
                digest: key_digest(key),
                key,
                value: Some(value),
            }),
            Change::Remove { key } => Ok(Changed {
                digest: key_digest(key),
                key,
                value: None,
            }),
            other => Err(PirError::InvalidParameters(format!(
                "a keyword database takes upserts and deletes by key, not a {} by index",
                other.op()
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let digests: Vec<_> = changed.iter().map(|c| c.digest).collect();
    if let Some(repeated) = repeated_digest(&digests) {
        return Err(PirError::InvalidParameters(format!(
            "the key {:?} is changed twice in one batch",
            String::from_utf8_lossy(changed[repeated].key)
        )));
    }
    Ok(changed)
}

/// What a table held that its rows no longer give back: the file was not made by a build.
fn unreadable(what: &str) -> PirError {
    PirError::malformed(
        "keyword database",
        format!("a key of the {what} table does not decode"),
    )
}

/// The keys of a table and their values, `None` for a key deleted.
type Entries = BTreeMap<[u8; DIGEST_BYTES], Option<Vec<u8>>>;

impl<I: KeywordIndex> Server<I> {
    /// The delta's keys and their values.
    fn delta_entries(&self) -> Result<Entries, PirError> {
        let (Some(stored), Some(table)) = (&self.delta, &self.setup.delta) else {
            return Ok(BTreeMap::new());
        };
        let digests = stored.digests();
        let rows = stored.values(table, &digests);
        digests
            .into_iter()
            .zip(rows)
            .map(|(digest, row)| {
                let row = row.ok_or_else(|| unreadable("delta"))?;
                Ok((digest, present(&row)))
            })
            .collect()
    }

    /// A main table of every key present: the main table's keys (`main`, its digests) not in
    /// `delta`, and those `delta` holds a value for.
    fn compacted(
        &self,
        main: &[[u8; DIGEST_BYTES]],
        delta: Entries,
        seeds: Seeds,
    ) -> Result<(Table<I>, Stored<I>), PirError> {
        let mut digests: Vec<_> = main
            .iter()
            .filter(|digest| !delta.contains_key(*digest))
            .copied()
            .collect();
        let mut values = self
            .main
            .values(&self.setup.main, &digests)
            .into_iter()
            .map(|value| value.ok_or_else(|| unreadable("main")))
            .collect::<Result<Vec<_>, _>>()?;
        for (digest, value) in delta {
            if let Some(value) = value {
                digests.push(digest);
                values.push(value);
            }
        }
        let table = &self.setup.main;
        build_table(
            &digests,
            &values,
            options(table, Some(table.arity())),
            seeds,
            &|_, _| {},
        )
    }
}

/// The seed of the tables a version builds: SHA-256 of a domain, the setup it follows and the
/// batch, so that the same batch applied to the same version (as loading a database file
/// replays its change log) builds the same tables, and no one can know a table's seeds before
/// its batch is fixed.
fn version_seeds(base: &[u8; 32], changes: &[Change]) -> Seeds {
    let mut hash = Sha256::new();
    hash.update(b"obscura/keyword/version/v1");
    hash.update(base);
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    for change in changes {
        match change {
            Change::Upsert { key, value } => {
                field(b"upsert");
                field(key);
                field(value);
            }
            Change::Remove { key } => {
                field(b"remove");
                field(key);
            }
            // Refused before any table is built.
            _ => field(change.op().as_bytes()),
        }
    }
    Seeds::From(hash.finalize().into())
}

/// Applies `changes` to `server` as its next version: the delta table built again with them,
/// or every table compacted into a new main table, its seeds from [`version_seeds`].
/// Everything is built before anything of the server changes. Returns the patch to the new
/// setup when the main table stays.
pub(super) fn update<I: KeywordIndex>(
    server: &mut Server<I>,
    changes: &[Change],
) -> Result<Option<Vec<u8>>, PirError> {
    let changed = changed_keys(changes)?;
    let mut delta = server.delta_entries()?;
    let main = server.main.digests();
    let in_main = |digest: &[u8; DIGEST_BYTES]| main.binary_search(digest).is_ok();
    let mut keys = server.setup.keys();
    for Changed { digest, key, value } in changed {
        let held = match delta.get(&digest) {
            Some(value) => value.is_some(),
            None => in_main(&digest),
        };
        match value {
            Some(value) => {
                keys += u64::from(!held);
                delta.insert(digest, Some(value.to_vec()));
            }
            None if !held => {
                return Err(PirError::InvalidParameters(format!(
                    "the key {:?} is not in the database",
                    String::from_utf8_lossy(key)
                )))
            }
            None => {
                keys -= 1;
                // A key the main table never held needs no deletion row.
                if in_main(&digest) {
                    delta.insert(digest, None);
                } else {
                    delta.remove(&digest);
                }
            }
        }
    }
    // A filter holds at least one key: an empty database is a new build.
    if keys == 0 {
        return Err(PirError::InvalidParameters(
            "the changes would leave the database without keys".into(),
        ));
    }
    let version = server.setup.version() + 1;
    let seeds = version_seeds(server.setup.digest(), changes);
    if compacts(delta.len() as u64, server.setup.main.keys()) {
        let (table, main) = server.compacted(&main, delta, seeds)?;
        server.main = main;
        server.delta = None;
        server.setup = Setup::new(table, None, keys, version);
        return Ok(None);
    }
    let delta = if delta.is_empty() {
        None
    } else {
        let (digests, values): (Vec<_>, Vec<_>) = delta
            .iter()
            .map(|(digest, value)| (*digest, flagged(value.as_deref())))
            .unzip();
        let options = options(&server.setup.main, None);
        Some(build_table(&digests, &values, options, seeds, &|_, _| {})?)
    };
    let (table, stored) = delta.unzip();
    let base = *server.setup.digest();
    server.delta = stored;
    server.setup = Setup::new(server.setup.main.clone(), table, keys, version);
    Ok(Some(super::patch::encode(&base, &server.setup)))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use crate::batch::shards::Shards;
    use crate::keyword::{KeywordClient, KeywordServer, KeywordSetup};
    use crate::lwe::Query;
    use crate::{Encode, Message, PirClient, PirServer};

    type Pairs = BTreeMap<Vec<u8>, Vec<u8>>;

    fn server_of(pairs: &Pairs) -> KeywordServer {
        let pairs: Vec<_> = pairs.clone().into_iter().collect();
        KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap()
    }

    /// What a fresh client of the server's setup (through its bytes) reads under `key`.
    fn lookup(server: &KeywordServer, key: &[u8]) -> Option<Vec<u8>> {
        let setup = KeywordSetup::from_bytes(&server.public_setup().to_bytes()).unwrap();
        let mut client = KeywordClient::new(setup);
        let (query, state) = client.query(key).unwrap();
        let query = Shards::<Query>::from_bytes(&query.to_bytes(), server.public_setup()).unwrap();
        client
            .decode(state, &server.answer(&query).unwrap())
            .unwrap()
    }

    /// Every key ever seen, and a few never stored, read as `pairs` says.
    fn assert_reads(server: &KeywordServer, pairs: &Pairs, seen: &BTreeSet<Vec<u8>>) {
        let absent = (0..3).map(|i| format!("never {i}").into_bytes());
        for key in seen.iter().cloned().chain(absent) {
            assert_eq!(lookup(server, &key), pairs.get(&key).cloned(), "{key:?}");
        }
        assert_eq!(server.public_setup().keys(), pairs.len() as u64);
    }

    /// A random batch of upserts of present and new keys and deletes of present keys, each
    /// key once, applied to `pairs` too.
    fn batch(rng: &mut u64, pairs: &mut Pairs, fresh: &mut usize) -> Vec<Change> {
        let mut next = || {
            *rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            obscura_math::mix::mix64(*rng)
        };
        let mut touched = BTreeSet::new();
        let mut changes = Vec::new();
        for _ in 0..next() % 50 + 1 {
            let present: Vec<Vec<u8>> = pairs.keys().cloned().collect();
            let pick = present[next() as usize % present.len()].clone();
            let value = vec![next() as u8; next() as usize % 30];
            let change = match next() % 3 {
                0 => Change::Upsert { key: pick, value },
                1 => {
                    *fresh += 1;
                    let key = format!("new {fresh}").into_bytes();
                    Change::Upsert { key, value }
                }
                _ if pairs.len() > 1 => Change::Remove { key: pick },
                _ => continue,
            };
            let key = match &change {
                Change::Upsert { key, .. } | Change::Remove { key } => key.clone(),
                _ => unreachable!(),
            };
            if !touched.insert(key.clone()) {
                continue;
            }
            match &change {
                Change::Upsert { value, .. } => pairs.insert(key, value.clone()),
                _ => pairs.remove(&key),
            };
            changes.push(change);
        }
        changes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// After random rounds of upserts and deletes, every key reads as in the final pairs
        /// (absent ones, deleted ones and never-stored ones included), the delta is folded once
        /// it passes its bound, each version has a new digest, the patch of a version that
        /// keeps the main table makes its setup of the previous one (once, and not cut short),
        /// a request made for an earlier version's tables is refused as stale, and the setup
        /// with the matrices (as a database file holds them) makes a server that answers the
        /// same.
        #[test]
        fn updates_read_as_the_final_pairs(seed in any::<u64>(), keys in 2usize..120, rounds in 1u64..6) {
            let mut pairs: Pairs = (0..keys)
                .map(|i| (format!("key {i}").into_bytes(), vec![i as u8; i % 17]))
                .collect();
            let mut seen: BTreeSet<Vec<u8>> = pairs.keys().cloned().collect();
            let mut server = server_of(&pairs);
            let (mut rng, mut fresh) = (seed, 0);
            for round in 1..=rounds {
                let before = server.public_setup().clone();
                let mut client = KeywordClient::new(before.clone());
                let (stale, _) = client.query(b"key 0").unwrap();
                let changes = batch(&mut rng, &mut pairs, &mut fresh);
                seen.extend(changes.iter().filter_map(|c| match c {
                    Change::Upsert { key, .. } => Some(key.clone()),
                    _ => None,
                }));
                let patch = server.update(&changes).unwrap();
                let setup = server.public_setup();
                match patch {
                    // A version that keeps the main table patches its clients' setups.
                    Some(patch) => {
                        prop_assert_eq!(&before.clone().patched(&patch).unwrap(), setup);
                        prop_assert!(setup.clone().patched(&patch).is_err());
                        prop_assert!(before.clone().patched(&patch[..patch.len() - 1]).is_err());
                    }
                    None => prop_assert!(setup.delta().is_none() && setup.main() != before.main()),
                }
                prop_assert_eq!(setup.version(), round);
                prop_assert_ne!(setup.digest(), before.digest());
                let delta = setup.delta().map_or(0, |d| d.keys());
                prop_assert!(!compacts(delta, setup.main().keys()), "{} delta keys", delta);
                if setup.tables().ne(before.tables()) {
                    let decoded = Shards::<Query>::from_bytes(&stale.to_bytes(), setup);
                    prop_assert!(matches!(decoded, Err(PirError::SetupMismatch { .. })), "{:?}", decoded.err());
                }
                assert_reads(&server, &pairs, &seen);
            }
            let matrices = server.matrices().into_iter().cloned().collect();
            let loaded = KeywordServer::from_parts(server.public_setup().clone(), matrices).unwrap();
            assert_reads(&loaded, &pairs, &seen);
        }
    }

    /// A batch applied to a copy of a version (as loading a file replays its change log) makes
    /// the same setup and matrices, a delta table's and a compaction's alike.
    #[test]
    fn a_batch_replayed_on_a_copy_makes_the_same_version() {
        let pairs: Pairs = (0..100u32)
            .map(|i| (i.to_le_bytes().to_vec(), vec![1; 5]))
            .collect();
        let mut server = server_of(&pairs);
        let copy = |server: &KeywordServer| {
            let matrices = server.matrices().into_iter().cloned().collect();
            KeywordServer::from_parts(server.public_setup().clone(), matrices).unwrap()
        };
        let small = vec![Change::Upsert {
            key: 7u32.to_le_bytes().to_vec(),
            value: vec![3; 4],
        }];
        let large: Vec<Change> = (50..150u32)
            .map(|i| Change::Upsert {
                key: i.to_le_bytes().to_vec(),
                value: vec![2; 7],
            })
            .collect();
        for batch in [&small, &large, &small] {
            let mut replayed = copy(&server);
            server.update(batch).unwrap();
            replayed.update(batch).unwrap();
            assert_eq!(
                replayed.public_setup().to_bytes(),
                server.public_setup().to_bytes()
            );
            assert!(replayed.matrices() == server.matrices());
        }
    }

    /// A batch past the delta's bound leaves one main table of the keys present; a compacted
    /// server takes further changes.
    #[test]
    fn a_large_batch_compacts() {
        let mut pairs: Pairs = (0..100u32)
            .map(|i| (i.to_le_bytes().to_vec(), vec![1; 5]))
            .collect();
        let mut server = server_of(&pairs);
        let changes: Vec<Change> = (50..150u32)
            .map(|i| Change::Upsert {
                key: i.to_le_bytes().to_vec(),
                value: vec![2; 7],
            })
            .chain((0..10u32).map(|i| Change::Remove {
                key: i.to_le_bytes().to_vec(),
            }))
            .collect();
        for change in &changes {
            match change {
                Change::Upsert { key, value } => pairs.insert(key.clone(), value.clone()),
                Change::Remove { key } => pairs.remove(key),
                _ => unreachable!(),
            };
        }
        server.update(&changes).unwrap();
        let setup = server.public_setup();
        assert!(setup.delta().is_none());
        assert_eq!((setup.main().keys(), setup.keys()), (140, 140));
        let seen = (0..160u32).map(|i| i.to_le_bytes().to_vec()).collect();
        assert_reads(&server, &pairs, &seen);
        server
            .update(&[Change::Remove {
                key: 20u32.to_le_bytes().to_vec(),
            }])
            .unwrap();
        pairs.remove(&20u32.to_le_bytes()[..]);
        assert_reads(&server, &pairs, &seen);
    }

    /// Refused batches (a key changed twice, a delete of an absent key, changes by index, the
    /// last key deleted) leave setup and answers as they were.
    #[test]
    fn refused_batches_change_nothing() {
        let pairs: Pairs = [
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec()),
        ]
        .into_iter()
        .collect();
        let mut server = server_of(&pairs);
        server
            .update(&[Change::Upsert {
                key: b"c".to_vec(),
                value: b"3".to_vec(),
            }])
            .unwrap();
        let mut expected = pairs.clone();
        expected.insert(b"c".to_vec(), b"3".to_vec());
        let before = server.public_setup().clone();
        let remove = |key: &[u8]| Change::Remove { key: key.to_vec() };
        for (changes, message) in [
            (vec![remove(b"a"), remove(b"a")], "\"a\" is changed twice"),
            (
                vec![remove(b"a"), remove(b"zz")],
                "\"zz\" is not in the database",
            ),
            (vec![Change::Delete { index: 0 }], "not a delete by index"),
            (
                vec![remove(b"a"), remove(b"b"), remove(b"c")],
                "without keys",
            ),
        ] {
            let error = server.update(&changes).unwrap_err().to_string();
            assert!(error.contains(message), "{error}");
            assert_eq!(server.public_setup(), &before);
        }
        let seen = expected.keys().cloned().collect();
        assert_reads(&server, &expected, &seen);
    }

    #[test]
    fn delta_rows_flag_values_and_deletions() {
        assert_eq!(present(&flagged(Some(b"v"))), Some(b"v".to_vec()));
        assert_eq!(present(&flagged(Some(b""))), Some(Vec::new()));
        assert_eq!(present(&flagged(None)), None);
        assert_eq!(present(&[7, 1]), None);
        assert_eq!(present(&[]), None);
    }
}
