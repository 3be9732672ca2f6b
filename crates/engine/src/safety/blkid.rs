//! Asking libblkid, the library behind `blkid -p` and `wipefs`, what a device holds: every
//! filesystem, RAID, volume-manager, swap and crypto superblock and every partition table it
//! knows (dozens, kept current by util-linux), where iolab's own list (`signatures.rs`) knows
//! 18 formats.
//!
//! Loaded at run time (`dlopen` of `libblkid.so.1`), not linked: the binary then runs where the
//! library is missing (a minimal container), and the check falls back to iolab's own list
//! there and says so. The probe reads the descriptor the safety check already holds
//! (`blkid_probe_set_device`), never the device's name, so what it judges is what iolab opened.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::signatures::Signature;

/// The soname of libblkid's ABI since util-linux 2.15 (2009).
const SONAME: &str = "libblkid.so.1";

// From blkid.h: what a superblock probe reports.
const SUBLKS_LABEL: c_int = 1 << 1;
const SUBLKS_UUID: c_int = 1 << 3;
const SUBLKS_TYPE: c_int = 1 << 5;
const SUBLKS_USAGE: c_int = 1 << 7;

/// `blkid_probe`, opaque.
type Probe = *mut c_void;

/// The functions of libblkid the check calls, resolved once per inspection.
pub(crate) struct Libblkid {
    new_probe: unsafe extern "C" fn() -> Probe,
    free_probe: unsafe extern "C" fn(Probe),
    set_device: unsafe extern "C" fn(Probe, c_int, i64, i64) -> c_int,
    enable_superblocks: unsafe extern "C" fn(Probe, c_int) -> c_int,
    set_superblocks_flags: unsafe extern "C" fn(Probe, c_int) -> c_int,
    enable_partitions: unsafe extern "C" fn(Probe, c_int) -> c_int,
    do_safeprobe: unsafe extern "C" fn(Probe) -> c_int,
    lookup_value: unsafe extern "C" fn(Probe, *const c_char, *mut *const c_char, *mut usize) -> c_int,
    /// The pointers above point into it, so it lives as long as they do (fields drop after
    /// nothing uses them: the pointers have no drop of their own).
    _library: libloading::Library,
}

