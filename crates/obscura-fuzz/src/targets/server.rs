//! Targets of the server's own formats: batch framing, database files and the database list.

use std::cell::RefCell;
use std::path::PathBuf;

use obscura_client::api::DatabaseInfo;
use obscura_pir::framing;
use obscura_pir::wire;
use obscura_store::store;

use super::{one_line, outcome, round_trip, SeedsEnd, Target, Verdict, ACCEPTED};
use crate::fixtures;

/// Bytes of a database file before its payload: envelope, payload length, checksum.
const PREAMBLE_BYTES: usize = wire::HEADER_BYTES + 8 + 32;

/// The server targets.
pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "batch_framing",
            about: "a framed batch body (count, then length-prefixed messages)",
            seeds_end: SeedsEnd::Accepted,
            run: batch_framing,
            seeds: || vec![framing::encode(&[b"abc".to_vec(), Vec::new(), vec![7; 40]])],
        },
        Target {
            name: "store_file",
            about: "a database file, loaded as the server loads it",
            seeds_end: SeedsEnd::Accepted,
            run: store_file,
            seeds: fixture_files,
        },
        Target {
            name: "store_payload",
            about: "a database file's payload under a valid preamble (length and checksum made to match), loaded and written again",
            seeds_end: SeedsEnd::Accepted,
            run: store_payload,
            seeds: || {
                fixture_files()
                    .into_iter()
                    .map(|file| file[PREAMBLE_BYTES..].to_vec())
                    .collect()
            },
        },
        Target {
            name: "catalog_json",
            about: "the JSON database list, parsed as the client parses it",
            seeds_end: SeedsEnd::Accepted,
            run: catalog_json,
            seeds: || {
                let list = std::fs::read(fixtures::folder().join("list.json"))
                    .expect("the committed database list");
                vec![list]
            },
        },
    ]
}

/// The committed fixture files.
fn fixture_files() -> Vec<Vec<u8>> {
    fixtures::NAMES
        .iter()
        .map(|name| std::fs::read(fixtures::path(name)).expect("a committed fixture"))
        .collect()
}

fn batch_framing(input: &[u8]) -> Verdict {
    match framing::decode(input, 16) {
        Ok(messages) => {
            let owned: Vec<Vec<u8>> = messages.iter().map(|m| m.to_vec()).collect();
            round_trip(input, &framing::encode(&owned))?;
            Ok(ACCEPTED.into())
        }
        Err(error) => one_line(error),
    }
}

/// Writes `bytes` to this thread's scratch file and returns its path.
fn scratch(bytes: &[u8]) -> Result<PathBuf, String> {
    thread_local! {
        static DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
    }
    DIR.with(|dir| {
        let mut dir = dir.borrow_mut();
        if dir.is_none() {
            *dir = Some(tempfile::tempdir().map_err(|e| format!("scratch folder: {e}"))?);
        }
        let path = dir.as_ref().expect("made above").path().join("input.obs");
        std::fs::write(&path, bytes).map_err(|e| format!("scratch file: {e}"))?;
        Ok(path)
    })
}

fn store_file(input: &[u8]) -> Verdict {
    let path = scratch(input)?;
    outcome(&store::read_database(&path))
}

/// A file around `payload`: the envelope of a database file with the digest the payload's setup
/// carries, the payload's length and its checksum.
fn file_around(payload: &[u8]) -> Vec<u8> {
    let digest: wire::Digest = payload
        .get(16..48)
        .and_then(|d| d.try_into().ok())
        .unwrap_or([0; 32]);
    let mut file = Vec::with_capacity(PREAMBLE_BYTES + payload.len());
    wire::write_header(&mut file, wire::Kind::DATABASE_FILE, &digest);
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(&store::checksum_of_payload(payload));
    file.extend_from_slice(payload);
    file
}

fn store_payload(input: &[u8]) -> Verdict {
    let file = file_around(input);
    let path = scratch(&file)?;
    let database = store::read_database(&path);
    if let Ok(database) = &database {
        let again = path.with_extension("again");
        store::write_database(&again, database).map_err(|e| format!("writing it again: {e}"))?;
        let written = std::fs::read(&again).map_err(|e| format!("reading it again: {e}"))?;
        round_trip(&file, &written)?;
    }
    outcome(&database)
}

fn catalog_json(input: &[u8]) -> Verdict {
    let list = serde_json::from_slice::<Vec<DatabaseInfo>>(input);
    if let Ok(list) = &list {
        let text = serde_json::to_vec(list).map_err(|e| e.to_string())?;
        let again: Vec<DatabaseInfo> = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
        if &again != list {
            return Err("the list does not survive a second round".into());
        }
    }
    outcome(&list)
}
