//! A fleet node in this process ([`Runner`]) against a private cluster: the near window
//! pages in as time moves (the wheel wakes the node, not the poll), its wake-ups are bounded
//! by the window's length whatever the number of timers, and a handler that leaves its
//! acknowledgement for later acknowledges under the epoch it was given.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{add_charge, connect, fleet_server, now_ms};
use timerwheel_core::durable::Ack;
use timerwheel_fleet::{ConnectOptions, Fire, Runner, Settings};

const SHARDS: i32 = 8;

type Log = Arc<Mutex<Vec<(Fire, i64)>>>;

fn start(
    server: &timerwheel_fleet::server::TestServer,
    settings: Settings,
    ack: Ack,
) -> (Runner, Log) {
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let runner = Runner::builder()
        .settings(settings)
        .handler("charge", move |fire| {
            sink.lock().unwrap().push((fire.clone(), now_ms()));
            ack
        })
        .start(&ConnectOptions::parse(&server.conninfo()).unwrap(), "a")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while runner.firing().len() < SHARDS as usize {
        assert!(
            Instant::now() < deadline,
            "no leases: {:?}",
            runner.firing()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (runner, log)
}

fn wait_fired(log: &Log, n: usize, timeout: Duration) -> Vec<(Fire, i64)> {
    let deadline = Instant::now() + timeout;
    loop {
        let fired = log.lock().unwrap().clone();
        if fired.len() >= n || Instant::now() > deadline {
            return fired;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn timers_beyond_the_window_page_in_as_time_moves_and_fire_on_time_without_the_poll() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let settings = Settings {
        ttl: Duration::from_secs(2),
        window: Duration::from_secs(1),
        poll: Duration::from_secs(60), // only the wheel can wake it in time
        ..Settings::default()
    };
    let (runner, log) = start(&server, settings, Ack::Now);
    let due = now_ms() + 3_000;
    for key in 0..50 {
        add_charge(&mut db, SHARDS, key, due + key as i64 * 20);
    }
    let far = now_ms() + 3_600_000;
    for key in 1_000..6_000 {
        add_charge(&mut db, SHARDS, key, far + key as i64);
    }
    std::thread::sleep(Duration::from_millis(800)); // ticks: nothing is due within 1 s
    assert_eq!(runner.wake_ups(), 0, "loaded beyond the window");
    let fired = wait_fired(&log, 50, Duration::from_secs(20));
    assert_eq!(fired.len(), 50, "paged in: {} of 50 fired", fired.len());
    let worst = fired
        .iter()
        .map(|(fire, at)| at - fire.token.occurrence_ms)
        .max()
        .unwrap();
    assert!(worst < 500, "fired {worst} ms late (the poll is 60 s)");
    assert!(
        fired.iter().all(|(f, at)| *at >= f.token.occurrence_ms),
        "fired early"
    );
    assert_eq!(
        runner.wake_ups(),
        0,
        "the hour-away timers stay in the store"
    );
    runner.leave().unwrap();
}

#[test]
fn a_timer_added_elsewhere_inside_the_loaded_window_is_claimed_by_the_poll() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let poll = Duration::from_millis(300);
    let settings = Settings {
        ttl: Duration::from_secs(2),
        poll,
        ..Settings::default()
    };
    let (runner, log) = start(&server, settings, Ack::Now);
    std::thread::sleep(Duration::from_millis(500)); // the window is loaded past now
    let due = now_ms();
    add_charge(&mut db, SHARDS, 7, due);
    let fired = wait_fired(&log, 1, Duration::from_secs(10));
    assert_eq!(fired.len(), 1);
    let late = fired[0].1 - due;
    assert!(
        late <= poll.as_millis() as i64 + 200,
        "reached the owner {late} ms after it fell due (poll {poll:?})"
    );
    runner.leave().unwrap();
}

#[test]
fn a_held_ack_is_accepted_under_its_epoch_and_refused_once_the_shard_moved() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let settings = Settings {
        ttl: Duration::from_secs(1),
        ..Settings::default()
    };
    let (runner, log) = start(&server, settings, Ack::Later);
    add_charge(&mut db, SHARDS, 1, now_ms());
    add_charge(&mut db, SHARDS, 2, now_ms());
    let fired = wait_fired(&log, 2, Duration::from_secs(10));
    assert_eq!(fired.len(), 2);
    assert_eq!(runner.ack(&[fired[0].0.token.clone()]).unwrap(), 1);

    // The shard of the second moves on (as if its lease expired and another node took it).
    let token = fired[1].0.token.clone();
    db.execute(
        "UPDATE tw_fleet_shards SET owner = 'b', epoch = epoch + 1 WHERE shard = $1",
        &[&token.shard],
    )
    .unwrap();
    let refused = runner.ack(std::slice::from_ref(&token));
    assert!(
        matches!(refused, Err(timerwheel_fleet::FleetError::Fenced { shard, .. }) if shard == token.shard),
        "{refused:?}"
    );
    let unacked: i64 = db
        .query_one("SELECT count(*) FROM tw_fleet_fires", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        unacked, 1,
        "the refused fire waits for the shard's new owner"
    );
    drop(runner);
}
