//! The handlers of durable timers, by name: a stored timer names its handler, and restore
//! binds each name to the handler registered under it.

use std::collections::HashMap;
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
    handlers: HashMap<Arc<str>, Handler>,
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
