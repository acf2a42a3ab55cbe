//! What machine and disk a lab report ran on, as far as the OS tells.
//!
//! Numbers mean little without the machine under them: an fsync costs
//! microseconds on an SSD with a write cache and milliseconds on a spinning
//! disk. The facts come from `sysinfo` (CPU, memory, OS, the mounted disks)
//! and `statvfs` (the space left where the databases go).
//!
//! Promise: nothing here fails or panics. A fact the OS does not give (a
//! container hiding its disks, another OS) is `"unknown"` or `None`; a
//! report without a disk is still a report.

use std::path::{Path, PathBuf};

use sysinfo::{CpuRefreshKind, DiskKind, Disks, MemoryRefreshKind, RefreshKind, System};

/// The machine and the disk under a directory, as far as the OS tells.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// The CPU's brand.
    pub cpu: String,
    /// Threads this process may run at once (`available_parallelism`:
    /// cgroup and affinity limits included).
    pub cores: usize,
    /// The machine's memory.
    pub memory_bytes: Option<u64>,
    /// The OS and its kernel, e.g. `"Linux (Debian GNU/Linux 12), kernel
    /// 6.1.0-18-amd64"`.
    pub os: String,
    /// The device of the mount holding the directory, e.g. `"/dev/vda1"`.
    pub device: String,
    /// File system type of that mount, e.g. `"ext4"`.
    pub filesystem: String,
    /// Whether the disk says it is rotational; `None` where it does not
    /// say. Virtual disks report what the hypervisor claims, often
    /// "rotational" whatever the host medium.
    pub rotational: Option<bool>,
    /// Bytes an unprivileged writer may still use (`statvfs` `f_bavail`).
    pub free_bytes: Option<u64>,
    /// Size of the file system (`statvfs` `f_blocks`).
    pub total_bytes: Option<u64>,
}

/// Describes this machine and the disk holding `dir`. `dir` need not exist
/// yet: its nearest existing ancestor is looked at.
#[must_use]
pub fn describe(dir: &Path) -> Machine {
    let dir = existing_ancestor(dir);
    let system = System::new_with_specifics(
        RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing()).with_memory(MemoryRefreshKind::nothing().with_ram()),
    );
    let disks = Disks::new_with_refreshed_list();
    let disk = disks
        .list()
        .iter()
        .filter(|d| dir.starts_with(d.mount_point()))
        .max_by_key(|d| d.mount_point().as_os_str().len());
    let space = rustix::fs::statvfs(&dir).ok();
    Machine {
        cpu: system.cpus().first().and_then(|c| non_empty(c.brand())).unwrap_or_else(unknown),
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        memory_bytes: Some(system.total_memory()).filter(|&m| m > 0),
        os: os_name(System::long_os_version().as_deref(), System::kernel_version().as_deref()),
        device: disk.and_then(|d| non_empty(&d.name().to_string_lossy())).unwrap_or_else(unknown),
        filesystem: disk.and_then(|d| non_empty(&d.file_system().to_string_lossy())).unwrap_or_else(unknown),
        rotational: disk.and_then(|d| match d.kind() {
            DiskKind::HDD => Some(true),
            DiskKind::SSD => Some(false),
            DiskKind::Unknown(_) => None,
        }),
        free_bytes: space.as_ref().and_then(|s| s.f_bavail.checked_mul(s.f_frsize)),
        total_bytes: space.as_ref().and_then(|s| s.f_blocks.checked_mul(s.f_frsize)),
    }
}

impl Machine {
    /// Markdown bullet lines for the report, e.g.
    ///
    /// ```text
    /// - CPU: AMD EPYC 7B13 (2 cores), 24.0 GiB memory
    /// - OS: Linux (Debian GNU/Linux 12), kernel 6.1.0-18-amd64
    /// - Disk: /dev/vda1 (ext4, SSD), 37.2 GiB free of 50.0 GiB
    /// ```
    #[must_use]
    pub fn markdown(&self) -> String {
        format!("- CPU: {}\n- OS: {}\n- Disk: {}\n", self.cpu_line(), self.os, self.disk_line())
    }

