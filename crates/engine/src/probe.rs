//! What the running kernel offers, probed rather than assumed.

use std::io;

use crate::error::EngineError;

const DISABLED_SYSCTL: &str = "/proc/sys/kernel/io_uring_disabled";

/// Turns a failed ring setup into an error that says why and what to do instead.
pub fn uring_setup_error(error: io::Error) -> EngineError {
    let sysctl = std::fs::read_to_string(DISABLED_SYSCTL).ok();
    let why = match (error.raw_os_error(), sysctl.as_deref().map(str::trim)) {
        (Some(libc::ENOSYS), _) => "this kernel has no io_uring".to_string(),
        (Some(libc::EPERM), Some(level)) if level != "0" => {
            format!("io_uring is disabled here ({DISABLED_SYSCTL} = {level})")
        }
        (Some(libc::EPERM), _) => {
            "io_uring is not permitted here (a seccomp or container policy)".to_string()
        }
        (Some(libc::ENOMEM), _) => {
            "io_uring could not lock memory for its rings (raise `ulimit -l`)".to_string()
        }
        _ => format!("io_uring setup failed: {error}"),
    };
    EngineError::Unavailable(format!("{why}; use --engine psync instead"))
}

/// Whether an io_uring ring can be created here; the error says what to use instead.
pub fn uring_available() -> Result<(), EngineError> {
    io_uring::IoUring::new(2).map(drop).map_err(uring_setup_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_uring_suggests_psync() {
        for errno in [libc::ENOSYS, libc::EPERM, libc::ENOMEM, libc::EINVAL] {
            let message = uring_setup_error(io::Error::from_raw_os_error(errno)).to_string();
            assert!(message.ends_with("use --engine psync instead"), "{message}");
        }
    }
}
