//! Restore schedules the stored timers in bulk (a chunk of them per taking of a shard's
//! lock): every timer fires once at its deadline, across chunks, and a runtime too small for
//! the store refuses the open and leaves the store as it was.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use timerwheel_core::durable::{Ack, Durable, DurableError, DurableTimer, MemorySink};
use timerwheel_core::{Error, Runtime};

/// More than one chunk of the bulk add.
const TIMERS: u64 = 10_000;

fn wheel() -> Arc<Runtime> {
    Arc::new(Runtime::builder().virtual_clock(start()).build().unwrap())
}

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A memory store holding TIMERS one-shots, key k due at start + k ms (the later keys
/// first, so that key order is not deadline order).
fn stored() -> MemorySink {
    let sink = MemorySink::new();
    let durable = Durable::builder()
        .handler("charge", |_| Ack::Now)
        .open(wheel(), sink.clone())
        .unwrap();
    for key in (1..=TIMERS).rev() {
        let timer = DurableTimer {
            key,
            name: "charge",
            payload: b"",
            first: start() + Duration::from_millis(key),
            period: None,
            replace: false,
        };
        durable.add(&timer).unwrap();
    }
    durable.flush().unwrap();
    sink
}

#[test]
fn every_restored_timer_fires_once_at_its_deadline() {
    let sink = stored();
    let seen: Arc<Mutex<Vec<(u64, i64)>>> = Arc::default();
    let log = Arc::clone(&seen);
    let wheel = wheel();
    let clock = Arc::clone(&wheel);
    let durable = Durable::builder()
        .handler("charge", move |fired| {
            let now = clock.now().duration_since(UNIX_EPOCH).unwrap().as_millis();
            assert_eq!(
                now as i64, fired.token.occurrence_ms,
                "fired off its deadline"
            );
            log.lock()
                .unwrap()
                .push((fired.token.key, fired.token.occurrence_ms));
            Ack::Now
        })
        .open(Arc::clone(&wheel), sink.clone())
        .unwrap();
    assert_eq!(durable.stats().unwrap().timers, TIMERS);
    wheel.advance(Duration::from_millis(TIMERS + 5)).unwrap();
    let seen = seen.lock().unwrap().clone();
    let start_ms = start().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let expected: Vec<(u64, i64)> = (1..=TIMERS).map(|k| (k, start_ms + k as i64)).collect();
    assert_eq!(seen, expected);
    durable.flush().unwrap();
    assert!(sink.snapshot().timers.is_empty());
}

#[test]
fn a_runtime_too_small_for_the_store_refuses_the_open_and_the_store_stays() {
    let sink = stored();
    let before = sink.snapshot();
    let small: Runtime = Runtime::builder()
        .virtual_clock(start())
        .max_timers(TIMERS as usize - 1)
        .build()
        .unwrap();
    let opened = Durable::builder()
        .handler("charge", |_| Ack::Now)
        .open(Arc::new(small), sink.clone());
    assert!(matches!(
        opened.err(),
        Some(DurableError::Runtime(Error::Full))
    ));
    // The timers and fires stay (the open committed a generation of epochs, no more).
    let after = sink.snapshot();
    assert_eq!((after.timers, after.fires), (before.timers, before.fires));
}
