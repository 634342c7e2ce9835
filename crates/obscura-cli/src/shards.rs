//! Sharded databases from the command line: `obscura build --plan-shards` writes the plan,
//! `obscura build --manifest M --shard I/N` builds one shard, `obscura shards seal` checks the
//! shards and writes the whole database's public setup.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::{Args, Subcommand};
use obscura_math::expand::MatrixSeed;
use obscura_pir::lwe::{self, EngineOptions, RecordFormat, ShardPlan, Split};
use obscura_store::shards::{self, Manifest};

/// Arguments of `obscura shards`.
#[derive(Args)]
pub struct ShardsArgs {
    #[command(subcommand)]
    command: ShardsCommand,
}

#[derive(Subcommand)]
enum ShardsCommand {
    /// Check that the shard files make the database a manifest plans (each shard once, one
    /// version), write its public setup beside the manifest (M.setup) and record the shards'
    /// checksums in the manifest.
    Seal {
        /// The manifest `obscura build --plan-shards` wrote.
        manifest: PathBuf,
        /// The shard files, in any order.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
    },
}

/// Which shard of how many: `I/N`, I from 0.
#[derive(Clone, Copy, Debug)]
pub struct ShardIndex {
    index: usize,
    shards: usize,
}

impl std::str::FromStr for ShardIndex {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)));
        match parsed {
            Some((index, shards)) if index < shards => Ok(Self { index, shards }),
            _ => Err(format!(
                "{text:?}: give the shard as I/N, I from 0 to N - 1 (0/4 is the first of four)"
            )),
        }
    }
}

/// The records a sharded database is planned or built from: slots laid end to end, of one
/// size, in a format.
pub struct Slots<'a> {
    /// The input file.
    pub path: &'a Path,
    /// Bytes of the slots in all.
    pub data_bytes: u64,
    /// Bytes per slot.
    pub slot_bytes: u64,
    /// Raw records or values in slots.
    pub format: RecordFormat,
    /// The slots, when they were read (values); raw records are read from `path` as needed.
    pub held: Option<Vec<u8>>,
}

impl Slots<'_> {
    /// The input of shard `index` of `plan` ([`ShardPlan::input`]): raw records are read from
    /// the file, only the stretches the shard reads ([`ShardPlan::input_read`]); the rest of
    /// the buffer is zeros the system maps only when touched, which the build never does.
    fn input(&self, plan: &ShardPlan, index: usize) -> Result<Vec<u8>> {
        let input = plan.input(index);
        if let Some(held) = &self.held {
            return Ok(held[input.start as usize..input.end as usize].to_vec());
        }
        let file = std::fs::File::open(self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        let mut bytes = vec![0u8; (input.end - input.start) as usize];
        for range in plan.input_read(index) {
            let at = (range.start - input.start) as usize..(range.end - input.start) as usize;
            file.read_exact_at(&mut bytes[at], range.start)
                .with_context(|| format!("cannot read {}", self.path.display()))?;
        }
        Ok(bytes)
    }
}

/// The slots of `values` (variable-length, with room for `room` bytes when given).
pub fn value_slots<'a>(path: &'a Path, values: &[Vec<u8>], room: Option<u64>) -> Result<Slots<'a>> {
    let (data, slot_bytes) = lwe::value_slots(values, room)?;
    Ok(Slots {
        path,
        data_bytes: data.len() as u64,
        slot_bytes,
        format: RecordFormat::LengthPrefixed,
        held: Some(data),
    })
}

/// Writes the plan of `slots` cut by `split` into `shards` shards to the manifest `out`.
pub fn plan(
    slots: &Slots<'_>,
    options: EngineOptions,
    split: Split,
    shards: u64,
    out: &Path,
) -> Result<()> {
    let plan = ShardPlan::new(
        slots.data_bytes,
        slots.slot_bytes,
        slots.format,
        options,
        split,
        usize::try_from(shards).context("too many shards")?,
        MatrixSeed::random()?,
    )?;
    Manifest::new(plan.clone()).write(out)?;
    let g = plan.geometry();
    println!(
        "wrote {}: {} records of {} bytes in {} shards by {} of a {}",
        out.display(),
        g.records(),
        g.record_bytes(),
        plan.shards(),
        split.name(),
        lwe::describe(g, plan.layer().params())
    );
    for (index, range) in plan.ranges().iter().enumerate() {
        println!(
            "  shard {index}: {} {}..{} (reads {} of the input)",
            split.name(),
            range.start,
            range.end,
            obscura_store::memory::human(
                plan.input_read(index).iter().map(|r| r.end - r.start).sum()
            )
        );
    }
    println!(
        "build each with the same `obscura build` (input and its options) plus `--manifest {} --shard I/{} --out FILE`, then `obscura shards seal {} FILES`",
        out.display(),
        plan.shards(),
        out.display()
    );
    Ok(())
}

/// Builds shard `shard` of the manifest `manifest` from `slots` into `out`.
pub fn build(slots: &Slots<'_>, manifest: &Path, shard: ShardIndex, out: &Path) -> Result<()> {
    let started = Instant::now();
    let read = Manifest::read(manifest)?;
    let plan = read.plan();
    ensure!(
        shard.shards == plan.shards(),
        "{} plans {} shards, not {}: give --shard I/{}",
        manifest.display(),
        plan.shards(),
        shard.shards,
        plan.shards()
    );
    let g = plan.geometry();
    let planned = (g.data_bytes(), g.record_bytes(), plan.layer().format());
    if (slots.data_bytes, slots.slot_bytes, slots.format) != planned {
        bail!(
            "{} is not the input {} plans: {} bytes in slots of {} ({}), where the plan has {} bytes in slots of {} ({})",
            slots.path.display(),
            manifest.display(),
            slots.data_bytes,
            slots.slot_bytes,
            format_name(slots.format),
            planned.0,
            planned.1,
            format_name(planned.2)
        );
    }
    let input = slots.input(plan, shard.index)?;
    let written = shards::build_shard(&read, shard.index, &input, out)?;
    let range = plan.range(shard.index);
    println!(
        "wrote {}: shard {} of {} ({} {}..{}), public setup {} bytes, setup sha256 {}, built in {:.2?}",
        out.display(),
        shard.index,
        plan.shards(),
        plan.split().name(),
        range.start,
        range.end,
        written.bytes,
        hex::encode(written.sha256),
        started.elapsed()
    );
    Ok(())
}

/// What records in `format` are called.
fn format_name(format: RecordFormat) -> &'static str {
    match format {
        RecordFormat::Raw => "raw records",
        RecordFormat::LengthPrefixed => "values",
    }
}

/// Runs `obscura shards`.
pub fn run(args: ShardsArgs) -> Result<()> {
    match args.command {
        ShardsCommand::Seal { manifest, shards } => {
            let report = shards::seal(&manifest, &shards)?;
            println!(
                "sealed {}: {} shards at version {}; public setup {} ({} bytes, sha256 {})",
                manifest.display(),
                shards.len(),
                report.version,
                report.setup_path.display(),
                report.setup_bytes,
                hex::encode(report.setup_sha256)
            );
            Ok(())
        }
    }
}
