//! The resident memory a server setup adds at its peak, measured by the process's own
//! high-water mark (Linux: `VmHWM` of `/proc/self/status`, reset by writing `5` to
//! `/proc/self/clear_refs`), so that memory the harness held before (the generated data, a
//! bandwidth buffer since freed) does not count.

/// A measurement started before a setup.
pub struct PeakMeter {
    /// Resident bytes when the measurement started.
    resident: u64,
}

impl PeakMeter {
    /// Resets the high-water mark to the resident size now and notes that size; `None` where
    /// the system offers neither (then no figure is reported rather than a wrong one).
    pub fn start() -> Option<Self> {
        std::fs::write("/proc/self/clear_refs", "5").ok()?;
        let resident = status_bytes("VmRSS")?;
        Some(Self { resident })
    }

    /// Bytes the high-water mark has risen above the resident size at the start.
    pub fn peak_bytes(&self) -> Option<u64> {
        Some(status_bytes("VmHWM")?.saturating_sub(self.resident))
    }
}

/// The peak a setup run by `f` adds to the resident memory (see [`PeakMeter`]), with its value.
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, Option<u64>) {
    let meter = PeakMeter::start();
    let value = f();
    (value, meter.and_then(|meter| meter.peak_bytes()))
}

/// A field of `/proc/self/status` given in kB, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kb_field(&status, field)
}

/// The value of `field` (`VmHWM:    1234 kB`) in `status`, in bytes.
fn parse_kb_field(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let kb = line.strip_prefix(field)?.strip_prefix(':')?;
        let kb: u64 = kb.trim().strip_suffix("kB")?.trim().parse().ok()?;
        kb.checked_mul(1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_bytes() {
        let status = "Name:\tx\nVmHWM:\t    2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(parse_kb_field(status, "VmHWM"), Some(2 << 20));
        assert_eq!(parse_kb_field(status, "VmRSS"), Some(1 << 20));
        assert_eq!(parse_kb_field(status, "VmSwap"), None);
        assert_eq!(parse_kb_field("VmHWM: lots", "VmHWM"), None);
    }

    /// A setup that touches 64 MiB is measured at about 64 MiB (other tests running beside it
    /// allocate and free a little), whatever the process held before (on systems with the
    /// high-water mark; elsewhere nothing is reported).
    #[test]
    fn the_peak_counts_what_the_setup_touched() {
        let earlier = vec![1u8; 256 << 20];
        drop(std::hint::black_box(earlier));
        let (sum, peak) = peak_of(|| {
            let buffer = vec![1u8; 64 << 20];
            std::hint::black_box(&buffer)
                .iter()
                .map(|&b| u64::from(b))
                .sum::<u64>()
        });
        assert_eq!(sum, 64 << 20);
        if let Some(peak) = peak {
            assert!(peak >= 60 << 20, "{peak}");
            assert!(peak < 200 << 20, "{peak}");
        }
    }
}
