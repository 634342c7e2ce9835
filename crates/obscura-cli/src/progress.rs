//! Progress bars for long steps (drawn on stderr, hidden when it is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};
use obscura_store::build::Steps;

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
pub fn with_bar<S, E>(
    message: &str,
    setup: impl FnOnce(&(dyn Fn(u64, u64) + Sync)) -> Result<S, E>,
) -> Result<S, E> {
    with_bars(&[message], setup)
}

/// [`with_bar`] for a setup of several steps (see [`steps_bar`]).
pub fn with_bars<S, E>(
    steps: &[&str],
    setup: impl FnOnce(&(dyn Fn(u64, u64) + Sync)) -> Result<S, E>,
) -> Result<S, E> {
    setup(&steps_bar(steps))
}

/// A progress callback for a setup of several steps, each reported from zero to its own total
/// (see [`Steps`]): a new step starts the bar (and its time estimate) again, labelled with its
/// name. The bar is cleared when the callback is dropped.
fn steps_bar(steps: &[&str]) -> impl Fn(u64, u64) + Sync {
    let bar = ClearOnDrop(bar());
    let steps = Steps::new(steps);
    bar.0.set_message(steps.first().to_string());
    move |done, total| {
        let bar = &bar.0;
        let (name, starts) = steps.step(total);
        if starts {
            bar.set_message(name.to_string());
            bar.reset();
            bar.set_length(total);
        }
        bar.set_position(done);
    }
}

/// A progress bar cleared from the terminal when dropped.
struct ClearOnDrop(ProgressBar);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Progress bars on stderr for the setups of `obscura bench`.
pub struct Bars;

impl obscura_bench::Progress for Bars {
    fn start(&self, steps: &[&str]) -> Box<dyn Fn(u64, u64) + Sync + '_> {
        Box::new(steps_bar(steps))
    }
}
