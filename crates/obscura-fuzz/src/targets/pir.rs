//! Targets of the PIR messages: envelopes, setups, queries and answers.

use obscura_math::expand::{MatrixSeed, SEED_BYTES};
use obscura_math::matrix::Matrix;
use obscura_pir::batch::shards::Shards;
use obscura_pir::batch::treepir::{TreePir, TreePirClient, TreePirServer, TreePirSetup};
use obscura_pir::framing;
use obscura_pir::keyword::{Keyword, KeywordClient, KeywordServer, KeywordSetup};
use obscura_pir::lwe::{
    Answer, Client, EngineOptions, Geometry, Lwe, PublicSetup, Query, RecordFormat, Server,
    ShardAnswer, ShardClient, ShardPlan, ShardQuery, ShardSetup, Split,
};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_pir::wire::{self, Kind, Reader};
use obscura_pir::ypir::{self, Variant, YpirOptions};
use obscura_pir::{Change, Encode, Message, PirClient, PirError, PirServer, SetupMessage};
use obscura_store::store;
use std::sync::OnceLock;

use super::{one_line, outcome, round_trip, SeedsEnd, Target, Verdict, ACCEPTED};
use crate::fixtures::{self, PAIRS};

/// The PIR targets.
pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "wire_envelope",
            about: "the full and compact envelopes of every message kind",
            seeds_end: SeedsEnd::Accepted,
            run: wire_envelope,
            seeds: || setups().into_iter().chain(queries()).collect(),
        },
        Target {
            name: "lwe_setup",
            about: "an LWE public setup, then a client built on it",
            seeds_end: SeedsEnd::Accepted,
            run: lwe_setup,
            seeds: lwe_setups,
        },
        Target {
            name: "lwe_setup_fields",
            about: "any setup a server could sign: parameters and geometry fields, then a client's query and decode",
            seeds_end: SeedsEnd::Accepted,
            run: lwe_setup_fields,
            seeds: || {
                lwe_setups()
                    .iter()
                    .map(|setup| setup[wire::HEADER_BYTES..wire::HEADER_BYTES + FIELD_BYTES].to_vec())
                    .collect()
            },
        },
        Target {
            name: "lwe_query",
            about: "a query to the index fixture, then the server's answer",
            seeds_end: SeedsEnd::Accepted,
            run: lwe_query,
            seeds: queries,
        },
        Target {
            name: "lwe_answer",
            about: "an answer to a query of the index fixture, then the client's decode",
            seeds_end: SeedsEnd::Accepted,
            run: lwe_answer,
            seeds: || vec![honest_answer(index_setup())],
        },
        Target {
            name: "shard_setup",
            about: "a shard's setup, then a query part and an answer of the lengths it announces",
            seeds_end: SeedsEnd::Accepted,
            run: shard_setup,
            seeds: shard_setups,
        },
        Target {
            name: "keyword_setup",
            about: "a keyword setup, then a client's lookup query",
            seeds_end: SeedsEnd::Accepted,
            run: keyword_setup,
            seeds: || vec![keyword().to_bytes()],
        },
        Target {
            name: "keyword_answer",
            about: "an answer to a lookup in the keyword fixture, then the client's decode",
            seeds_end: SeedsEnd::Accepted,
            run: keyword_answer,
            seeds: || vec![honest_keyword_answer()],
        },
        Target {
            name: "treepir_setup",
            about: "a TreePIR setup, then a client's proof queries",
            seeds_end: SeedsEnd::Accepted,
            run: treepir_setup,
            seeds: || vec![tree().to_bytes()],
        },
        Target {
            name: "lwe_setup_patch",
            about: "a patch of the index fixture's setup, then a client of the setup it makes",
            seeds_end: SeedsEnd::Accepted,
            run: lwe_setup_patch,
            seeds: || {
                let set = Change::Set {
                    index: 3,
                    value: b"zzzz".to_vec(),
                };
                vec![fixture_patch("index", set)]
            },
        },
        Target {
            name: "treepir_setup_patch",
            about: "a patch of the tree fixture's setup (a leaf appended), then a client's proof queries",
            seeds_end: SeedsEnd::Accepted,
            run: treepir_setup_patch,
            seeds: || {
                let append = Change::Append {
                    index: fixtures::LEAVES.len() as u64,
                    value: b"third".to_vec(),
                };
                vec![fixture_patch("tree", append)]
            },
        },
        Target {
            name: "keyword_setup_patch",
            about: "a patch of the keyword fixture's setup (a key upserted), then a client's lookup",
            seeds_end: SeedsEnd::Accepted,
            run: keyword_setup_patch,
            seeds: || {
                let upsert = Change::Upsert {
                    key: b"dave".to_vec(),
                    value: b"4444".to_vec(),
                };
                vec![fixture_patch("keyword", upsert)]
            },
        },
        Target {
            name: "treepir_answers",
            about: "framed answers to an audit-path request of the tree fixture, then the path check",
            seeds_end: SeedsEnd::Accepted,
            run: treepir_answers,
            seeds: || {
                let answers: Vec<Vec<u8>> =
                    tree().databases().iter().map(honest_answer).collect();
                vec![framing::encode(&answers)]
            },
        },
        Target {
            name: "ypir_setup",
            about: "a YPIR setup (either variant), then a client's query and its decode of a zero answer",
            seeds_end: SeedsEnd::Accepted,
            run: ypir_setup,
            seeds: || ypir_setups().iter().map(ypir::PublicSetup::to_bytes).collect(),
        },
        Target {
            name: "ypir_query",
            about: "a query to the YPIR+SP fixture, then the server's answer",
            seeds_end: SeedsEnd::Accepted,
            run: ypir_query,
            seeds: || {
                let mut client = ypir::Client::new(ypir_server().public_setup().clone());
                let (query, _) = client.query(3).expect("record 3");
                vec![query.to_bytes()]
            },
        },
        Target {
            name: "ypir_answer",
            about: "an answer to a query of the YPIR+SP fixture, then the client's decode",
            seeds_end: SeedsEnd::Accepted,
            run: ypir_answer,
            seeds: || {
                let server = ypir_server();
                let mut client = ypir::Client::new(server.public_setup().clone());
                let (query, _) = client.query(0).expect("record 0");
                vec![server.answer(&query).expect("an honest query").to_bytes()]
            },
        },
    ]
}

