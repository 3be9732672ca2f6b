//! Locks the threads of a job share, taken whether or not a thread panicked holding one.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A poisoned lock only means another thread panicked while recording; the counts are intact.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
