//! Text made safe for HTML content and attribute values: the one escape iolab's markup uses.

pub(crate) use iolab_stats::format::markup as esc;