    fn cpu_line(&self) -> String {
        let memory = self.memory_bytes.map_or_else(|| "memory unknown".into(), |m| format!("{} memory", bytes(m)));
        format!("{} ({} cores), {memory}", self.cpu, self.cores)
    }

    fn disk_line(&self) -> String {
        let medium = match self.rotational {
            Some(false) => "SSD",
            Some(true) => "rotational disk",
            None => "unknown medium",
        };
        let space = match (self.free_bytes, self.total_bytes) {
            (Some(free), Some(total)) => format!("{} free of {}", bytes(free), bytes(total)),
            _ => "free space unknown".into(),
        };
        format!("{} ({}, {medium}), {space}", self.device, self.filesystem)
    }
}

fn unknown() -> String {
    "unknown".into()
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The OS's long name and its kernel, as far as told.
fn os_name(long_name: Option<&str>, kernel: Option<&str>) -> String {
    let name = long_name.and_then(non_empty).unwrap_or_else(|| std::env::consts::OS.to_owned());
    match kernel.and_then(non_empty) {
        Some(k) => format!("{name}, kernel {k}"),
        None => name,
    }
}

/// `dir` made absolute with symlinks resolved, or else its nearest ancestor
/// that can be; `dir` itself as a last resort.
fn existing_ancestor(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    abs.ancestors().find_map(|a| std::fs::canonicalize(a).ok()).unwrap_or(abs)
}

/// Binary units with one decimal: `1.5 KiB`, `24.0 GiB`.
#[allow(clippy::cast_precision_loss, reason = "one decimal shown")]
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if unit == "B" { format!("{n} B") } else { format!("{v:.1} {unit}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(24_683_656 * 1024), "23.5 GiB");
        assert_eq!(bytes(u64::MAX), "16384.0 PiB");
    }

    #[test]
    fn os_names() {
        assert_eq!(
            os_name(Some("Linux (Debian GNU/Linux 12)"), Some("6.1.0")),
            "Linux (Debian GNU/Linux 12), kernel 6.1.0"
        );
        assert_eq!(os_name(None, Some(" ")), std::env::consts::OS);
    }

    fn sample() -> Machine {
        Machine {
            cpu: "AMD EPYC 7B13".into(),
            cores: 2,
            memory_bytes: Some(24 << 30),
            os: "Linux 6.1.0-18-amd64".into(),
            device: "/dev/vda1".into(),
            filesystem: "ext4".into(),
            rotational: Some(false),
            free_bytes: Some(37_580_963_840),
            total_bytes: Some(50 << 30),
        }
    }

    #[test]
    fn markdown_lines() {
        assert_eq!(
            sample().markdown(),
            "- CPU: AMD EPYC 7B13 (2 cores), 24.0 GiB memory\n\
             - OS: Linux 6.1.0-18-amd64\n\
             - Disk: /dev/vda1 (ext4, SSD), 35.0 GiB free of 50.0 GiB\n"
        );
        let m = Machine { rotational: Some(true), ..sample() };
        assert!(m.markdown().contains("- Disk: /dev/vda1 (ext4, rotational disk), 35.0 GiB"));
        let unknown = Machine {
            cpu: unknown(),
            memory_bytes: None,
            device: unknown(),
            filesystem: unknown(),
            rotational: None,
            free_bytes: None,
            ..sample()
        };
        assert_eq!(
            unknown.markdown(),
            "- CPU: unknown (2 cores), memory unknown\n- OS: Linux 6.1.0-18-amd64\n\
             - Disk: unknown (unknown, unknown medium), free space unknown\n"
        );
    }

    #[test]
    fn describe_never_panics() {
        for dir in ["/", ".", "/nonexistent/deeper/still", "", "relative/nowhere"] {
            let m = describe(Path::new(dir));
            assert!(m.cores >= 1);
            assert!(!m.cpu.is_empty() && !m.os.is_empty() && !m.device.is_empty());
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_root_disk_is_found() {
        let m = describe(Path::new("/"));
        println!("{}", m.markdown());
        assert!(m.free_bytes.is_some() && m.total_bytes >= m.free_bytes);
        assert!(m.memory_bytes.is_some() && m.cpu != "unknown");
    }
}
