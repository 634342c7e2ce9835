//! How a run shows the progress of its long setups: the caller decides (the `obscura` command
//! draws bars on stderr; [`Silent`] shows nothing).

/// Shows the progress of a setup.
pub trait Progress: Sync {
    /// Starts showing a setup made of the named `steps`, each reported from zero to its own
    /// total; returns the callback the setup reports `(done, total)` to. The display ends when
    /// the callback is dropped.
    fn start(&self, steps: &[&str]) -> Box<dyn Fn(u64, u64) + Sync + '_>;
}

/// Shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _steps: &[&str]) -> Box<dyn Fn(u64, u64) + Sync + '_> {
        Box::new(|_, _| {})
    }
}
