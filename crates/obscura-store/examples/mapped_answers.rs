//! What serving a database from its file's mapping costs an answer: an index database file
//! (built with the default options) answered from the file, as `obscura serve` and
//! `Client.open` answer it (the page cache's 4 KiB pages), and a database of the same shape
//! built in this process, as `obscura bench` answers it (anonymous memory on huge pages): one
//! query each in turn, nine rounds.
//!
//! ```sh
//! cargo run --release -p obscura-store --example mapped_answers -- FILE
//! ```

use std::time::Instant;

use obscura_pir::Target;
use obscura_registry::{Client, Database, Registry};
use obscura_store::build::{build, BuildOptions, Records};

const ROUNDS: u64 = 9;

/// A database, a client of it and the answer times measured so far.
struct Place {
    name: &'static str,
    database: Database,
    client: Client,
    millis: Vec<f64>,
}

impl Place {
    fn new(name: &'static str, database: Database) -> Result<Self, Box<dyn std::error::Error>> {
        let client = Registry::default().client(&database.setup_bytes())?;
        Ok(Self {
            name,
            database,
            client,
            millis: Vec::new(),
        })
    }

    /// Times the answer to one query for record `index`.
    fn answer(&mut self, index: u64) -> Result<(), Box<dyn std::error::Error>> {
        let (query, _) = self.client.query(Target::Index(index))?;
        let query = self.database.decode_query(&query)?;
        let started = Instant::now();
        self.database.answer(vec![query])?;
        self.millis.push(started.elapsed().as_secs_f64() * 1e3);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: mapped_answers FILE")?;
    let mapped = obscura_store::store::read_database(path.as_ref())?;
    let (records, record_bytes) = (mapped.listing().items, mapped.listing().item_bytes);
    let data: Vec<u8> = (0..records * record_bytes)
        .map(|i| (i % 251) as u8)
        .collect();
    let memory = build(
        Records::raw(&data, record_bytes),
        &BuildOptions::default(),
        &|_, _| {},
    )?;
    drop(data);
    let (description, built) = (mapped.listing().description, memory.listing().description);
    if description != built {
        return Err(format!("the file holds {description}, not {built}").into());
    }
    println!("{description}");
    let mut places = [
        Place::new("file mapping", mapped)?,
        Place::new("memory", memory)?,
    ];
    for round in 0..ROUNDS {
        for place in &mut places {
            place.answer(round * 7919 % records)?;
        }
    }
    for place in &mut places {
        let millis = &mut place.millis;
        millis.sort_by(f64::total_cmp);
        println!(
            "{}: answer median {:.1} ms ({:.1}-{:.1})",
            place.name,
            millis[millis.len() / 2],
            millis[0],
            millis[millis.len() - 1]
        );
    }
    Ok(())
}
