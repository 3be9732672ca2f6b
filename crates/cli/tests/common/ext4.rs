//! An ext4 filesystem on a loop device over /dev/shm, mounted in a temp dir; unmounted and
//! detached on drop.

use super::{sh, LoopDevice};

pub struct Ext4 {
    pub mount: tempfile::TempDir,
    lo: LoopDevice,
}

impl Ext4 {
    /// `mkfs.ext4 -q -F -N 20000 {options}` over `lo`, mounted.
    pub fn on(lo: LoopDevice, options: &str) -> Ext4 {
        sh(&format!("mkfs.ext4 -q -F -N 20000 {options} {}", lo.path()));
        let mount = tempfile::tempdir().expect("mount point");
        sh(&format!("mount -t ext4 {} {}", lo.path(), mount.path().display()));
        Ext4 { mount, lo }
    }

    /// Unmounts and mounts it again: nothing of it stays cached.
    pub fn remount(&self) {
        sh(&format!("umount {}", self.mount.path().display()));
        sh(&format!("mount -t ext4 {} {}", self.lo.path(), self.mount.path().display()));
    }
}

impl Drop for Ext4 {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.mount.path()).status();
    }
}
