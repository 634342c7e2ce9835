//! Progress bars for long steps (drawn on stderr, hidden when it is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar for the hint product of a database setup; `update(done, total)` advances it.
pub fn setup_bar(message: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {percent}% ({elapsed}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// Moves `bar` to `done` of `total`.
pub fn update(bar: &ProgressBar, done: u64, total: u64) {
    bar.set_length(total);
    bar.set_position(done);
}
