//! `--verify`: whether a group's writes carry checksums and its reads check them, and where the
//! record of what each block should hold is kept between commands (docs/verify.md).

use std::path::PathBuf;

use serde::Serialize;

use crate::error::SpecError;
use crate::options::Options;
use crate::units::Bytes;

/// The block `--verify` stamps and checks: I/O sizes and offsets must be whole blocks of it.
pub const VERIFY_BLOCK: u64 = 4096;

/// A group's verify settings. Default: off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct VerifySpec {
    pub verify: bool,
    /// The state file (8 bytes per 4 KiB block of the target); `None`: the default one under
    /// the results data directory, keyed by the target's identity.
    pub state: Option<PathBuf>,
}

/// The verify options of one layer stack, checked against the group's block sizes and alignment.
pub(crate) fn resolve_verify(layer: &Options, bs: &[Bytes], align: Bytes) -> Result<VerifySpec, SpecError> {
    let verify = layer.verify.unwrap_or(false);
    if !verify {
        if layer.verify_state.is_some() {
            return Err(SpecError::Invalid(
                "--verify-state names where --verify keeps its record; add --verify".into(),
            ));
        }
        return Ok(VerifySpec::default());
    }
    if let Some(bs) = bs.iter().find(|bs| bs.0 % VERIFY_BLOCK != 0) {
        return Err(SpecError::Invalid(format!(
            "--verify checks whole 4 KiB blocks, and --bs {bs} is not a multiple of 4k; use --bs 4k or larger multiples"
        )));
    }
    if align.0 % VERIFY_BLOCK != 0 {
        return Err(SpecError::Invalid(format!(
            "--verify checks whole 4 KiB blocks, and --align {align} is not a multiple of 4k; use --align 4k"
        )));
    }
    if let Some(offset) = layer.offset.filter(|o| o.0 % VERIFY_BLOCK != 0) {
        return Err(SpecError::Invalid(format!(
            "--verify checks whole 4 KiB blocks, and --offset {offset} is not a multiple of 4k"
        )));
    }
    Ok(VerifySpec { verify, state: layer.verify_state.clone() })
}
