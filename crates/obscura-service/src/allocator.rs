//! The C allocator's handling of freed memory, for a server process.
//!
//! A keyword query is a 4.5 MB body, read into a buffer and decoded into another of the same
//! size. By default glibc serves allocations above 128 KiB with fresh mappings and returns freed
//! memory to the system, so each such query faults in about 10 MB of new pages (2,000 to 3,000
//! faults per request, measured), several milliseconds on a virtual machine. Kept instead, the
//! same pages serve request after request.

/// Makes the C allocator (glibc) keep freed memory for reuse: allocations up to 32 MiB come from
/// its heaps instead of fresh mappings, and up to 1 GiB freed at the top of a heap stays with
/// the process. Process-wide, so for a server's binary to call once at its start (`obscura
/// serve` does); it does nothing with other C libraries.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `mallopt` only sets the allocator's parameters, under the allocator's own lock; it
    // touches no memory of the caller's, and a value it refuses leaves the default in place.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}
