//! The process's memory while a design is measured.
//!
//! Two figures, because a store that reads its files through `mmap` has two
//! kinds of resident pages: its own (heap: memtables, block cache, the
//! lab's data), which the engine's settings bound, and pages of its files
//! mapped in, which are the OS's page cache and grow with the data read.
//! The kernel keeps a peak of the sum (`VmHWM`) but not of the heap alone,
//! so a thread samples the heap (`RssAnon`) every few milliseconds; a spike
//! shorter than that can be missed.
//!
//! Linux only; elsewhere the figures are `None`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the heap is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// Peaks of the process's memory over a watch, and where they stood at its
/// start, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peaks {
    /// Peak anonymous resident memory (heap), sampled.
    pub heap: u64,
    /// Heap at the start of the watch.
    pub heap_at_start: u64,
    /// Peak resident memory, mapped file pages included (`VmHWM`).
    pub resident: u64,
    /// Resident memory at the start of the watch.
    pub resident_at_start: u64,
}

/// Watches the process's memory from [`Watch::start`] to [`Watch::finish`].
pub struct Watch {
    heap_at_start: u64,
    resident_at_start: u64,
    heap_peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// The sampling thread, until it is stopped (by `finish`, or by drop
    /// when a measurement ends early).
    sampler: Option<JoinHandle<()>>,
}

impl Watch {
    /// Resets the kernel's resident peak and starts sampling the heap.
    /// `None` where the OS does not tell (not Linux).
    #[must_use]
    pub fn start() -> Option<Watch> {
        // "5" resets VmHWM (Linux 4.0+); if refused, the peak includes what
        // came before.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let heap_at_start = status_bytes("RssAnon:")?;
        let heap_peak = Arc::new(AtomicU64::new(heap_at_start));
        let stop = Arc::new(AtomicBool::new(false));
        let (peak, done) = (heap_peak.clone(), stop.clone());
        let sampler = std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(status_bytes("RssAnon:").unwrap_or(0), Ordering::Relaxed);
                std::thread::sleep(SAMPLE_EVERY);
            }
        });
        let resident_at_start = status_bytes("VmRSS:").unwrap_or(0);
        Some(Watch { heap_at_start, resident_at_start, heap_peak, stop, sampler: Some(sampler) })
    }

    /// Stops sampling and gives the peaks.
    #[must_use]
    pub fn finish(mut self) -> Peaks {
        self.stop_sampling();
        let heap = self.heap_peak.load(Ordering::Relaxed).max(status_bytes("RssAnon:").unwrap_or(0));
        Peaks {
            heap,
            heap_at_start: self.heap_at_start,
            resident: status_bytes("VmHWM:").unwrap_or(0),
            resident_at_start: self.resident_at_start,
        }
    }

    fn stop_sampling(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop_sampling();
    }
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_field(&status, field)
}

fn status_field(status: &str, field: &str) -> Option<u64> {
    let kib: u64 =
        status.lines().find_map(|l| l.strip_prefix(field))?.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_in_bytes() {
        let status = "Name:\tcellar\nVmHWM:\t  402612 kB\nVmRSS:\t  393216 kB\nRssAnon:\t  268000 kB\n";
        assert_eq!(status_field(status, "VmHWM:"), Some(402_612 * 1024));
        assert_eq!(status_field(status, "RssAnon:"), Some(268_000 * 1024));
        assert_eq!(status_field(status, "RssShmem:"), None);
        assert_eq!(status_field("RssAnon: lots\n", "RssAnon:"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_watch_sees_the_heap_grow() {
        let watch = Watch::start().expect("Linux tells");
        let block = vec![1u8; 64 << 20];
        // Held until the sampler has seen it (a loaded machine may not
        // schedule it for a while), at most a few seconds.
        let seen = std::time::Instant::now();
        while watch.heap_peak.load(Ordering::Relaxed) < watch.heap_at_start + (60 << 20)
            && seen.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(SAMPLE_EVERY);
        }
        std::hint::black_box(&block);
        drop(block);
        let peaks = watch.finish();
        assert!(peaks.heap >= peaks.heap_at_start + (60 << 20), "{peaks:?}");
        assert!(peaks.resident >= peaks.heap, "{peaks:?}");
    }
}
