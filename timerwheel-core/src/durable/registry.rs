//! The handlers of durable timers, by name: a stored timer names its handler, and restore
//! binds each name to the handler registered under it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::event::Token;

/// What a handler is given: the fire's token and the timer's payload.
#[derive(Debug)]
pub struct Fired<'a> {
    /// Names this fire; the same when it is delivered again.
    pub token: &'a Token,
    /// The timer's payload.
    pub payload: &'a [u8],
}

/// What a handler tells the store about its fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// The effect is done: acknowledge the fire now.
    Now,
    /// The application acknowledges the token later (`Durable::ack`), once it stored it
    /// with its effect.
    Later,
}

/// A handler of durable timers.
pub type Handler = Arc<dyn Fn(&Fired<'_>) -> Ack + Send + Sync>;

/// The handlers by name.
#[derive(Clone, Default)]
pub struct Registry {
    handlers: HashMap<Arc<str>, Handler, BuildHasherDefault<Fnv1a>>,
}

/// FNV-1a: the registry's names are the application's own few handlers, so a collision
/// costs a lookup at most as many comparisons as there are handlers, and flooding the
/// table needs registering names (SipHash's keyed defence buys nothing here). A restore
/// looks up the name of every stored timer twice, where SipHash's rounds showed in the
/// profile.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Registry {
    /// Registers `handler` under `name`; `false` if the name is taken.
    pub fn register(&mut self, name: &str, handler: Handler) -> bool {
        if self.handlers.contains_key(name) {
            return false;
        }
        self.handlers.insert(Arc::from(name), handler);
        true
    }

    /// The handler of `name`.
    pub fn get(&self, name: &str) -> Option<&Handler> {
        self.handlers.get(name)
    }

    /// The registered name equal to `name`, shared: the timers of one handler hold one copy.
    pub fn name(&self, name: &str) -> Option<Arc<str>> {
        self.handlers
            .get_key_value(name)
            .map(|(name, _)| Arc::clone(name))
    }
}
