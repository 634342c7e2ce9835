//! The fuzzing loop: runs the seeds and the committed inputs, then mutated ones until the time
//! is up. An input whose outcome was not seen before joins the pool it mutates (a coarse
//! coverage signal: distinct errors are distinct decoder paths); a panic or a violation is
//! saved under `crashes/<target>/` once per distinct message.

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use crate::corpus;
use crate::guard::Watchdog;
use crate::mutate::{self, Rng};
use crate::targets::Target;

/// Most inputs kept in the pool.
const MAX_POOL: usize = 4096;

/// How one input failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The target panicked (on any thread) with this message.
    Panic(String),
    /// The target reported a violation.
    Violation(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Panic(message) => write!(f, "panic: {message}"),
            Self::Violation(message) => write!(f, "violation: {message}"),
        }
    }
}

impl Failure {
    /// The prefix of a saved input's file name.
    fn prefix(&self) -> &'static str {
        match self {
            Self::Panic(_) => "panic",
            Self::Violation(_) => "violation",
        }
    }
}

/// Whether an input is running: panics are then recorded quietly instead of printed.
static RUNNING: AtomicBool = AtomicBool::new(false);
/// The first panic message of the running input.
static PANIC: Mutex<Option<String>> = Mutex::new(None);
/// The target and input running, for the guards' report.
static CURRENT: Mutex<(String, Vec<u8>)> = Mutex::new((String::new(), Vec::new()));

