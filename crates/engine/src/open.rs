//! Opening an engine: the one `match` on its kind, which names every backend. The backends
//! build on `engine` (the trait and its types); nothing below this file names them.

use iolab_spec::EngineKind;

use crate::aio::AioEngine;
use crate::engine::{Engine, EngineConfig};
use crate::error::EngineError;
use crate::null::NullEngine;
use crate::psync::PsyncEngine;
use crate::uring::UringEngine;

/// What to do with an engine once it is open: generic over its type, so the code that drives
/// it is compiled once per engine and calls it directly, not through a vtable on every I/O.
pub trait WithEngine {
    type Output;
    fn with<E: Engine>(self, engine: E) -> Self::Output;
}

/// Opens an engine of `kind` and hands it to `then`: the one `match` on the engine's kind.
pub fn open_engine<W: WithEngine>(
    kind: EngineKind,
    config: EngineConfig,
    then: W,
) -> Result<W::Output, EngineError> {
    Ok(match kind {
        EngineKind::Uring => then.with(UringEngine::new(config)?),
        EngineKind::Psync => then.with(PsyncEngine::new(config)?),
        EngineKind::Aio => then.with(AioEngine::new(config)?),
        EngineKind::Null => then.with(NullEngine::new(config)),
    })
}