/// The YPIR+SP fixture: the index fixture's records, set up in memory once per process.
fn ypir_server() -> &'static ypir::Server {
    static SERVER: OnceLock<ypir::Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let options = YpirOptions {
            variant: Some(Variant::YpirSp),
        };
        ypir::Server::from_records(&fixtures::index_records(), 4, options, &|_, _| {})
            .expect("the YPIR fixture sets up")
    })
}

/// YPIR setups of both variants over the index fixture's records (no server needed).
/// The setups of the shards of the index fixture's records, by rows and by columns.
fn shard_setups() -> Vec<Vec<u8>> {
    let data = fixtures::index_records();
    let options = EngineOptions {
        matrix: Some(MatrixKind::Uniform),
        ..EngineOptions::default()
    };
    let seed = MatrixSeed([5; SEED_BYTES]);
    [Split::Rows, Split::Columns]
        .into_iter()
        .flat_map(|split| {
            let len = data.len() as u64;
            let plan = ShardPlan::new(len, 4, RecordFormat::Raw, options, split, 2, seed)
                .expect("a fixture plan");
            (0..2)
                .map(|i| {
                    let input = plan.input(i);
                    let input = &data[input.start as usize..input.end as usize];
                    plan.build(i, input)
                        .expect("a fixture shard")
                        .setup()
                        .to_bytes()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn shard_setup(input: &[u8]) -> Verdict {
    let setup = ShardSetup::from_bytes(input);
    if let Ok(setup) = &setup {
        round_trip(input, &setup.to_bytes())?;
        if setup.cols() > MAX_QUERY_BYTES / 4 {
            return Ok("queries too large for the harness".into());
        }
        let mut client = ShardClient::new(setup.clone());
        let (query, ()) = client
            .query(&vec![0; setup.cols() as usize])
            .map_err(|e| format!("a part of the announced length: {e}"))?;
        let query = ShardQuery::from_bytes(&query.to_bytes(), &setup.tag())
            .map_err(|e| format!("a query part made by its client: {e}"))?;
        if query.values().len() as u64 != setup.cols() {
            return Err("a query part's length is not the announced one".into());
        }
        let mut answer = Vec::new();
        wire::write_compact_header(&mut answer, Kind::LWE_SHARD_ANSWER, setup.digest());
        answer.resize(ShardAnswer::encoded_len(&setup.tag()) as usize, 0);
        let answer = ShardAnswer::from_bytes(&answer, &setup.tag())
            .map_err(|e| format!("an answer of the announced length: {e}"))?;
        outcome(&client.decode((), &answer))?;
    }
    outcome(&setup)
}

fn ypir_setups() -> Vec<ypir::PublicSetup> {
    let data = fixtures::index_records();
    let records = (data.len() as u64).div_ceil(4);
    let seed = MatrixSeed([7; SEED_BYTES]);
    [Variant::YpirSp, Variant::Ypir]
        .into_iter()
        .map(|variant| {
            let shape = ypir::Shape::plan(variant, records, 4).expect("a fixture shape");
            ypir::PublicSetup::new(shape, RecordFormat::Raw, data.len() as u64, seed)
                .expect("a fixture setup")
        })
        .collect()
}

fn ypir_setup(input: &[u8]) -> Verdict {
    let setup = ypir::PublicSetup::from_bytes(input);
    if let Ok(setup) = &setup {
        round_trip(input, &setup.to_bytes())?;
        if ypir::Query::encoded_len(setup) > MAX_QUERY_BYTES {
            return Ok("queries too large for the harness".into());
        }
        let mut client = ypir::Client::new(setup.clone());
        let last = setup.shape().records() - 1;
        for index in [0, last] {
            let (query, state) = client
                .query(index)
                .map_err(|e| format!("record {index} of a valid setup: {e}"))?;
            if query.to_bytes().len() as u64 != ypir::Query::encoded_len(setup) {
                return Err("a query's length is not the announced one".into());
            }
            let mut answer = Vec::new();
            wire::write_compact_header(&mut answer, Kind::YPIR_ANSWER, setup.digest());
            answer.resize(ypir::Answer::encoded_len(setup) as usize, 0);
            let answer = ypir::Answer::from_bytes(&answer, setup)
                .map_err(|e| format!("an answer of the announced length: {e}"))?;
            outcome(&client.decode(state, &answer))?;
        }
    }
    outcome(&setup)
}

fn ypir_query(input: &[u8]) -> Verdict {
    let server = ypir_server();
    let setup = server.public_setup();
    let query = ypir::Query::from_bytes(input, setup);
    if let Ok(query) = &query {
        round_trip(input, &query.to_bytes())?;
        let answer = server
            .answer(query)
            .map_err(|e| format!("a decoded query was not answered: {e}"))?;
        if answer.to_bytes().len() as u64 != ypir::Answer::encoded_len(setup) {
            return Err("an answer's length is not the announced one".into());
        }
    }
    outcome(&query)
}

fn ypir_answer(input: &[u8]) -> Verdict {
    let setup = ypir_server().public_setup();
    let answer = ypir::Answer::from_bytes(input, setup);
    if let Ok(answer) = &answer {
        round_trip(input, &answer.to_bytes())?;
        let mut client = ypir::Client::new(setup.clone());
        let (_, state) = client.query(3).map_err(|e| e.to_string())?;
        outcome(&client.decode(state, answer))?;
    }
    outcome(&answer)
}

fn index_server() -> &'static Server {
    fixtures::get()
        .index
        .server::<Lwe>()
        .expect("the index fixture is an index database")
}

fn index_setup() -> &'static PublicSetup {
    index_server().public_setup()
}

fn keyword_server() -> &'static KeywordServer {
    fixtures::get()
        .keyword
        .server::<Keyword>()
        .expect("the keyword fixture is a keyword database")
}

fn keyword() -> &'static KeywordSetup {
    keyword_server().public_setup()
}

fn tree_server() -> &'static TreePirServer {
    fixtures::get()
        .tree
        .server::<TreePir>()
        .expect("the tree fixture is a TreePIR database")
}

