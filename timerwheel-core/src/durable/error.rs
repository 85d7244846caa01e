//! Why a durable call was refused.

use std::fmt;

use crate::Error;

/// Why a durable call was refused; a refused call changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurableError {
    /// A timer of this (key, name) exists, and replacing was not asked for.
    Exists,
    /// No durable timer of this (key, name).
    NotFound,
    /// No handler is registered under this name (at an add, or for a stored timer at open).
    NoHandler(String),
    /// The store refused or failed (a message naming what); at a change after a failed
    /// commit, that failure reported once (the change was not made).
    Store(String),
    /// A bad argument.
    Invalid(String),
    /// The runtime refused.
    Runtime(Error),
}

impl fmt::Display for DurableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurableError::Exists => f.write_str("a durable timer of this key and name exists"),
            DurableError::NotFound => f.write_str("no durable timer of this key and name"),
            DurableError::NoHandler(name) => write!(f, "no handler is registered as {name:?}"),
            DurableError::Store(message) => write!(f, "store: {message}"),
            DurableError::Invalid(message) => f.write_str(message),
            DurableError::Runtime(error) => f.write_str(error.message()),
        }
    }
}

impl std::error::Error for DurableError {}
