//! The claim lead ([`Settings::lead`]): a node claims a timer ahead of its due time and
//! hands the fire over at its due time, never before, and only while it holds the shard.

mod support;

use std::time::Duration;

use support::{add_charge, connect, fleet_server, now_ms, wait_for, Log};
use timerwheel_core::durable::Ack;
use timerwheel_fleet::{delete_timer, shard_of, Settings};

const SHARDS: i32 = 8;

/// A lead of `lead`, the poll at 60 s (only the wheel wakes the node), a TTL of 2 s.
fn settings(lead: Duration) -> Settings {
    Settings {
        ttl: Duration::from_secs(2),
        poll: Duration::from_secs(60),
        lead,
        ..Settings::default()
    }
}

/// Sleeps until `at_ms` on the wall clock.
fn sleep_until(at_ms: i64) {
    let left = at_ms - now_ms();
    if left > 0 {
        std::thread::sleep(Duration::from_millis(left as u64));
    }
}

/// When the handler got the fires of `key` (ms since the Unix epoch).
fn fired_at(log: &Log, key: u64) -> Vec<i64> {
    let fired = log.lock().unwrap();
    fired
        .iter()
        .filter(|(fire, _)| fire.token.key == key)
        .map(|(_, at)| *at)
        .collect()
}

fn unacked(db: &mut postgres::Client, key: u64) -> i64 {
    db.query_one(
        "SELECT count(*) FROM tw_fleet_fires WHERE key = $1",
        &[&(key as i64)],
    )
    .unwrap()
    .get(0)
}

#[test]
fn a_timer_is_claimed_ahead_and_delivered_no_earlier_than_its_due_time() {
    let server = fleet_server(SHARDS);
    let mut elsewhere = connect(&server);
    let (runner, log) = support::start_runner(
        &server,
        SHARDS,
        settings(Duration::from_millis(200)),
        Ack::Now,
    );
    let due = now_ms() + 1_500;
    add_charge(&mut elsewhere, SHARDS, 7, due);
    sleep_until(due - 50);
    assert!(
        !delete_timer(&mut elsewhere, 7, "charge").unwrap(),
        "not claimed 50 ms before its due time (the lead is 200 ms)"
    );
    wait_for("the fire", Duration::from_secs(10), || {
        !fired_at(&log, 7).is_empty()
    });
    let at = fired_at(&log, 7);
    assert_eq!(at.len(), 1, "delivered {} times", at.len());
    assert!(at[0] >= due, "delivered {} ms early", due - at[0]);
    assert!(at[0] - due < 250, "delivered {} ms late", at[0] - due);
    wait_for("the ack", Duration::from_secs(10), || {
        unacked(&mut elsewhere, 7) == 0
    });
    runner.leave().unwrap();
}

/// The shard moves to another node between the claim (a second ahead) and the due time:
/// the node learns it at its next tick (every 400 ms) and does not hand the fire over; it
/// stays unacknowledged for the shard's new owner.
#[test]
fn a_fire_claimed_ahead_is_not_handed_over_once_the_shard_moved_on() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let lead = Duration::from_millis(900);
    let (runner, log) = support::start_runner(&server, SHARDS, settings(lead), Ack::Now);
    let key = 11;
    let due = now_ms() + 2_000;
    add_charge(&mut db, SHARDS, key, due);
    wait_for("the claim ahead", Duration::from_secs(10), || {
        unacked(&mut db, key) == 1
    });
    assert!(
        now_ms() < due - 700,
        "claimed too late to take the shard in time"
    );
    db.execute(
        "UPDATE tw_fleet_shards SET owner = 'b', epoch = epoch + 1,
                lease_until = now() + interval '1 hour' WHERE shard = $1",
        &[&shard_of(key, SHARDS)],
    )
    .unwrap();
    sleep_until(due + 1_000);
    assert!(
        fired_at(&log, key).is_empty(),
        "handed over a lost shard's fire"
    );
    assert_eq!(
        unacked(&mut db, key),
        1,
        "the fire waits for the shard's owner"
    );
    assert!(!runner
        .firing()
        .iter()
        .any(|(s, _)| *s == shard_of(key, SHARDS)));
    drop(runner);
}
