//! A runtime dropped from inside its own callback (one-shot or periodic): the run that
//! dropped it ends normally, without a panic on any of the runtime's threads, and every task
//! is dropped once. Its own file: it installs a panic hook, which is process-wide.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use timerwheel_core::{BoxTask, Config, PeriodMode, Runtime};

static RUNTIME_THREAD_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_runtime_thread_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let name = thread::current().name().unwrap_or("").to_owned();
        if name.starts_with("timerwheel-") {
            RUNTIME_THREAD_PANICS.fetch_add(1, SeqCst);
        }
        default(info);
    }));
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Counts its drop.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Adds a timer (periodic or not) whose callback takes the runtime out of `slot` and drops
/// it, next to a far timer; waits until both tasks are dropped.
fn drop_from_callback(periodic: bool) {
    let slot: Arc<Mutex<Option<Runtime<BoxTask>>>> = Arc::default();
    let drops = Arc::new(AtomicUsize::new(0));
    let config = Config {
        max_workers: 2,
        ..Config::default()
    };
    let rt: Runtime<BoxTask> = Runtime::new(config).unwrap();
    let (s, guard) = (Arc::clone(&slot), Dropped(Arc::clone(&drops)));
    let task: BoxTask = Box::new(move |_| {
        let _ = &guard;
        drop(s.lock().unwrap().take());
    });
    let ms = Duration::from_millis;
    let added = match periodic {
        true => rt.add_periodic(ms(1), ms(1), PeriodMode::FixedRate, task),
        false => rt.add(ms(1), task),
    };
    added.unwrap();
    let far = Dropped(Arc::clone(&drops));
    rt.add(
        Duration::from_secs(60),
        Box::new(move |_| {
            let _ = &far;
        }),
    )
    .unwrap();
    *slot.lock().unwrap() = Some(rt);
    wait_for("both tasks dropped", || drops.load(SeqCst) == 2);
}

#[test]
fn dropping_the_runtime_from_its_own_callback_panics_no_thread() {
    count_runtime_thread_panics();
    drop_from_callback(false);
    drop_from_callback(true);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        RUNTIME_THREAD_PANICS.load(SeqCst),
        0,
        "a runtime thread panicked"
    );
}
