//! What machine and disk a lab report ran on, as far as the OS tells.
//!
//! Numbers mean little without the machine under them: an fsync costs
//! microseconds on an SSD with a write cache and milliseconds on a spinning
//! disk. Linux tells through `/proc` and `/sys`; each file is parsed by a pure
//! function of its text (tested on samples below) and read by [`describe`].
//!
//! Promise: nothing here fails or panics. A file missing (another OS, a
//! container hiding `/sys`) or odd gives `"unknown"` or `None` for the
//! fields it would have filled; a report without a disk model is still a
//! report.

use std::fs;
use std::path::{Path, PathBuf};

/// The machine and the disk under a directory, as far as the OS tells
/// (Linux: /proc and /sys; elsewhere fields are "unknown").
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu: String,
    /// Threads this process may run at once (`available_parallelism`:
    /// cgroup and affinity limits included).
    pub cores: usize,
    /// `MemTotal` from `/proc/meminfo`.
    pub memory_bytes: Option<u64>,
    /// Kernel name and release, e.g. `"Linux 6.1.0-18-amd64"`; else the
    /// target OS, e.g. `"macos"`.
    pub os: String,
    /// Source of the mount holding the directory, e.g. `"/dev/vda1"` (or
    /// `"overlay"`, `"tmpfs"` for mounts with no block device).
    pub device: String,
    /// File system type of that mount, e.g. `"ext4"`.
    pub filesystem: String,
    /// The kernel's `queue/rotational` for the device (its disk's, for a
    /// partition); `None` without a block device. Virtual disks report what
    /// the hypervisor claims, often "rotational" whatever the host medium.
    pub rotational: Option<bool>,
    /// `device/model` of the disk, trimmed, if the driver exposes one.
    pub disk_model: Option<String>,
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
    let mount = read("/proc/self/mountinfo").and_then(|m| mount_of(&m, &dir));
    let block = mount.as_ref().and_then(block_dir);
    let space = rustix::fs::statvfs(&dir).ok();
    Machine {
        cpu: read("/proc/cpuinfo").and_then(|c| cpu_model(&c)).unwrap_or_else(unknown),
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        memory_bytes: read("/proc/meminfo").and_then(|m| mem_total(&m)),
        os: os_name(read("/proc/sys/kernel/ostype").as_deref(), read("/proc/sys/kernel/osrelease").as_deref()),
        device: mount.as_ref().map_or_else(unknown, |m| m.source.clone()),
        filesystem: mount.as_ref().map_or_else(unknown, |m| m.fstype.clone()),
        rotational: block.as_ref().and_then(|b| disk_file(b, "queue/rotational")).and_then(|r| rotational(&r)),
        disk_model: block.as_ref().and_then(|b| disk_file(b, "device/model")).and_then(|m| non_empty(&m)),
        free_bytes: space.as_ref().and_then(|s| s.f_bavail.checked_mul(s.f_frsize)),
        total_bytes: space.as_ref().and_then(|s| s.f_blocks.checked_mul(s.f_frsize)),
    }
}

impl Machine {
    /// Markdown bullet lines for the report, e.g.
    ///
    /// ```text
    /// - CPU: AMD EPYC 7B13 (2 cores), 24.0 GiB memory
    /// - OS: Linux 6.1.0-18-amd64
    /// - Disk: /dev/vda1 (ext4, SSD, model QEMU HARDDISK), 37.2 GiB free of 50.0 GiB
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
        let model = self.disk_model.as_ref().map_or_else(String::new, |m| format!(", model {m}"));
        let space = match (self.free_bytes, self.total_bytes) {
            (Some(free), Some(total)) => format!("{} free of {}", bytes(free), bytes(total)),
            _ => "free space unknown".into(),
        };
        format!("{} ({}, {medium}{model}), {space}", self.device, self.filesystem)
    }
}

fn unknown() -> String {
    "unknown".into()
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok()
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// `dir` made absolute with symlinks resolved, or else its nearest ancestor
/// that can be; `dir` itself as a last resort.
fn existing_ancestor(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    abs.ancestors().find_map(|a| fs::canonicalize(a).ok()).unwrap_or(abs)
}

/// Binary units with one decimal: `1.5 KiB`, `24.0 GiB`.
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

/// The CPU's name: x86's `model name`, else the keys ARM boards (`Model`,
/// `Hardware`), MIPS (`cpu model`) and POWER (`cpu`) use.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware", "cpu model", "cpu"].into_iter().find_map(|key| field(cpuinfo, key))
}

/// The value of the first `key : value` line with that key.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().filter_map(|l| l.split_once(':')).find(|(k, _)| k.trim() == key).and_then(|(_, v)| non_empty(v))
}

/// `MemTotal:  24683656 kB` → bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let mut words = line.split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        None => Some(n),
        Some("kB") => n.checked_mul(1024),
        Some(_) => None,
    }
}

