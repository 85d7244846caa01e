//! An id belongs to the runtime that gave it: another runtime finds no timer by it, even
//! when both hand out their first timers from the same slot of the same shard.

use std::time::Duration;

use timerwheel_core::{BoxTask, Config, Error, Runtime, TimerId};

const LATER: Duration = Duration::from_secs(3600);

fn runtime() -> Runtime<BoxTask> {
    let config = Config {
        max_workers: 1,
        ..Config::default()
    };
    Runtime::new(config).unwrap()
}

fn add(rt: &Runtime<BoxTask>) -> TimerId {
    rt.add(LATER, Box::new(|_| {})).unwrap()
}

/// Every call that names a timer, made on `rt` with an id `rt` never gave.
fn assert_foreign(rt: &Runtime<BoxTask>, id: TimerId) {
    assert!(!rt.is_pending(id), "{id:?}");
    assert_eq!(rt.reset(id, Duration::from_millis(1)), Err(Error::NotFound));
    assert_eq!(rt.cancel(id), Err(Error::NotFound));
    assert_eq!(rt.cancel_sync(id), Err(Error::NotFound));
}

#[test]
fn an_id_of_one_runtime_is_not_found_on_another() {
    let (first, second) = (runtime(), runtime());
    let (a, b) = (add(&first), add(&second));
    assert_ne!(a, b, "two runtimes' first timers share an id");
    assert_foreign(&second, a);
    assert_foreign(&first, b);
    assert!(first.is_pending(a) && second.is_pending(b));
    assert_eq!(second.stats().cancelled, 0);
    assert_eq!(first.cancel(a), Ok(()));
    assert_eq!(second.cancel(b), Ok(()));
}

#[test]
fn the_ids_of_many_runtimes_stay_apart_as_their_slots_are_reused() {
    let runtimes: Vec<_> = (0..8).map(|_| runtime()).collect();
    for _ in 0..1000 {
        let ids: Vec<_> = runtimes.iter().map(add).collect();
        for (i, rt) in runtimes.iter().enumerate() {
            for (j, &id) in ids.iter().enumerate() {
                if i != j {
                    assert_eq!(rt.cancel(id), Err(Error::NotFound));
                }
            }
            assert_eq!(rt.cancel(ids[i]), Ok(()));
        }
    }
}