impl Libblkid {
    /// Loads libblkid; the error says why it could not be (to be shown beside the fallback).
    pub(crate) fn load() -> Result<Libblkid, String> {
        // SAFETY: libblkid's initialisers only set up its own state (debug mask, locale-free
        // tables); loading it has no effect on this process beyond mapping it.
        let library = unsafe { libloading::Library::new(SONAME) }.map_err(|e| e.to_string())?;
        /// Resolves one symbol as a function pointer of type `T`.
        ///
        /// # Safety
        /// `T` must be the C signature of the function `name` as blkid.h declares it.
        unsafe fn symbol<T: Copy>(library: &libloading::Library, name: &str) -> Result<T, String> {
            // SAFETY: the caller gives the symbol's true type; the pointer is used only while
            // `library` stays loaded (it is kept beside the pointers in `Libblkid`).
            unsafe { library.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{SONAME}: {e}"))
        }
        // SAFETY: each type below is copied from the declaration in blkid.h (blkid_loff_t is
        // int64_t, blkid_probe a pointer to an opaque struct).
        unsafe {
            Ok(Libblkid {
                new_probe: symbol(&library, "blkid_new_probe")?,
                free_probe: symbol(&library, "blkid_free_probe")?,
                set_device: symbol(&library, "blkid_probe_set_device")?,
                enable_superblocks: symbol(&library, "blkid_probe_enable_superblocks")?,
                set_superblocks_flags: symbol(&library, "blkid_probe_set_superblocks_flags")?,
                enable_partitions: symbol(&library, "blkid_probe_enable_partitions")?,
                do_safeprobe: symbol(&library, "blkid_do_safeprobe")?,
                lookup_value: symbol(&library, "blkid_probe_lookup_value")?,
                _library: library,
            })
        }
    }

    /// What libblkid finds in the `len` bytes at `start` of `file` (a device, a partition's
    /// extent of it, or an image file): its filesystem or other superblock, and its partition
    /// table. Safe probing: two superblocks that contradict each other are reported as such,
    /// never resolved by a guess.
    pub(crate) fn probe(&self, file: &File, start: u64, len: u64) -> io::Result<Vec<Signature>> {
        let offset = i64::try_from(start).map_err(|_| io::Error::other("offset beyond libblkid's range"))?;
        let size = i64::try_from(len).map_err(|_| io::Error::other("size beyond libblkid's range"))?;
        // SAFETY: blkid_new_probe has no preconditions; NULL (out of memory) is checked.
        let probe = unsafe { (self.new_probe)() };
        if probe.is_null() {
            return Err(io::Error::other("libblkid could not allocate a probe"));
        }
        let probe = ProbeGuard { probe, free: self.free_probe };
        // SAFETY: `probe.probe` is a live probe; the descriptor stays open for the whole probe
        // (`file` is borrowed until the probe is freed at the end of this function), and
        // libblkid only reads through it: it closes only a descriptor it opened itself
        // (blkid_new_probe_from_filename), never one given to set_device.
        let set = unsafe { (self.set_device)(probe.probe, file.as_raw_fd(), offset, size) };
        if set != 0 {
            return Err(io::Error::other(
                "libblkid could not use the device (blkid_probe_set_device failed)",
            ));
        }
        // SAFETY: a live probe; these only set its options.
        unsafe {
            (self.enable_superblocks)(probe.probe, 1);
            (self.set_superblocks_flags)(
                probe.probe,
                SUBLKS_LABEL | SUBLKS_UUID | SUBLKS_TYPE | SUBLKS_USAGE,
            );
            (self.enable_partitions)(probe.probe, 1);
        }
        // SAFETY: a live probe with a device set.
        match unsafe { (self.do_safeprobe)(probe.probe) } {
            1 => Ok(Vec::new()),
            0 => Ok(self.found(&probe)),
            -2 => Ok(vec![Signature {
                what: "more than one filesystem or RAID signature, which libblkid will not choose between \
                       (`wipefs DEVICE` lists them and changes nothing)"
                    .to_string(),
                partition_table: false,
            }]),
            _ => Err(io::Error::other("libblkid failed to probe it (blkid_do_safeprobe returned an error)")),
        }
    }

    /// The superblock and partition table a successful probe found, in words.
    fn found(&self, probe: &ProbeGuard) -> Vec<Signature> {
        let value = |name: &CStr| self.value(probe, name);
        let mut found = Vec::new();
        if let Some(kind) = value(c"TYPE") {
            let (noun, usage) = match value(c"USAGE").as_deref() {
                Some("filesystem") => ("filesystem signature", None),
                Some("raid") => ("signature", Some("a RAID or volume-manager member")),
                Some("crypto") => ("signature", Some("an encrypted volume")),
                _ => ("signature", None),
            };
            let mut details: Vec<String> = usage.into_iter().map(str::to_string).collect();
            details.push("libblkid".to_string());
            details.extend(value(c"LABEL").map(|label| format!("LABEL {label:?}")));
            details.extend(value(c"UUID").map(|uuid| format!("UUID {}", printable(&uuid))));
            found.push(Signature {
                what: format!("{} {} {noun} ({})", article(&kind), printable(&kind), details.join(", ")),
                partition_table: false,
            });
        }
        if let Some(table) = value(c"PTTYPE") {
            let id = value(c"PTUUID").map(|id| format!(", PTUUID {}", printable(&id))).unwrap_or_default();
            found.push(Signature {
                what: format!("{} {} partition table (libblkid{id})", article(&table), printable(&table)),
                partition_table: true,
            });
        }
        found
    }

    /// The value `name` of the last probe (TYPE, LABEL, ...), if it set one.
    fn value(&self, probe: &ProbeGuard, name: &CStr) -> Option<String> {
        let mut data: *const c_char = std::ptr::null();
        let mut len = 0usize;
        // SAFETY: a live probe, a NUL-terminated name and two out-pointers to locals.
        let found = unsafe { (self.lookup_value)(probe.probe, name.as_ptr(), &mut data, &mut len) };
        if found != 0 || data.is_null() {
            return None;
        }
        // SAFETY: libblkid's values are NUL-terminated strings owned by the probe, which lives
        // until `probe` is dropped, after this copy.
        let text = unsafe { CStr::from_ptr(data) }.to_string_lossy().into_owned();
        (!text.is_empty()).then_some(text)
    }
}

/// Frees the probe however the inspection ends.
struct ProbeGuard {
    probe: Probe,
    free: unsafe extern "C" fn(Probe),
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        // SAFETY: the probe came from blkid_new_probe and is freed once, here.
        unsafe { (self.free)(self.probe) }
    }
}

/// "an" before a name read with a vowel sound (ext4, iso9660, xfs: "ex-eff-ess"), else "a".
fn article(name: &str) -> &'static str {
    match name.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'x') => "an",
        _ => "a",
    }
}

/// A value read off the device as it may be shown on a terminal: no control characters.
fn printable(value: &str) -> String {
    value.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

#[cfg(test)]
mod tests;
