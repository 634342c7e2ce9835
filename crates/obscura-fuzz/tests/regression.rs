//! Every seed and every committed input (corpus and saved crashes) through its target: seeds
//! must be accepted, and nothing may panic, break an invariant, allocate more than the guard
//! allows or hang.

use obscura_fuzz::corpus;
use obscura_fuzz::guard::{self, LimitedAllocator};
use obscura_fuzz::runner::{self, run_one};
use obscura_fuzz::targets;

#[global_allocator]
static ALLOCATOR: LimitedAllocator = LimitedAllocator;

#[test]
fn every_seed_is_accepted_and_every_committed_input_is_handled() {
    guard::on_failure(runner::save_current);
    let mut failures = Vec::new();
    for target in targets::all() {
        for (i, seed) in (target.seeds)().iter().enumerate() {
            let outcome = run_one(&target, seed);
            if !outcome
                .as_deref()
                .is_ok_and(|outcome| target.seeds_end.matches(outcome))
            {
                failures.push(format!("{} seed {i}: {outcome:?}", target.name));
            }
        }
        let committed = corpus::committed(target.name).unwrap();
        assert!(
            !committed.is_empty(),
            "{} has no committed corpus",
            target.name
        );
        for (path, input) in committed {
            if let Err(failure) = run_one(&target, &input) {
                failures.push(format!("{}: {failure}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
