//! The coordinator side of fleet mode: `iolab fleet`.

mod client;
mod fleet;
mod heartbeat;
pub mod hosts;
mod live;
mod netbench;
pub mod ssh;

pub use fleet::files::{FilesHost, FleetFiles};
pub use fleet::{Fleet, FleetConfig};
