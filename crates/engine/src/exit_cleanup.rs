//! Stop signals, and what an interrupted run removes on its way out.
//!
//! The first SIGINT, SIGTERM or SIGHUP asks the run to stop and keep its results (a flag the
//! runner polls): a closed terminal or a service manager's stop ends a run as Ctrl-C does, its
//! report written and its files removed (SIGHUP's default killed `iolab files` with its tree
//! left behind). A SIGHUP the process was started ignoring (`nohup`) stays ignored. A second one ends the process at once, for a run that does not stop by itself; but
//! first it removes the files registered with [`remove_on_exit`] (the scratch file), so a
//! user's impatience never leaves a gigabyte of iolab's data behind. Only SIGKILL does.
//!
//! The registry is process-wide by nature (a signal handler has no other way to find it): a
//! fixed table of C strings, read by the handler with atomic loads and unlinked with the
//! async-signal-safe `unlink(2)`. A path taken out of the table is leaked, not freed, because a
//! handler on another thread may be reading it at that moment; a run registers one or two.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, OnceLock};

/// The exit code of an interrupted run (README: exit codes).
const INTERRUPTED: i32 = 130;

static PATHS: [AtomicPtr<libc::c_char>; 16] = [const { AtomicPtr::new(null_mut()) }; 16];

static INTERRUPT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the SIGINT, SIGTERM and SIGHUP handlers (once per process) and returns the flag the
/// first signal sets.
pub fn install_stop_signals() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(flag) = INTERRUPT.get() {
        return Ok(Arc::clone(flag));
    }
    let flag = Arc::new(AtomicBool::new(false));
    let hangup = (!is_ignored(libc::SIGHUP)).then_some(libc::SIGHUP);
    for signal in [libc::SIGINT, libc::SIGTERM].into_iter().chain(hangup) {
        let seen = Arc::clone(&flag);
        // SAFETY: the handler is async-signal-safe: an atomic swap, atomic loads of the table,
        // unlink(2) and _exit(2), no allocation and no lock.
        unsafe { signal_hook::low_level::register(signal, move || on_stop_signal(&seen)) }?;
    }
    Ok(Arc::clone(INTERRUPT.get_or_init(|| flag)))
}

/// Whether `signal` is ignored (as `nohup` leaves SIGHUP).
fn is_ignored(signal: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `current`, a
    // zeroed struct sigaction that lives across the call.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0 && current.sa_sigaction == libc::SIG_IGN
    }
}

fn on_stop_signal(seen: &AtomicBool) {
    if !seen.swap(true, Ordering::SeqCst) {
        return;
    }
    for slot in &PATHS {
        let path = slot.load(Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: a non-null entry is a NUL-terminated string that is never freed.
            unsafe { libc::unlink(path) };
        }
    }
    // SAFETY: _exit ends the process without running anything else; nothing is left to uphold.
    unsafe { libc::_exit(INTERRUPTED) };
}

/// While this lives, a second stop signal removes `path` before the process ends.
#[must_use = "the path is only removed on a second signal while the guard lives"]
pub struct RemoveOnExit {
    slot: Option<&'static AtomicPtr<libc::c_char>>,
}

/// Registers `path` for removal on a second stop signal. With the table full (more than 16
/// files at once) the path is not registered; the normal way out still removes it.
pub fn remove_on_exit(path: &Path) -> RemoveOnExit {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return RemoveOnExit { slot: None } };
    let raw = c_path.into_raw();
    for slot in &PATHS {
        if slot.compare_exchange(null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return RemoveOnExit { slot: Some(slot) };
        }
    }
    // SAFETY: `raw` came from `into_raw` above and was never published.
    drop(unsafe { CString::from_raw(raw) });
    RemoveOnExit { slot: None }
}

impl Drop for RemoveOnExit {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            // Leaked on purpose: a handler may still hold the pointer (see the module doc).
            slot.store(null_mut(), Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_takes_its_path_out_of_the_table_when_dropped() {
        let taken = |p: &str| {
            PATHS.iter().any(|slot| {
                let ptr = slot.load(Ordering::SeqCst);
                // SAFETY: non-null entries are live NUL-terminated strings (never freed).
                !ptr.is_null() && unsafe { std::ffi::CStr::from_ptr(ptr) }.to_bytes() == p.as_bytes()
            })
        };
        let guard = remove_on_exit(Path::new("/tmp/iolab-exit-cleanup-test"));
        assert!(taken("/tmp/iolab-exit-cleanup-test"));
        drop(guard);
        assert!(!taken("/tmp/iolab-exit-cleanup-test"));
    }
}
