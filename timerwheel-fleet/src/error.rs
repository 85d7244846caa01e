//! The errors of the fleet store. None of them carries the connection string: a
//! connection error keeps only PostgreSQL's message with any secret of the string removed.

use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetError {
    /// The connection string could not be used, or the server could not be reached.
    Connect(String),
    /// The database has no fleet schema: create it with [`crate::create_schema`].
    NoSchema,
    /// The schema's version is not one this build can use.
    SchemaVersion {
        /// The version in the database.
        found: i32,
        /// The version of this build.
        expected: i32,
    },
    /// A fenced write from a node whose lease on the shard moved on (another node took it,
    /// or the lease expired): nothing was written.
    Fenced {
        /// The shard.
        shard: i32,
        /// The epoch the write carried.
        epoch: i64,
    },
    /// A bad argument (a shard count out of range, an empty node name, ...).
    Invalid(String),
    /// An add without `replace` of a (key, name) that exists: nothing was written.
    Exists {
        /// The timer's key.
        key: u64,
        /// The timer's name.
        name: String,
    },
    /// The database refused a statement or the connection broke.
    Database(String),
    /// PostgreSQL did not answer (`cause`, as the client saw it): `pending` changes wait in
    /// the node's buffer, to be written when it answers again.
    Unreachable {
        /// Why: the connection's error (never the connection string).
        cause: String,
        /// Changes waiting in the buffer.
        pending: usize,
    },
    /// PostgreSQL did not answer and the buffer of unwritten changes holds its bound: the
    /// change was not taken (nothing of it is kept or written).
    BufferFull {
        /// The buffer's bound ([`crate::Settings::buffer`]).
        bound: usize,
        /// Why PostgreSQL is unreachable.
        cause: String,
    },
    /// The shard count changed (an explicit migration) since the writer read it: nothing
    /// was written; read it again ([`crate::check_schema`]).
    ShardCount {
        /// The count the write was made for.
        expected: i32,
        /// The count in the database.
        found: i32,
    },
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(why) => write!(f, "cannot connect to PostgreSQL: {why}"),
            Self::NoSchema => write!(
                f,
                "the database has no timerwheel fleet schema (create it with create_schema)"
            ),
            Self::SchemaVersion { found, expected } => write!(
                f,
                "the fleet schema has version {found}, this build uses version {expected}"
            ),
            Self::Fenced { shard, epoch } => write!(
                f,
                "refused: the lease of shard {shard} moved past epoch {epoch}"
            ),
            Self::Invalid(why) => write!(f, "invalid argument: {why}"),
            Self::Exists { key, name } => write!(f, "timer ({key}, {name:?}) exists"),
            Self::Database(why) => write!(f, "database error: {why}"),
            Self::Unreachable { cause, pending } => write!(
                f,
                "PostgreSQL unreachable ({cause}): {pending} changes wait in the buffer"
            ),
            Self::BufferFull { bound, cause } => write!(
                f,
                "PostgreSQL unreachable ({cause}) and the buffer holds its bound of \
                 {bound} unwritten changes: the change was not taken"
            ),
            Self::ShardCount { expected, found } => write!(
                f,
                "the shard count changed from {expected} to {found}: nothing was written"
            ),
        }
    }
}

impl std::error::Error for FleetError {}

impl From<postgres::Error> for FleetError {
    fn from(error: postgres::Error) -> Self {
        Self::Database(describe(&error))
    }
}

/// PostgreSQL's message for `error`: the server's own text when it sent one, else the
/// client's with its causes (why a TLS handshake or a socket failed).
pub(crate) fn describe(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(reason) = cause {
        message = format!("{message}: {reason}");
        cause = reason.source();
    }
    message
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, FleetError>;
