//! A C handler of durable fires, of a wheel's store or of a fleet node: the function and
//! the context it was registered with, called with a token of type `T`.

use std::ffi::c_void;

use timerwheel_core::durable::Ack;

use crate::durable::TW_ACK_NOW;

/// A C handler: `f(token, payload, payload_len, ctx)`, answering TW_ACK_NOW or anything
/// else for later.
pub(crate) struct CHandler<T> {
    pub(crate) f: unsafe extern "C" fn(*const T, *const c_void, usize, *mut c_void) -> i32,
    pub(crate) ctx: *mut c_void,
}

// SAFETY: the caller of the registering call hands `ctx` over to the library, and the
// header says the handler runs on the library's threads.
unsafe impl<T> Send for CHandler<T> {}
// SAFETY: as for Send: the header says the handler may run on several threads at once.
unsafe impl<T> Sync for CHandler<T> {}

impl<T> CHandler<T> {
    /// Calls the handler with `token` and `payload`, which stay valid during the call.
    pub(crate) fn call(&self, token: &T, payload: &[u8]) -> Ack {
        // SAFETY: the non-NULL handler registered with `ctx`; the token and the payload
        // are valid during the call, as the header says.
        let answer = unsafe { (self.f)(token, payload.as_ptr().cast(), payload.len(), self.ctx) };
        ack_of(answer)
    }
}

/// A C handler's answer: TW_ACK_NOW, or anything else for later.
fn ack_of(answer: i32) -> Ack {
    if answer == TW_ACK_NOW {
        Ack::Now
    } else {
        Ack::Later
    }
}
