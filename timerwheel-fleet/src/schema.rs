//! The fleet's tables, their version and migrations. The schema is created only by an
//! explicit [`create_schema`]; everything else first [`check_schema`]s and refuses a
//! database without it ([`FleetError::NoSchema`]) or of another version.
//!
//! - `tw_fleet_meta`: one row, the schema version and the shard count.
//! - `tw_fleet_shards`: a row per shard: its owner (a node name), the epoch (grows on every
//!   acquisition) and `lease_until` on the database's clock.
//! - `tw_fleet_nodes`: the live nodes (`alive_until`, on the database's clock); the fair
//!   share of a node is the shard count over the live nodes.
//! - `tw_fleet_timers`: a row per durable timer named by (key, name): its shard (a hash of
//!   the key), the handler's name, due time and period in ms since the Unix epoch, the
//!   periodic mode, the payload and its version (the incarnation, from `tw_fleet_version`).
//! - `tw_fleet_fires`: the fires not acknowledged yet, with their token and the shard's
//!   epoch under which they were delivered.

use postgres::GenericClient;

use crate::error::{FleetError, Result};

/// The version of the schema this build writes.
pub const SCHEMA_VERSION: i32 = 1;

const CREATE_V1: &str = "
CREATE TABLE tw_fleet_meta (
    id int PRIMARY KEY CHECK (id = 1),
    version int NOT NULL,
    shards int NOT NULL CHECK (shards > 0)
);
CREATE TABLE tw_fleet_shards (
    shard int PRIMARY KEY,
    owner text,
    epoch bigint NOT NULL DEFAULT 0,
    lease_until timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE TABLE tw_fleet_nodes (
    name text PRIMARY KEY,
    alive_until timestamptz NOT NULL
);
CREATE SEQUENCE tw_fleet_version;
CREATE TABLE tw_fleet_timers (
    shard int NOT NULL,
    key bigint NOT NULL,
    name text NOT NULL,
    due_ms bigint NOT NULL,
    period_ms bigint NOT NULL DEFAULT 0 CHECK (period_ms >= 0),
    mode smallint NOT NULL DEFAULT 0,
    payload bytea NOT NULL,
    version bigint NOT NULL,
    PRIMARY KEY (key, name)
);
CREATE INDEX tw_fleet_timers_due ON tw_fleet_timers (shard, due_ms);
CREATE TABLE tw_fleet_fires (
    shard int NOT NULL,
    key bigint NOT NULL,
    name text NOT NULL,
    occurrence_ms bigint NOT NULL,
    version bigint NOT NULL,
    shard_epoch bigint NOT NULL,
    payload bytea NOT NULL,
    PRIMARY KEY (key, name, occurrence_ms)
);
CREATE INDEX tw_fleet_fires_shard ON tw_fleet_fires (shard);
";

/// The advisory lock that serialises schema creation and migration ("twfl").
pub(crate) const SCHEMA_LOCK: i64 = 0x7477_666c;

/// The migrations: `MIGRATIONS[i]` takes a schema of version `i + 1` to `i + 2`, in the
/// same transaction as the version's update. Empty while version 1 is the only one.
const MIGRATIONS: &[&str] = &[];

/// Creates the schema with `shards` shards, all free; on a database that has it already,
/// checks it (same version) and changes nothing.
pub fn create_schema(client: &mut impl GenericClient, shards: i32) -> Result<()> {
    check_count(shards)?;
    let mut tx = client.transaction()?;
    // Two nodes creating the schema at once: the second waits, then finds it.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    if schema_version(&mut tx)?.is_some() {
        tx.rollback()?;
        return check_schema(client).map(|_| ());
    }
    tx.batch_execute(CREATE_V1)?;
    tx.execute(
        "INSERT INTO tw_fleet_meta (id, version, shards) VALUES (1, $1, $2)",
        &[&SCHEMA_VERSION, &shards],
    )?;
    tx.execute(
        "INSERT INTO tw_fleet_shards (shard) SELECT generate_series(0, $1 - 1)",
        &[&shards],
    )?;
    tx.commit()?;
    Ok(())
}

/// The shard count, once the schema is there and of this build's version.
pub fn check_schema(client: &mut impl GenericClient) -> Result<i32> {
    match schema_version(client)? {
        None => Err(FleetError::NoSchema),
        Some(SCHEMA_VERSION) => shard_count(client),
        Some(found) => Err(FleetError::SchemaVersion {
            found,
            expected: SCHEMA_VERSION,
        }),
    }
}

/// Brings an older schema to [`SCHEMA_VERSION`], one step per version, all in one
/// transaction; a newer one is refused and left as it is.
pub fn migrate(client: &mut impl GenericClient) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    let found = schema_version(&mut tx)?.ok_or(FleetError::NoSchema)?;
    if found > SCHEMA_VERSION || found < 1 {
        return Err(FleetError::SchemaVersion {
            found,
            expected: SCHEMA_VERSION,
        });
    }
    for step in &MIGRATIONS[(found - 1) as usize..] {
        tx.batch_execute(step)?;
    }
    tx.execute("UPDATE tw_fleet_meta SET version = $1", &[&SCHEMA_VERSION])?;
    tx.commit()?;
    Ok(())
}

/// Refuses a shard count out of 1 to 65536.
pub(crate) fn check_count(shards: i32) -> Result<()> {
    if !(1..=65_536).contains(&shards) {
        return Err(FleetError::Invalid(format!(
            "{shards} shards (1 to 65536 allowed)"
        )));
    }
    Ok(())
}

fn schema_version(client: &mut impl GenericClient) -> Result<Option<i32>> {
    let exists: bool = client
        .query_one("SELECT to_regclass('tw_fleet_meta') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = client.query_opt("SELECT version FROM tw_fleet_meta", &[])?;
    Ok(row.map(|r| r.get(0)))
}

fn shard_count(client: &mut impl GenericClient) -> Result<i32> {
    Ok(client
        .query_one("SELECT shards FROM tw_fleet_meta", &[])?
        .get(0))
}
