//! Guards that catch what `catch_unwind` cannot: an allocation larger than any honest input
//! needs, and an input that runs for too long. Both report through a hook (the runner's saves
//! the input) and end the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The largest single allocation allowed by default: 256 MiB.
pub const DEFAULT_ALLOCATION_LIMIT: usize = 256 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_ALLOCATION_LIMIT);
static REPORTING: AtomicBool = AtomicBool::new(false);
static HOOK: OnceLock<fn(&str)> = OnceLock::new();

/// The system allocator, refusing any single allocation above the limit: it calls the hook
/// set by [`on_failure`] with a description and aborts. Install it with `#[global_allocator]`
/// in every binary that runs targets.
pub struct LimitedAllocator;

// SAFETY: every call is forwarded to `System` unchanged; the only addition is a size check
// that may end the process before forwarding.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for LimitedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        // SAFETY: forwarded with the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Ends the process, after a report, when `size` exceeds the limit.
fn check(size: usize) {
    if size > LIMIT.load(Ordering::Relaxed) && !REPORTING.swap(true, Ordering::SeqCst) {
        fail(&format!(
            "allocation of {size} bytes, above the limit of {} bytes",
            LIMIT.load(Ordering::Relaxed)
        ));
    }
}

/// Calls the hook with `what` and aborts (the hook's own allocations are small ones).
fn fail(what: &str) -> ! {
    if let Some(hook) = HOOK.get() {
        hook(what);
    } else {
        eprintln!("error: {what}");
    }
    std::process::abort()
}

/// Sets the largest single allocation [`LimitedAllocator`] allows.
pub fn set_allocation_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// Sets what runs, once, before the process ends on a guard: `hook(what went wrong)`. The first
/// hook set stays.
pub fn on_failure(hook: fn(&str)) {
    let _ = HOOK.set(hook);
}

/// A watchdog thread that ends the process (after the hook) when one input runs for longer than
/// `limit`; inputs are bracketed by [`Watchdog::start`] and [`Watchdog::stop`].
pub struct Watchdog {
    epoch: Instant,
    /// Milliseconds since `epoch` when the current input started, plus one; 0 when idle.
    started: AtomicU64,
}

impl Watchdog {
    /// Starts the watchdog thread.
    pub fn spawn(limit: Duration) -> &'static Self {
        let watchdog: &'static Self = Box::leak(Box::new(Self {
            epoch: Instant::now(),
            started: AtomicU64::new(0),
        }));
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(200));
            let started = watchdog.started.load(Ordering::SeqCst);
            let now = watchdog.now();
            if started != 0
                && now.saturating_sub(started - 1) > limit.as_millis() as u64
                && !REPORTING.swap(true, Ordering::SeqCst)
            {
                fail(&format!("one input ran for more than {limit:?}"));
            }
        });
        watchdog
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Marks the start of an input.
    pub fn start(&self) {
        self.started.store(self.now() + 1, Ordering::SeqCst);
    }

    /// Marks the end of an input.
    pub fn stop(&self) {
        self.started.store(0, Ordering::SeqCst);
    }
}
