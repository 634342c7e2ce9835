//! Progress bars for long steps (drawn on stderr, hidden when it is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};
use obscura_pir::lwe::{Server, SetupOptions};
use obscura_pir::PirError;

/// Sets up a database with a progress bar over the hint product, labelled `message`.
pub fn setup_with_bar(
    data: &[u8],
    record_bytes: u64,
    options: SetupOptions,
    message: &'static str,
) -> Result<Server, PirError> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {percent}% ({elapsed}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message);
    let server = Server::setup(data, record_bytes, options, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    server
}
