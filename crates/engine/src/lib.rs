//! I/O engines (io_uring, psync, null) behind one trait, targets, aligned buffers, target safety checks.
