//! Which process is working a tree: the marker names its pid, the boot it runs in and its
//! start time (clock ticks after boot, /proc/PID/stat), so a pid the kernel has since given to
//! another process, or one from before a reboot, is not mistaken for the run. A second run on
//! a directory whose owner is alive is refused; a dead owner's tree is an earlier tree.
//!
//! The pid's line is `pid:`, as the fleet agent's markers (safety_at.rs) write and read it; a
//! marker with no boot and start time (the agent's, an older iolab's) names a live owner while
//! a process called iolab has that pid.

use std::fs;

/// The marker lines' keys.
const PID: &str = "pid:";
const BOOT: &str = "boot-id:";
const START: &str = "start-ticks:";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub boot_id: String,
    pub start_ticks: u64,
}

fn boot_id() -> Option<String> {
    let id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string())
}

/// The process's start time in clock ticks after boot: /proc/PID/stat's 22nd field, counted
/// after the name's closing parenthesis (a name may hold spaces and parentheses).
fn start_ticks(pid: &str) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    /// This process, or None where /proc does not tell (the marker then names no owner).
    pub fn this_process() -> Option<Owner> {
        Some(Owner { pid: std::process::id(), boot_id: boot_id()?, start_ticks: start_ticks("self")? })
    }

    /// The owner a marker names (None: none, as in a marker released or from an older iolab).
    pub fn in_marker(text: &str) -> Option<Owner> {
        let value = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
        Some(Owner {
            pid: value(PID)?.parse().ok()?,
            boot_id: value(BOOT)?.to_string(),
            start_ticks: value(START)?.parse().ok()?,
        })
    }

    /// The pid of the live process `text` (a marker) names as working its tree, if any.
    pub fn live_in_marker(text: &str) -> Option<u32> {
        if let Some(owner) = Owner::in_marker(text) {
            return owner.alive().then_some(owner.pid);
        }
        let pid: u32 = text.lines().find_map(|l| l.strip_prefix(PID))?.trim().parse().ok()?;
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (comm.trim() == "iolab").then_some(pid)
    }

    /// The marker's lines naming this owner.
    pub fn lines(&self) -> String {
        format!("{PID} {}\n{BOOT} {}\n{START} {}\n", self.pid, self.boot_id, self.start_ticks)
    }

    /// `text` without its owner lines.
    pub fn strip(text: &str) -> String {
        text.lines()
            .filter(|l| ![PID, BOOT, START].iter().any(|k| l.starts_with(k)))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// The process is running: same boot, and its pid still holds a process started then.
    pub fn alive(&self) -> bool {
        boot_id().is_some_and(|b| b == self.boot_id)
            && start_ticks(&self.pid.to_string()).is_some_and(|t| t == self.start_ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::Owner;

    #[test]
    fn this_process_is_alive_and_reads_back_from_its_lines() {
        let Some(me) = Owner::this_process() else {
            return iolab_test_support::skip!(iolab_test_support::Missing::Other, "no /proc here");
        };
        let text = format!("iolab files tree\n{}created-by-iolab: yes\n", me.lines());
        assert_eq!(Owner::in_marker(&text), Some(me.clone()));
        assert!(me.alive());
        assert_eq!(Owner::strip(&text), "iolab files tree\ncreated-by-iolab: yes\n");
        assert_eq!(Owner::in_marker(&Owner::strip(&text)), None);
        assert_eq!(Owner::live_in_marker(&text), Some(me.pid));
        // A pid alone (a fleet agent's or an older iolab's marker) counts only as an iolab's.
        assert_eq!(Owner::live_in_marker(&format!("pid: {}\n", me.pid)), None, "this test is not iolab");
    }

    #[test]
    fn a_recycled_pid_or_another_boot_is_not_the_owner() {
        let Some(me) = Owner::this_process() else {
            return iolab_test_support::skip!(iolab_test_support::Missing::Other, "no /proc here");
        };
        let recycled = Owner { start_ticks: me.start_ticks + 1, ..me.clone() };
        assert!(!recycled.alive(), "same pid, another start: another process");
        let rebooted = Owner { boot_id: "00000000-0000-0000-0000-000000000000".into(), ..me };
        assert!(!rebooted.alive());
    }
}