/// Installs the panic hook that records panics of running inputs (others are printed as usual).
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if RUNNING.load(Ordering::SeqCst) {
                let mut panic = PANIC.lock().unwrap_or_else(|e| e.into_inner());
                panic.get_or_insert_with(|| info.to_string().replace('\n', " "));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs one input through `target`: its outcome, or how it failed. A panic on another thread
/// during the input (a worker of the HTTP service, say) fails it too.
pub fn run_one(target: &Target, input: &[u8]) -> Result<String, Failure> {
    install_panic_hook();
    {
        let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
        current.0.clear();
        current.0.push_str(target.name);
        current.1.clear();
        current.1.extend_from_slice(input);
    }
    *PANIC.lock().unwrap_or_else(|e| e.into_inner()) = None;
    RUNNING.store(true, Ordering::SeqCst);
    let result = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    RUNNING.store(false, Ordering::SeqCst);
    let panicked = PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (result, panicked) {
        (_, Some(message)) => Err(Failure::Panic(message)),
        (Err(_), None) => Err(Failure::Panic("a panic without a message".into())),
        (Ok(Err(violation)), None) => Err(Failure::Violation(violation)),
        (Ok(Ok(outcome)), None) => Ok(outcome),
    }
}

/// Saves the running input under `crashes/<target>/guard-*` and says why: the hook for
/// [`crate::guard::on_failure`].
pub fn save_current(what: &str) {
    let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let (target, input) = (&current.0, &current.1);
    match corpus::save(&corpus::crashes_dir(target), "guard", input) {
        Ok(path) => eprintln!("{target}: {what}; input saved as {}", path.display()),
        Err(error) => eprintln!("{target}: {what}; the input could not be saved: {error}"),
    }
}

/// What a run of one target did.
#[derive(Debug, Default)]
pub struct Report {
    /// Inputs run.
    pub executions: u64,
    /// Distinct outcomes seen.
    pub outcomes: usize,
    /// Inputs in the pool at the end.
    pub pool: usize,
    /// Crashing inputs saved.
    pub crashes: Vec<PathBuf>,
}

/// An outcome with its numbers and quoted text blanked, so that errors that differ only in a
/// length or in the bytes they echo count once.
fn signature(outcome: &str) -> String {
    let mut quoted = false;
    let mut signature = String::with_capacity(outcome.len());
    for c in outcome.chars() {
        match c {
            '"' | '`' => {
                quoted = !quoted;
                signature.push(c);
            }
            _ if quoted => {}
            _ if c.is_ascii_digit() => {
                if !signature.ends_with('#') {
                    signature.push('#');
                }
            }
            _ => signature.push(c),
        }
    }
    signature
}

/// Fuzzes `target` for `time`, starting the mutations from `seed`; saves crashing inputs under
/// `crashes_dir`. The watchdog, if given, brackets each input.
pub fn fuzz(
    target: &Target,
    time: Duration,
    seed: u64,
    crashes_dir: &std::path::Path,
    watchdog: Option<&Watchdog>,
) -> std::io::Result<Report> {
    let deadline = Instant::now() + time;
    let mut pool: Vec<Vec<u8>> = (target.seeds)();
    pool.extend(
        corpus::committed(target.name)?
            .into_iter()
            .map(|(_, bytes)| bytes),
    );
    let initial = pool.len();
    let mut rng = Rng::new(seed);
    let mut report = Report::default();
    let mut outcomes = HashSet::new();
    let mut failures = HashSet::new();
    let mut next = 0;
    while next < initial || Instant::now() < deadline {
        let input = if next < initial {
            next += 1;
            pool[next - 1].clone()
        } else {
            let mut input = pool[rng.below(pool.len())].clone();
            let other = &pool[rng.below(pool.len())];
            mutate::mutate(&mut rng, &mut input, other);
            input
        };
        if let Some(watchdog) = watchdog {
            watchdog.start();
        }
        let result = run_one(target, &input);
        if let Some(watchdog) = watchdog {
            watchdog.stop();
        }
        report.executions += 1;
        match result {
            Ok(outcome) => {
                if outcomes.insert(signature(&outcome)) && next >= initial && pool.len() < MAX_POOL
                {
                    pool.push(input);
                }
            }
            Err(failure) => {
                if failures.insert(signature(&failure.to_string())) {
                    let path = corpus::save(crashes_dir, failure.prefix(), &input)?;
                    eprintln!(
                        "{}: {failure}; input saved as {}",
                        target.name,
                        path.display()
                    );
                    report.crashes.push(path);
                }
            }
        }
    }
    report.outcomes = outcomes.len();
    report.pool = pool.len();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::Verdict;

    /// Inputs share the process-wide panic record: the tests that run them take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn fragile(input: &[u8]) -> Verdict {
        match input {
            [b'b', b'o', b'o', b'm', ..] => panic!("boom at {}", input.len()),
            b"bad" => Err("bad input".into()),
            b"worker" => {
                let _ = std::thread::spawn(|| panic!("a worker died")).join();
                Ok("the caller went on".into())
            }
            _ => Ok(format!("{} bytes", input.len())),
        }
    }

    fn target(seeds: fn() -> Vec<Vec<u8>>) -> Target {
        Target {
            name: "fragile",
            about: "panics on boom, refuses bad",
            run: fragile,
            seeds,
            seeds_end: crate::targets::SeedsEnd::Accepted,
        }
    }

    #[test]
    fn panics_violations_and_outcomes_are_told_apart() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let target = target(Vec::new);
        assert_eq!(run_one(&target, b"abc"), Ok("3 bytes".into()));
        assert_eq!(
            run_one(&target, b"bad"),
            Err(Failure::Violation("bad input".into()))
        );
        match run_one(&target, b"boom!") {
            Err(Failure::Panic(message)) => assert!(message.contains("boom at 5"), "{message}"),
            other => panic!("{other:?}"),
        }
        match run_one(&target, b"worker") {
            Err(Failure::Panic(message)) => assert!(message.contains("a worker died"), "{message}"),
            other => panic!("{other:?}"),
        }
        // The next input starts clean.
        assert_eq!(run_one(&target, b""), Ok("0 bytes".into()));
    }

    #[test]
    fn each_distinct_failure_is_saved_once() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let target = target(|| vec![b"boom".to_vec(), b"boom!".to_vec(), b"fine".to_vec()]);
        let report = fuzz(&target, Duration::ZERO, 1, dir.path(), None).unwrap();
        assert_eq!(report.executions, 3);
        assert_eq!(report.crashes.len(), 1, "{:?}", report.crashes);
        assert_eq!(std::fs::read(&report.crashes[0]).unwrap(), b"boom");
        let name = report.crashes[0].file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("panic-"), "{name}");
    }

    #[test]
    fn signatures_blank_numbers_and_quoted_text() {
        assert_eq!(
            signature("unknown database \"abc12\": 17 bytes of 2^8"),
            "unknown database \"\": # bytes of #^#"
        );
        assert_eq!(signature("`x` at 3"), "`` at #");
    }
}
