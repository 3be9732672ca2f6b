//! Keeping the CPUs out of their idle states for a run (`--cpu-idle poll`): a PM QoS request
//! for a CPU latency of 0 µs, made by writing it to /dev/cpu_dma_latency and held while the
//! file stays open. The kernel drops the request when the file is closed, also when the
//! process dies, so nothing outlives the run. cyclictest and tuned's latency profiles make
//! the same request.

use std::fs::File;
use std::io::Write;

const PM_QOS: &str = "/dev/cpu_dma_latency";

/// The request, held until dropped.
#[derive(Debug)]
pub struct CpusPolling {
    _request: File,
}

impl CpusPolling {
    /// Asks for 0 µs; an error says why it could not (not root, no PM QoS in this kernel).
    pub fn hold() -> Result<CpusPolling, String> {
        let refused = |e: std::io::Error| {
            let hint = if e.kind() == std::io::ErrorKind::PermissionDenied { ": it needs root" } else { "" };
            format!("--cpu-idle poll cannot hold {PM_QOS} at 0: {e}{hint}; drop --cpu-idle poll")
        };
        let mut request = File::options().write(true).open(PM_QOS).map_err(refused)?;
        request.write_all(&0i32.to_ne_bytes()).map_err(refused)?;
        Ok(CpusPolling { _request: request })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request holds while the guard lives: the limit in force reads 0, and goes back
    /// when it is dropped. Needs root (the device is root's only).
    #[test]
    fn the_limit_is_zero_while_held_and_returns_after() {
        let read = || std::fs::read(PM_QOS).ok().map(|b| i32::from_ne_bytes(b[..4].try_into().unwrap()));
        let Some(before) = read() else {
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Root,
                "{PM_QOS} can be read and held by root only"
            );
        };
        let held = CpusPolling::hold().expect("root may hold the request");
        assert_eq!(read(), Some(0));
        drop(held);
        assert_eq!(read(), Some(before));
    }
}