/// `"Linux 6.1.0-18-amd64"` from `/proc/sys/kernel/{ostype,osrelease}`,
/// else the OS the binary was built for.
fn os_name(ostype: Option<&str>, release: Option<&str>) -> String {
    match (ostype.and_then(non_empty), release.and_then(non_empty)) {
        (Some(t), Some(r)) => format!("{t} {r}"),
        _ => std::env::consts::OS.to_string(),
    }
}

/// `"0"` → not rotational (SSD, NVMe), `"1"` → rotational.
fn rotational(queue_rotational: &str) -> Option<bool> {
    match queue_rotational.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// One line of `/proc/self/mountinfo`, the fields we use.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// `major:minor` of the device (`0:N` for mounts without one).
    dev: String,
    point: PathBuf,
    fstype: String,
    source: String,
}

/// The mount holding `path` (absolute, symlinks resolved): the one whose
/// mount point is the longest component-wise prefix of `path`. Of mounts
/// on the same point the last listed wins: it was mounted over the others.
fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    mountinfo
        .lines()
        .filter_map(parse_mount)
        .filter(|m| path.starts_with(&m.point))
        .max_by_key(|m| m.point.components().count())
}

/// Parses `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`:
/// id, parent, major:minor, root, mount point, options, optional fields up
/// to `-`, then fstype, source, super options (proc(5)). `None` if short.
fn parse_mount(line: &str) -> Option<Mount> {
    let mut fields = line.split_ascii_whitespace();
    let dev = fields.nth(2)?.to_string();
    let point = PathBuf::from(unescape(fields.nth(1)?));
    let mut tail = fields.skip_while(|&f| f != "-").skip(1);
    let fstype = unescape(tail.next()?);
    let source = unescape(tail.next()?);
    Some(Mount { dev, point, fstype, source })
}

/// Undoes mountinfo's octal escapes (`\040` space, `\011` tab, `\012`
/// newline, `\134` backslash); anything else is kept as written.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(byte) = octal(&b[i..]) {
            out.push(byte);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte of a `\ooo` escape at the start of `s`.