fn tree() -> &'static TreePirSetup {
    tree_server().public_setup()
}

/// The LWE setups of the fixtures.
fn lwe_setups() -> Vec<Vec<u8>> {
    let mut setups = vec![index_setup().to_bytes()];
    setups.extend(keyword().tables().map(|table| table.index().to_bytes()));
    setups.extend(tree().databases().iter().map(PublicSetup::to_bytes));
    setups
}

/// Every encoded setup of the fixtures.
fn setups() -> Vec<Vec<u8>> {
    let mut setups = lwe_setups();
    setups.extend([keyword().to_bytes(), tree().to_bytes()]);
    setups
}

/// Queries to the index fixture.
fn queries() -> Vec<Vec<u8>> {
    let mut client = Client::new(index_setup().clone());
    [0, 15]
        .into_iter()
        .filter_map(|index| client.query(index).ok())
        .map(|(query, _)| query.to_bytes())
        .collect()
}

/// The answer of the server behind `setup` to a query of its first record.
/// An honest answer to a lookup of a key of the keyword fixture.
fn honest_keyword_answer() -> Vec<u8> {
    let (query, _) = KeywordClient::new(keyword().clone())
        .query(PAIRS[1].0.as_bytes())
        .expect("a lookup");
    keyword_server()
        .answer(&query)
        .expect("an honest query")
        .to_bytes()
}

