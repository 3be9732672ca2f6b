//! The results database (SQLite, bundled): every run of a measuring command and every point it
//! measured, committed the moment the point completes, so an interrupted or killed run keeps
//! what it finished. The schema is versioned (`schema::VERSION`) and described in
//! docs/results-store.md. Several iolab processes may write to one database at once (WAL, a
//! busy timeout, immediate write transactions); a file that is not an iolab database is
//! refused and never written.

mod error;
pub mod model;
mod open;
mod recorder;
pub mod schema;
mod store;

pub use error::StoreError;
pub use model::{
    now_unix_s, NewRun, Point, PointFigures, PointSummary, RunEnd, RunId, RunInfo, RunStatus, StoredRun,
};
pub use open::default_path;
pub use recorder::{Finished, Recorder, Sampler};
pub use store::Store;
