//! Adds in a batch (`add_timers`, one statement per run): each timer's outcome is the one
//! `add_timer` of each in turn would give, whatever the batch mixes (a (key, name) twice,
//! replaces and plain adds, timers that exist), and a batch made for an old shard count
//! writes nothing.

mod support;

use support::{connect, fleet_server};
use timerwheel_fleet::{add_timer, add_timers, FleetError, NewTimer, Result};

const SHARDS: i32 = 8;

fn timer(key: u64, payload: &'static [u8], replace: bool) -> NewTimer<'static> {
    NewTimer {
        key,
        name: "charge",
        payload,
        due_ms: 1_000,
        period_ms: 0,
        replace,
    }
}

/// "ok", "exists" or the error, for comparing outcomes.
fn kind(outcome: &Result<i64>) -> String {
    match outcome {
        Ok(_) => "ok".into(),
        Err(FleetError::Exists { .. }) => "exists".into(),
        Err(other) => format!("{other:?}"),
    }
}

fn stored(db: &mut postgres::Client, key: u64) -> (Vec<u8>, i64) {
    let row = db
        .query_one(
            "SELECT payload, version FROM tw_fleet_timers WHERE key = $1 AND name = 'charge'",
            &[&(key as i64)],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

fn timers_stored(db: &mut postgres::Client) -> i64 {
    db.query_one("SELECT count(*) FROM tw_fleet_timers", &[])
        .unwrap()
        .get(0)
}

/// The batch, with every key moved by `offset`.
fn batch(offset: u64) -> Vec<NewTimer<'static>> {
    [
        timer(1, b"again", false), // exists already
        timer(2, b"first", false),
        timer(2, b"second", false), // the same (key, name) in the batch
        timer(3, b"3a", true),
        timer(3, b"3b", true), // replaces the one just added
        timer(1, b"replaced", true),
        timer(4, b"four", false),
        timer(2, b"third", false),
    ]
    .into_iter()
    .map(|t| NewTimer {
        key: t.key + offset,
        ..t
    })
    .collect()
}

#[test]
fn a_batch_reports_each_timer_as_adding_them_one_at_a_time_would() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    for offset in [0, 100] {
        add_timer(&mut db, SHARDS, &timer(1 + offset, b"old", false)).unwrap();
    }

    let batched = add_timers(&mut db, SHARDS, &batch(0)).unwrap();
    let one_by_one: Vec<Result<i64>> = batch(100)
        .iter()
        .map(|t| add_timer(&mut db, SHARDS, t))
        .collect();

    let kinds: Vec<String> = batched.iter().map(kind).collect();
    assert_eq!(
        kinds,
        ["exists", "ok", "exists", "ok", "ok", "ok", "ok", "exists"]
    );
    assert_eq!(kinds, one_by_one.iter().map(kind).collect::<Vec<_>>());
    for (offset, outcomes) in [(0, &batched), (100, &one_by_one)] {
        assert_eq!(stored(&mut db, 1 + offset).0, b"replaced");
        assert_eq!(stored(&mut db, 2 + offset).0, b"first");
        assert_eq!(stored(&mut db, 3 + offset).0, b"3b");
        // The version returned is the one stored (the last replace's).
        assert_eq!(
            stored(&mut db, 3 + offset).1,
            *outcomes[4].as_ref().unwrap()
        );
        assert_eq!(
            stored(&mut db, 4 + offset).1,
            *outcomes[6].as_ref().unwrap()
        );
        assert!(outcomes[4].as_ref().unwrap() > outcomes[3].as_ref().unwrap());
    }
    match &batched[0] {
        Err(FleetError::Exists { key: 1, name }) => assert_eq!(name, "charge"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_batch_for_an_old_shard_count_writes_nothing_and_says_so_for_each_timer() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let outcomes = add_timers(&mut db, SHARDS / 2, &batch(0)).unwrap();
    assert_eq!(outcomes.len(), batch(0).len());
    for outcome in &outcomes {
        assert!(
            matches!(
                outcome,
                Err(FleetError::ShardCount {
                    expected: 4,
                    found: 8
                })
            ),
            "{outcome:?}"
        );
    }
    assert_eq!(timers_stored(&mut db), 0);
}

#[test]
fn a_batch_with_one_invalid_timer_is_refused_before_anything_is_written() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let mut timers = batch(0);
    timers.push(NewTimer {
        name: "",
        ..timer(9, b"", false)
    });
    let refused = add_timers(&mut db, SHARDS, &timers);
    assert!(
        matches!(refused, Err(FleetError::Invalid(_))),
        "{refused:?}"
    );
    assert_eq!(timers_stored(&mut db), 0);
}
