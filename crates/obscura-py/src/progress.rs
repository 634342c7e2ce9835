//! Progress reports from long calls to a Python callable `progress(stage, done, total)`, at most
//! a few hundred times per stage whatever the work's size (each call takes the GIL).

use std::sync::Mutex;

use obscura_store::build::Steps;
use pyo3::prelude::*;

/// Reports per stage, at most: one per half percent, plus the start and the end.
const REPORTS_PER_STAGE: u64 = 200;

/// A Python progress callable, throttled. Errors it raises are kept and raised when the call
/// that reports to it ends.
pub struct Reporter {
    callback: Option<Py<PyAny>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    stage: String,
    total: u64,
    last: u64,
    error: Option<PyErr>,
}

impl Reporter {
    /// A reporter to `callback` (`None`: reports go nowhere).
    pub fn new(callback: Option<Py<PyAny>>) -> Self {
        Self {
            callback,
            state: Mutex::new(State::default()),
        }
    }

    /// Reports `done` of `total` in `stage`, unless the last report of the stage was less than
    /// a [`REPORTS_PER_STAGE`]th of the total ago.
    pub fn report(&self, stage: &str, done: u64, total: u64) {
        let Some(callback) = &self.callback else {
            return;
        };
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.error.is_some() {
            return;
        }
        let new_stage = state.stage != stage || state.total != total;
        let step = (total / REPORTS_PER_STAGE).max(1);
        if !new_stage && done != total && done < state.last.saturating_add(step) {
            return;
        }
        if new_stage {
            state.stage = stage.to_string();
            state.total = total;
        }
        state.last = done;
        let result = Python::attach(|py| callback.call1(py, (stage, done, total)).map(drop));
        state.error = result.err();
    }

    /// Ends the reporting: the first error the callable raised, if any.
    pub fn finish(self) -> PyResult<()> {
        let state = self
            .state
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.error.map_or(Ok(()), Err)
    }
}

/// Labels the `(done, total)` reports of a setup of several `steps` with the step's name (see
/// [`Steps`]).
pub fn steps<'a>(steps: &'a [&'a str], reporter: &'a Reporter) -> impl Fn(u64, u64) + Sync + 'a {
    let steps = Steps::new(steps);
    move |done, total| reporter.report(steps.step(total).0, done, total)
}
