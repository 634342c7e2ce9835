//! `obscura-fuzz`: runs the fuzz targets for a bounded time, replays inputs, and makes the
//! fixtures and the seed corpus again.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use obscura_fuzz::guard::{self, LimitedAllocator, Watchdog};
use obscura_fuzz::{corpus, fixtures, runner, targets};

#[global_allocator]
static ALLOCATOR: LimitedAllocator = LimitedAllocator;

/// Fuzzes Obscura's decoders and HTTP routes: mutates the seed corpus of a target, and saves
/// every input that panics, breaks an invariant, allocates too much or hangs under
/// crates/obscura-fuzz/crashes/<target>/.
#[derive(Parser)]
#[command(name = "obscura-fuzz")]
struct Args {
    /// The target to fuzz, or `all` (one after the other); see --list.
    target: Option<String>,
    /// Seconds to fuzz each target.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seed of the mutations (the same seed repeats a run's mutations).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Largest single allocation allowed, in MiB; a larger one is a crash.
    #[arg(long, default_value_t = 256)]
    max_alloc_mib: usize,
    /// Longest time one input may run, in seconds; a slower one is a crash.
    #[arg(long, default_value_t = 10)]
    hang_seconds: u64,
    /// Lists the targets.
    #[arg(long)]
    list: bool,
    /// Runs these files through the target once each and prints the outcomes.
    #[arg(long, num_args = 1..)]
    replay: Vec<PathBuf>,
    /// Makes the fixture databases (crates/obscura-fuzz/fixtures) again.
    #[arg(long)]
    make_fixtures: bool,
    /// Writes the seeds and their edge cases (truncations, extensions) to the corpus folders.
    #[arg(long)]
    make_corpus: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, String> {
    guard::set_allocation_limit(args.max_alloc_mib.saturating_mul(1 << 20));
    guard::on_failure(runner::save_current);
    if args.list {
        for target in targets::all() {
            println!("{:<18} {}", target.name, target.about);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.make_fixtures {
        fixtures::write().map_err(|e| e.to_string())?;
        println!("fixtures written to {}", fixtures::folder().display());
    }
    let chosen = match args.target.as_deref() {
        None if args.make_fixtures => return Ok(ExitCode::SUCCESS),
        None => return Err("name a target or `all` (see --list)".into()),
        Some("all") => targets::all(),
        Some(name) => {
            vec![targets::find(name).ok_or_else(|| format!("no target {name:?} (see --list)"))?]
        }
    };
    if args.make_corpus {
        for target in &chosen {
            let written = make_corpus(target).map_err(|e| format!("{}: {e}", target.name))?;
            println!("{}: {written} corpus files", target.name);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.replay.is_empty() {
        let [target] = chosen.as_slice() else {
            return Err("--replay takes one target".into());
        };
        return replay(target, &args.replay);
    }
    let watchdog = Watchdog::spawn(Duration::from_secs(args.hang_seconds.max(1)));
    let mut crashes = 0;
    for target in &chosen {
        let report = runner::fuzz(
            target,
            Duration::from_secs(args.seconds),
            args.seed,
            &corpus::crashes_dir(target.name),
            Some(watchdog),
        )
        .map_err(|e| format!("{}: {e}", target.name))?;
        println!(
            "{:<18} {:>9} inputs, {:>4} distinct outcomes, pool {:>4}, {} crashes",
            target.name,
            report.executions,
            report.outcomes,
            report.pool,
            report.crashes.len()
        );
        crashes += report.crashes.len();
    }
    Ok(if crashes == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs each file through `target` and prints its outcome; fails if one fails.
fn replay(target: &targets::Target, files: &[PathBuf]) -> Result<ExitCode, String> {
    let mut failed = false;
    for file in files {
        let input = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        match runner::run_one(target, &input) {
            Ok(outcome) => println!("{}: {outcome}", file.display()),
            Err(failure) => {
                println!("{}: {failure}", file.display());
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Seeds up to this size are written to the corpus whole; larger ones only as truncations.
const MAX_CORPUS_FILE: usize = 16 << 10;

/// Writes `target`'s small seeds and the edge cases of every seed to its corpus folder.
fn make_corpus(target: &targets::Target) -> std::io::Result<usize> {
    let dir = corpus::corpus_dir(target.name);
    let mut written = 0;
    for seed in (target.seeds)() {
        let mut cases = vec![Vec::new(), seed[..seed.len().min(8)].to_vec()];
        cases.push(seed[..seed.len().min(48)].to_vec());
        if seed.len() <= MAX_CORPUS_FILE {
            cases.push(seed.clone());
            cases.push(seed[..seed.len().saturating_sub(1)].to_vec());
            cases.push([seed.as_slice(), &[0]].concat());
        }
        for case in cases {
            corpus::save(&dir, "seed", &case)?;
            written += 1;
        }
    }
    Ok(written)
}
