//! The one error type of the runtime; each variant maps to one C status.

use std::ffi::CStr;
use std::fmt;

/// Why a runtime call was refused. A refused call changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// An argument is out of range (a zero period, a tick below 100 us, ...).
    Invalid,
    /// No pending timer has this id: it fired (one-shot), was cancelled, or never existed
    /// (for a group: it ended, or never existed).
    NotFound,
    /// The capacity limit (`max_timers`) is reached.
    Full,
    /// The runtime is shutting down or has shut down.
    Shutdown,
    /// The call would wait for the current thread itself (cancel_sync or shutdown from a
    /// callback of this runtime), or would shut down a shared runtime.
    Busy,
    /// The runtime was started before this process was forked from its parent: its threads
    /// are not in this process (see the crate's docs on fork()).
    Forked,
    /// The group is closed: it takes no more timers (it ends once its last timer ended).
    GroupClosed,
}

impl Error {
    /// Every error, in the order of their C statuses.
    pub const ALL: [Error; 7] = [
        Error::Invalid,
        Error::NotFound,
        Error::Full,
        Error::Shutdown,
        Error::Busy,
        Error::Forked,
        Error::GroupClosed,
    ];

    /// A short human-readable description: the one text of this error in every interface
    /// (C's `tw_status_str`, Python's exceptions, Go's errors).
    pub fn message(self) -> &'static str {
        self.c_message()
            .to_str()
            .expect("the messages are plain ASCII")
    }

    /// [`message`](Self::message) as a NUL-terminated string, for C.
    pub fn c_message(self) -> &'static CStr {
        match self {
            Error::Invalid => c"invalid argument",
            Error::NotFound => c"no such pending timer",
            Error::Full => c"timer capacity reached",
            Error::Shutdown => c"the wheel is closed or shutting down",
            Error::Busy => {
                c"it would wait for itself (called from one of the wheel's own callbacks), \
                  or the wheel is the shared default wheel, which is never closed"
            }
            Error::Forked => c"the wheel was created before fork(); create a new one in the child",
            Error::GroupClosed => c"the group is closed: it takes no more timers",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_a_message_of_its_own() {
        let mut messages: Vec<_> = Error::ALL.iter().map(|e| e.message()).collect();
        assert!(messages.iter().all(|m| !m.is_empty() && !m.contains('\0')));
        messages.sort_unstable();
        messages.dedup();
        assert_eq!(messages.len(), Error::ALL.len());
    }
}