fn honest_answer(setup: &PublicSetup) -> Vec<u8> {
    let server = [index_server(), keyword_server().engine()]
        .into_iter()
        .chain(tree_server().databases())
        .find(|server| server.public_setup() == setup)
        .expect("a fixture setup");
    let (query, _) = Client::new(setup.clone()).query(0).expect("record 0");
    server.answer(&query).expect("an honest query").to_bytes()
}

fn wire_envelope(input: &[u8]) -> Verdict {
    let kinds = [
        Kind::LWE_PUBLIC_SETUP,
        Kind::LWE_QUERY,
        Kind::LWE_ANSWER,
        Kind::KEYWORD_SETUP,
        Kind::TREEPIR_SETUP,
        Kind::YPIR_SETUP,
        Kind::YPIR_QUERY,
        Kind::YPIR_ANSWER,
        Kind::DATABASE_FILE,
    ];
    let mut refusals = Vec::new();
    let mut accepted = false;
    for kind in kinds {
        let opened = Reader::open(input, kind);
        if let Ok((_, digest)) = &opened {
            let mut header = Vec::new();
            wire::write_header(&mut header, kind, digest);
            round_trip(&input[..wire::HEADER_BYTES], &header)?;
        }
        let compact = Reader::open_compact(input, kind);
        if let Ok((_, tag)) = &compact {
            if input[3..wire::COMPACT_HEADER_BYTES] != tag[..] {
                return Err("the compact envelope's tag is not its bytes".into());
            }
        }
        accepted |= opened.is_ok() || compact.is_ok();
        refusals.push(outcome(&opened)?);
        refusals.push(outcome(&compact)?);
    }
    // Inputs that open as some kind are alike; refusals differ by their reasons.
    Ok(if accepted {
        ACCEPTED.into()
    } else {
        refusals.join(" | ")
    })
}

fn lwe_setup(input: &[u8]) -> Verdict {
    let setup = PublicSetup::from_bytes(input);
    if let Ok(setup) = &setup {
        round_trip(input, &setup.to_bytes())?;
        use_setup(setup)?;
    }
    outcome(&setup)
}

/// Bytes of the parameter and geometry fields of an LWE setup, after its envelope: four codes,
/// six `u64`s (records, capacity, record bytes, data bytes, records per column, row norm) and
/// the seed.
const FIELD_BYTES: usize = 4 + 6 * 8 + SEED_BYTES;

/// Most hint entries the fields target builds (a zero hint, 16 MiB).
const MAX_HINT_ENTRIES: u64 = 1 << 22;

/// Largest query the fields target has a client make (4 MiB): a setup may describe a database
/// of up to 2^33 columns, whose honest queries take seconds and gigabytes.
const MAX_QUERY_BYTES: u64 = 1 << 22;