fn octal(s: &[u8]) -> Option<u8> {
    let digits = s.strip_prefix(b"\\")?.get(..3)?;
    if !digits.iter().all(|c| (b'0'..=b'7').contains(c)) {
        return None;
    }
    u8::try_from(digits.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'))).ok()
}

/// The `/sys` directory of the mount's block device: by the device node's
/// name (`/dev/mapper/x` resolves to `dm-0`), else by `major:minor` (for
/// sources like `/dev/root` that name no node). `None` for overlay, tmpfs
/// and the like, whose `0:N` numbers name no block device.
fn block_dir(mount: &Mount) -> Option<PathBuf> {
    let by_name = mount
        .source
        .starts_with("/dev/")
        .then(|| fs::canonicalize(&mount.source).ok())
        .flatten()
        .and_then(|node| node.file_name().map(|n| Path::new("/sys/class/block").join(n)));
    let by_number = Path::new("/sys/dev/block").join(&mount.dev);
    by_name.into_iter().chain([by_number]).find_map(|d| fs::canonicalize(d).ok())
}

/// `rel` under the block device's directory, or under its disk's for a
/// partition (`.../vda/vda1` → `.../vda`), which holds the queue and model.
fn disk_file(block: &Path, rel: &str) -> Option<String> {
    let disk = if block.join("partition").exists() { block.parent()? } else { block };
    read(disk.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A container: overlay root, tmpfs /tmp, a host directory bound on
    /// /work, a mount point with a space, /dev/pts mounted twice.
    const MOUNTINFO: &str = "\
736 650 0:58 / / rw,relatime master:324 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB:/var/lib/docker/overlay2/l/CD,upperdir=/var/lib/docker/overlay2/e1/diff,workdir=/var/lib/docker/overlay2/e1/work
737 736 0:61 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
738 736 0:62 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
739 738 0:63 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620,ptmxmode=666
740 738 0:70 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts-again rw,mode=600
745 736 0:64 / /tmp rw,nosuid,nodev shared:7 - tmpfs tmpfs rw,size=1048576k
746 736 259:2 /home/ana/src /work rw,relatime shared:1 master:2 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
747 736 259:2 /var/lib/docker/containers/e1/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/nvme0n1p2 rw
748 736 8:17 / /mnt/my\\040disk rw,relatime - xfs /dev/sdb1 rw,attr2,inode64
749 736 0:65 / /workshop rw - tmpfs tmpfs rw
";

    fn mount(path: &str) -> Option<(String, String)> {
        mount_of(MOUNTINFO, Path::new(path)).map(|m| (m.source, m.fstype))
    }

    #[allow(clippy::unnecessary_wraps, reason = "compared with `mount`'s answer")]
    fn pair(source: &str, fstype: &str) -> Option<(String, String)> {
        Some((source.into(), fstype.into()))
    }

    #[test]
    fn mount_is_the_longest_mount_point_prefix() {
        assert_eq!(mount("/work/main/src"), pair("/dev/nvme0n1p2", "ext4"));
        assert_eq!(mount("/work"), pair("/dev/nvme0n1p2", "ext4"));
        assert_eq!(mount("/tmp/labscratch"), pair("tmpfs", "tmpfs"));
        assert_eq!(mount("/"), pair("overlay", "overlay"));
        assert_eq!(mount("/etc/hosts"), pair("overlay", "overlay"));
        assert_eq!(mount("/etc/resolv.conf"), pair("/dev/nvme0n1p2", "ext4"));
    }

    #[test]
    fn mount_points_match_whole_components() {
        assert_eq!(mount("/workshop/a"), pair("tmpfs", "tmpfs"));
        assert_eq!(mount("/worker"), pair("overlay", "overlay"));
        assert_eq!(mount("/tmpfoo"), pair("overlay", "overlay"));
    }

    #[test]
    fn escaped_mount_points_and_stacked_mounts() {
        assert_eq!(mount("/mnt/my disk/data"), pair("/dev/sdb1", "xfs"));
        assert_eq!(mount("/dev/pts/0"), pair("devpts-again", "devpts"), "the later mount hides the earlier");
        let m = mount_of(MOUNTINFO, Path::new("/work/x")).unwrap();
        assert_eq!((m.dev.as_str(), m.point.as_path()), ("259:2", Path::new("/work")));
    }

    #[test]
    fn odd_mountinfo_gives_none_not_panic() {
        for text in [
            "",
            "\n\n",
            "1 2",
            "1 2 3:4 / /",
            "1 2 3:4 / / rw",
            "1 2 3:4 / / rw -",
            "1 2 3:4 / / rw - ext4",
            "\\",
            "\\04",
        ] {
            assert_eq!(mount_of(text, Path::new("/a")), None, "{text:?}");
        }
        assert_eq!(mount_of("1 2 3:4 / / rw - ext4 /dev/sda1", Path::new("relative")), None);
    }

    #[test]
    fn unescape_handles_octal_and_keeps_the_rest() {
        assert_eq!(unescape(r"/a\040b\011c\134d"), "/a b\tc\\d");
        assert_eq!(unescape(r"\9\08\04"), r"\9\08\04");
        assert_eq!(unescape(r"\777x"), r"\777x", "past a byte: kept");
        assert_eq!(unescape("tail\\"), "tail\\");
        assert_eq!(unescape(r"\303\251"), "é");
    }

    #[test]
    fn cpu_model_by_architecture() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n";
        assert_eq!(cpu_model(x86).as_deref(), Some("AMD EPYC 7B13 64-Core Processor"));
        let pi = "processor\t: 0\nBogoMIPS\t: 108.00\nCPU implementer\t: 0x41\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(cpu_model(pi).as_deref(), Some("Raspberry Pi 4 Model B Rev 1.4"));
        assert_eq!(cpu_model("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"), None);
        assert_eq!(cpu_model("model name\t:   \n"), None);
        assert_eq!(cpu_model(""), None);
    }

    #[test]
    fn mem_total_in_bytes() {
        assert_eq!(mem_total("MemTotal:       24683656 kB\nMemFree:         1024 kB\n"), Some(24_683_656 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total("MemTotal: 99999999999999999 kB\n"), None, "overflow");
        assert_eq!(mem_total("MemTotal: 12 MB\n"), None, "unit unknown");
    }

    #[test]
    fn small_files() {
        assert_eq!(rotational("0\n"), Some(false));
        assert_eq!(rotational("1\n"), Some(true));
        assert_eq!(rotational(""), None);
        assert_eq!(os_name(Some("Linux\n"), Some("6.1.0-18-amd64\n")), "Linux 6.1.0-18-amd64");
        assert_eq!(os_name(None, Some("6.1")), std::env::consts::OS);
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(24_683_656 * 1024), "23.5 GiB");
        assert_eq!(bytes(u64::MAX), "16384.0 PiB");
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
            disk_model: Some("QEMU HARDDISK".into()),
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
             - Disk: /dev/vda1 (ext4, SSD, model QEMU HARDDISK), 35.0 GiB free of 50.0 GiB\n"
        );
        let m = Machine { rotational: Some(true), disk_model: None, ..sample() };
        assert!(m.markdown().contains("- Disk: /dev/vda1 (ext4, rotational disk), 35.0 GiB"));
        let unknown = Machine {
            cpu: unknown(),
            memory_bytes: None,
            device: unknown(),
            filesystem: unknown(),
            rotational: None,
            disk_model: None,
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
}
