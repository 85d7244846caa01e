//! The one error type of the runtime; each variant maps to one C status.

use std::fmt;

/// Why a runtime call was refused. A refused call changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// An argument is out of range (a zero period, a tick below 100 us, ...).
    Invalid,
    /// No pending timer has this id: it fired (one-shot), was cancelled, or never existed.
    NotFound,
    /// The capacity limit (`max_timers`) is reached.
    Full,
    /// The runtime is shutting down or has shut down.
    Shutdown,
    /// The call would wait for the current thread itself (cancel_sync or shutdown from a
    /// callback of this runtime).
    Busy,
    /// The runtime was started before this process was forked from its parent: its threads
    /// are not in this process (see the crate's docs on fork()).
    Forked,
}

impl Error {
    /// A short human-readable description.
    pub fn message(self) -> &'static str {
        match self {
            Error::Invalid => "invalid argument",
            Error::NotFound => "no such pending timer",
            Error::Full => "timer capacity reached",
            Error::Shutdown => "the wheel is shut down",
            Error::Busy => "would wait for the calling callback itself",
            Error::Forked => "the runtime was created before fork(); create a new one in the child",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// A refused add: the error, and the task handed back untouched (neither run nor dropped
/// by the runtime), so that a C caller still owns its user data.
pub struct Rejected<T> {
    /// Why the add was refused.
    pub error: Error,
    /// The task that was not added.
    pub task: T,
}

impl<T> fmt::Debug for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("error", &self.error)
            .finish()
    }
}
