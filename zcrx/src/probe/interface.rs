//! Network interfaces as sysfs describes them: index, driver, parent device, queues.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const SYS_CLASS_NET: &str = "/sys/class/net";

/// What sysfs says about one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InterfaceInfo {
    /// Interface name.
    pub(crate) name: String,
    /// Interface index.
    pub(crate) ifindex: u32,
    /// Driver of the parent device, if it has one.
    pub(crate) driver: Option<String>,
    /// Has a parent (DMA-capable) device; loopback, veth, bridges and ifb do not.
    pub(crate) has_parent: bool,
    /// Number of `queues/rx-*` entries.
    pub(crate) rx_queues: u32,
}

/// Every interface in this network namespace, by ifindex.
pub(crate) fn list() -> Vec<InterfaceInfo> {
    let Ok(entries) = fs::read_dir(SYS_CLASS_NET) else {
        return Vec::new();
    };
    let mut list: Vec<InterfaceInfo> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|name| read(&name))
        .collect();
    list.sort_by_key(|i| i.ifindex);
    list
}

/// Reads one interface; `None` if the name is not a valid interface name or does not exist.
pub(crate) fn read(name: &str) -> Option<InterfaceInfo> {
    if !valid_name(name) {
        return None;
    }
    let dir = Path::new(SYS_CLASS_NET).join(name);
    let ifindex = fs::read_to_string(dir.join("ifindex"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let device = dir.join("device");
    Some(InterfaceInfo {
        name: name.to_owned(),
        ifindex,
        driver: link_basename(&device.join("driver")),
        has_parent: device.exists(),
        rx_queues: count_rx_queues(&dir.join("queues")),
    })
}

/// Kernel interface names: 1..=15 bytes, no `/`, whitespace or `:`, not `.`/`..`.
/// Checking keeps a caller-supplied name from walking out of `/sys/class/net`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace())
}

fn link_basename(link: &Path) -> Option<String> {
    let target: PathBuf = fs::read_link(link).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

fn count_rx_queues(queues: &Path) -> u32 {
    fs::read_dir(queues)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(0)
}

/// Whether an XDP program is attached, from `ip -d link show`; `None` without `ip`.
pub(crate) fn xdp_attached(name: &str) -> Option<bool> {
    if !valid_name(name) {
        return None;
    }
    let out = Command::new("ip")
        .args(["-d", "link", "show", "dev", name])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).contains("xdp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_sysfs_are_rejected() {
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../etc",
            "eth0:1",
            "a b",
            "sixteen-chars-xx",
        ] {
            assert!(!valid_name(bad), "{bad:?} accepted");
            assert_eq!(read(bad), None);
        }
        for good in ["lo", "eth0", "enp1s0f0np0", "ifb1", "fifteen-chars-x"] {
            assert!(valid_name(good), "{good:?} rejected");
        }
    }
}
