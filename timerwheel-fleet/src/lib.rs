//! Durable timers shared by a fleet of processes on PostgreSQL (issue 25, its foundation):
//! the timers of a key live on one of many shards (256 by default), each shard is owned by
//! one node under a lease judged on the database's clock, and every write of an owner is
//! fenced by the shard's epoch, so that a node that lost its lease (killed, stopped, cut
//! off) changes nothing after another took over.
//!
//! - [`server`]: a private PostgreSQL cluster for tests, benchmarks and the demo.
//! - [`conn`]: connection strings (TLS passed through; never repeated in an error).
//! - `tls`: the certificate checks of each `sslmode`, with rustls.
//! - [`schema`]: the tables, their version and migrations (created only when asked).
//! - [`lease`]: acquire, renew, rebalance, release; the fence.
//! - [`store`]: adds from any node, fenced claims of due timers, acks, take-over, the
//!   near window (what a node would load into its wheel).
//! - [`changes`]: adds, resets and deletes through a node, with a bounded buffer of the
//!   changes made while PostgreSQL does not answer, and their statuses.
//! - [`reshard`]: the explicit migration that changes the number of shards.
//! - [`runner`]: a node that runs timers: a wheel of wake-ups for its shards' near window,
//!   fenced claims when it wakes, the handlers by name, take-over and paging as time moves.
//!
//! **The client: the `postgres` crate** (the blocking API over `tokio-postgres`). It is
//! maintained, pure Rust (nothing to link: the C library, the Go module and the wheel need no
//! system libpq), and blocking like the rest of the runtime's threads; it speaks the same
//! connection strings as libpq (key=value and URLs). What it lacks of libpq's TLS
//! (`verify-ca`, `verify-full`, `sslrootcert`) [`conn`] adds with rustls (the `tls` module: pure
//! Rust too, so the library links no OpenSSL).

pub mod changes;
pub mod conn;
pub mod error;
pub mod lease;
pub mod reshard;
pub mod runner;
pub mod schema;
pub mod server;
pub mod shard;
pub mod store;
mod tls;

pub use changes::{Change, Outcome, Status, DEFAULT_BUFFER};
pub use conn::ConnectOptions;
pub use error::{FleetError, Result};
pub use lease::{fence, fence_all, Node, Rebalance, DEFAULT_TTL};
pub use reshard::{set_shard_count, Resharded};
pub use runner::{FleetHandler, NodeEvent, Runner, RunnerBuilder, Settings};
pub use schema::{check_schema, create_schema, migrate, SCHEMA_VERSION};
pub use shard::{shard_of, DEFAULT_SHARDS};
pub use store::{
    ack, ack_and_claim, add_timer, add_timers, claim_due, delete_timer, due_points, load_window,
    reset_timer, take_over_fires, unacked_fires, Claim, Fire, FleetToken, NewTimer, WindowTimer,
};

/// The application's key of a durable timer (a session id), as in the core's durable layer.
pub type Key = u64;