/// A setup assembled from raw fields, as a hostile server could sign it: any that
/// `PublicSetup::new` accepts must encode, decode and serve a client without a panic.
fn lwe_setup_fields(input: &[u8]) -> Verdict {
    let Some(fields) = input.get(..FIELD_BYTES) else {
        return Ok("short".into());
    };
    let u64_at =
        |i: usize| u64::from_le_bytes(fields[4 + 8 * i..12 + 8 * i].try_into().expect("8 bytes"));
    let (Some(set), Some(matrix), Some(format)) = (
        ParamSet::from_code(fields[0]),
        MatrixKind::from_code(fields[1]),
        RecordFormat::from_code(fields[2]),
    ) else {
        return Ok("unknown code".into());
    };
    let geometry = Geometry::new(u64_at(0), u64_at(2), u64_at(3), u64_at(4), fields[3])
        .and_then(|geometry| geometry.with_capacity(u64_at(1)));
    let geometry = match geometry {
        Ok(geometry) => geometry,
        Err(error) => return one_line(error.to_string()),
    };
    if geometry.rows().saturating_mul(set.n() as u64) > MAX_HINT_ENTRIES {
        return Ok("hint too large for the harness".into());
    }
    let hint = Matrix::zeros(geometry.rows() as usize, set.n());
    let seed = MatrixSeed(fields[52..].try_into().expect("seed bytes"));
    let setup = PublicSetup::new(set, matrix, format, geometry, u64_at(5), seed, hint);
    if let Ok(setup) = &setup {
        let bytes = setup.to_bytes();
        let decoded = PublicSetup::from_bytes(&bytes)
            .map_err(|e| format!("an assembled setup does not decode: {e}"))?;
        if &decoded != setup {
            return Err("an assembled setup decodes to another setup".into());
        }
        if Query::encoded_len(setup) > MAX_QUERY_BYTES {
            return Ok("queries too large for the harness".into());
        }
        use_setup(setup)?;
    }
    outcome(&setup)
}

/// A client on `setup` queries its first and last records and decodes an all-zero answer.
fn use_setup(setup: &PublicSetup) -> Result<(), String> {
    let mut client = Client::new(setup.clone());
    let last = setup.geometry().records() - 1;
    for index in [0, last] {
        let (query, state) = client
            .query(index)
            .map_err(|e| format!("record {index} of a valid setup: {e}"))?;
        if query.to_bytes().len() as u64 != Query::encoded_len(setup) {
            return Err("a query's length is not the announced one".into());
        }
        let mut answer = Vec::new();
        wire::write_compact_header(&mut answer, Kind::LWE_ANSWER, setup.digest());
        answer.resize(Answer::encoded_len(setup) as usize, 0);
        let answer = Answer::from_bytes(&answer, setup)
            .map_err(|e| format!("an answer of the announced length: {e}"))?;
        outcome(&client.decode(state, &answer))?;
    }
    Ok(())
}

fn lwe_query(input: &[u8]) -> Verdict {
    let setup = index_setup();
    let query = Query::from_bytes(input, setup);
    if let Ok(query) = &query {
        round_trip(input, &query.to_bytes())?;
        let answer = index_server()
            .answer(query)
            .map_err(|e| format!("a decoded query was not answered: {e}"))?;
        if answer.to_bytes().len() as u64 != Answer::encoded_len(setup) {
            return Err("an answer's length is not the announced one".into());
        }
    }
    outcome(&query)
}

fn lwe_answer(input: &[u8]) -> Verdict {
    let setup = index_setup();
    let answer = Answer::from_bytes(input, setup);
    if let Ok(answer) = &answer {
        round_trip(input, &answer.to_bytes())?;
        let mut client = Client::new(setup.clone());
        let (_, state) = client.query(3).map_err(|e| e.to_string())?;
        outcome(&client.decode(state, answer))?;
    }
    outcome(&answer)
}

fn keyword_setup(input: &[u8]) -> Verdict {
    let setup = KeywordSetup::from_bytes(input);
    if let Ok(setup) = &setup {
        round_trip(input, &setup.to_bytes())?;
        let mut client = KeywordClient::new(setup.clone());
        client
            .query(PAIRS[0].0.as_bytes())
            .map_err(|e| format!("a lookup on a valid setup: {e}"))?;
    }
    outcome(&setup)
}

fn keyword_answer(input: &[u8]) -> Verdict {
    let setup = keyword();
    let answer = <Shards<Answer> as Message<KeywordSetup>>::from_bytes(input, setup);
    let Ok(answer) = &answer else {
        return outcome(&answer);
    };
    let mut client = KeywordClient::new(setup.clone());
    let (_, state) = client
        .query(PAIRS[1].0.as_bytes())
        .map_err(|e| e.to_string())?;
    let value = client.decode(state, answer);
    if let Ok(Some(value)) = &value {
        if value.len() as u64 > setup.max_value() {
            return Err(format!(
                "a {}-byte value in a setup of at most {}",
                value.len(),
                setup.max_value()
            ));
        }
    }
    outcome(&value)?;
    Ok(ACCEPTED.into())
}

fn treepir_setup(input: &[u8]) -> Verdict {
    let setup = TreePirSetup::from_bytes(input);
    if let Ok(setup) = &setup {
        round_trip(input, &setup.to_bytes())?;
        use_tree(setup)?;
    }
    outcome(&setup)
}

