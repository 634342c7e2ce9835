//! Progress bars for long steps (drawn on stderr, hidden when it is not a terminal).

use std::sync::atomic::{AtomicUsize, Ordering};

use indicatif::{ProgressBar, ProgressStyle};
use obscura_pir::batch::merkle::MerkleTree;
use obscura_pir::batch::treepir::TreePirServer;
use obscura_pir::keyword::{KeywordOptions, KeywordServer};
use obscura_pir::lwe::{Server, SetupOptions};
use obscura_pir::PirError;

/// Sets up a database of fixed-size records with a progress bar over the hint product.
pub fn setup_with_bar(
    data: &[u8],
    record_bytes: u64,
    options: SetupOptions,
    message: &'static str,
) -> Result<Server, PirError> {
    with_bar(message, |progress| {
        Server::setup(data, record_bytes, options, progress)
    })
}

/// Sets up a database of variable-length values with a progress bar over the hint product.
pub fn values_with_bar(
    values: &[Vec<u8>],
    options: SetupOptions,
    message: &'static str,
) -> Result<Server, PirError> {
    with_bar(message, |progress| {
        Server::setup_values(values, options, progress)
    })
}

/// Sets up a keyword database with a progress bar over the fill, then the hint product.
pub fn keyword_with_bar(
    pairs: &[(Vec<u8>, Vec<u8>)],
    options: KeywordOptions,
) -> Result<KeywordServer, PirError> {
    with_bars(&["filling the slots", "computing the hint"], |progress| {
        KeywordServer::setup(pairs, options, progress)
    })
}

/// Sets up a TreePIR database of `tree` with a progress bar over its colour classes.
pub fn treepir_with_bar(
    tree: &MerkleTree,
    options: SetupOptions,
    message: &'static str,
) -> Result<TreePirServer, PirError> {
    with_bar(message, |progress| {
        TreePirServer::setup(tree, options, progress)
    })
}

/// An empty progress bar in the style of every long step: message, bar, percent, elapsed, ETA.
pub fn bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {percent}% ({elapsed}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// Runs `setup` with a progress bar labelled `message` that its progress callback advances.
fn with_bar<S>(
    message: &str,
    setup: impl FnOnce(&(dyn Fn(u64, u64) + Sync)) -> Result<S, PirError>,
) -> Result<S, PirError> {
    with_bars(&[message], setup)
}

/// [`with_bar`] for a setup of several steps, each reported from zero to its own total (each
/// step's total differs from the one before): a new total starts the bar (and its time
/// estimate) again, labelled with the next of `steps`.
fn with_bars<S>(
    steps: &[&str],
    setup: impl FnOnce(&(dyn Fn(u64, u64) + Sync)) -> Result<S, PirError>,
) -> Result<S, PirError> {
    let bar = bar();
    let step = AtomicUsize::new(0);
    bar.set_message(steps[0].to_string());
    let server = setup(&|done, total| {
        let length = bar.length();
        if length != Some(total) {
            if length != Some(0) {
                let next = (step.fetch_add(1, Ordering::Relaxed) + 1).min(steps.len() - 1);
                bar.set_message(steps[next].to_string());
            }
            bar.reset();
            bar.set_length(total);
        }
        bar.set_position(done);
    });
    bar.finish_and_clear();
    server
}