/// A client of `setup` makes the audit-path request of its last leaf.
fn use_tree(setup: &TreePirSetup) -> Result<(), String> {
    let mut client = TreePirClient::new(setup.clone());
    let (queries, _) = client
        .query(setup.leaves() - 1)
        .map_err(|e| format!("the last leaf of a valid setup: {e}"))?;
    if queries.len() != setup.databases().len() {
        return Err("an audit-path request without one query per colour class".into());
    }
    Ok(())
}

/// The patch a fresh copy of fixture `name` makes when it takes `change`.
fn fixture_patch(name: &str, change: Change) -> Vec<u8> {
    let mut database = store::read_database(&fixtures::path(name)).expect("the fixture loads");
    database
        .update(&[change])
        .expect("the fixture takes the change")
        .expect("the fixture's scheme makes patches")
}

/// The outcome of a setup patch applied to a fixture's setup: a setup it makes must encode and
/// decode to itself and pass `check` (what the next version must be, and a client's use).
fn patched_setup<S: SetupMessage>(
    patched: Result<S, PirError>,
    check: impl FnOnce(&S) -> Result<(), String>,
) -> Verdict {
    if let Ok(setup) = &patched {
        let bytes = setup.to_bytes();
        let decoded = S::from_bytes(&bytes).map_err(|e| format!("a patched setup: {e}"))?;
        round_trip(&bytes, &decoded.to_bytes())?;
        check(setup)?;
    }
    outcome(&patched)
}

/// A patch of the index fixture's setup: it must make the next version, which serves a client,
/// and the same bytes when a client patches the encoded setup in place (and fail when it does).
fn lwe_setup_patch(input: &[u8]) -> Verdict {
    let patched = index_setup().clone().patched(input);
    let in_place = PublicSetup::patch_encoded(index_setup().to_bytes(), input);
    match (&patched, &in_place) {
        (Ok(setup), Ok(bytes)) if setup.to_bytes() != *bytes => {
            return Err("the setup patched in place differs from the one decoded".into());
        }
        (Ok(_), Err(e)) => return Err(format!("patched decoded, refused in place: {e}")),
        (Err(_), Ok(_)) => return Err("refused decoded, patched in place".into()),
        _ => {}
    }
    patched_setup(patched, |setup| {
        if setup.version() != index_setup().version() + 1 {
            return Err("a patch that does not make the next version".into());
        }
        use_setup(setup)
    })
}

/// A patch of the tree fixture's setup: it must grow the tree, which serves a client.
fn treepir_setup_patch(input: &[u8]) -> Verdict {
    patched_setup(tree().clone().patched(input), |setup| {
        if setup.leaves() <= tree().leaves() {
            return Err("a patch that does not grow the tree".into());
        }
        use_tree(setup)
    })
}

/// A patch of the keyword fixture's setup: it must make the next version with the fixture's
/// main table, which serves a lookup.
fn keyword_setup_patch(input: &[u8]) -> Verdict {
    patched_setup(keyword().clone().patched(input), |setup| {
        if setup.version() != keyword().version() + 1 || setup.main() != keyword().main() {
            return Err(
                "a patch that does not make the next version of the same main table".into(),
            );
        }
        KeywordClient::new(setup.clone())
            .query(PAIRS[0].0.as_bytes())
            .map(|_| ())
            .map_err(|e| format!("a lookup on a patched setup: {e}"))
    })
}

fn treepir_answers(input: &[u8]) -> Verdict {
    let setup = tree();
    let messages = match framing::decode(input, setup.databases().len()) {
        Ok(messages) => messages,
        Err(error) => return one_line(error),
    };
    let answers: Result<Vec<Answer>, _> = messages
        .iter()
        .zip(setup.databases())
        .map(|(bytes, setup)| Answer::from_bytes(bytes, setup))
        .collect();
    let Ok(answers) = &answers else {
        return outcome(&answers);
    };
    let mut client = TreePirClient::new(setup.clone());
    let (_, state) = client.query(0).map_err(|e| e.to_string())?;
    let leaf = obscura_pir::batch::merkle::leaf_hash(fixtures::LEAVES[0].as_bytes());
    // Answers made for another client's query decode to noise: any result will do but a panic.
    outcome(&client.decode(state, answers, &leaf))?;
    Ok(ACCEPTED.into())
}
