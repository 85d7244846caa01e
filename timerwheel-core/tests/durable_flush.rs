//! `flush_to` (docs/durable.md, Modes): a flush to a sequence returns once that sequence is
//! durable, whatever was queued after it; a sequence not handed out is refused at once.

use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use timerwheel_core::durable::{
    Ack, Durable, DurableError, DurableTimer, Event, MemorySink, Mode, Sink, Snapshot,
};
use timerwheel_core::{BoxTask, Runtime};

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A store that commits no event past `held_after` until released: a commit holding one
/// waits. The open commits the first event (its generation of epochs, docs/durable.md).
#[derive(Clone)]
struct HoldingSink {
    inner: MemorySink,
    held_after: Arc<(Mutex<u64>, Condvar)>,
}

impl HoldingSink {
    fn holding_after(seq: u64) -> HoldingSink {
        HoldingSink {
            inner: MemorySink::new(),
            held_after: Arc::new((Mutex::new(seq), Condvar::new())),
        }
    }

    fn release(&self) {
        *self.held_after.0.lock().unwrap() = u64::MAX;
        self.held_after.1.notify_all();
    }
}

impl Sink for HoldingSink {
    fn load(&mut self) -> Result<Snapshot, String> {
        self.inner.load()
    }

    fn commit(&mut self, events: &[Event]) -> Result<(), String> {
        let last = events.last().map_or(0, |e| e.seq);
        let (held_after, released) = &*self.held_after;
        let mut held_after = held_after.lock().unwrap();
        while last > *held_after {
            held_after = released.wait(held_after).unwrap();
        }
        self.inner.commit(events)
    }
}

/// An async store that commits only when flushed (a batch and a delay never reached).
fn open(sink: &HoldingSink) -> Durable<BoxTask> {
    let wheel = Arc::new(Runtime::builder().virtual_clock(start()).build().unwrap());
    Durable::builder()
        .handler("charge", |_| Ack::Now)
        .mode(Mode::Async {
            batch: 100_000,
            delay: Duration::from_secs(600),
        })
        .open(wheel, sink.clone())
        .unwrap()
}

fn add(store: &Durable<BoxTask>, key: u64) -> u64 {
    let timer = DurableTimer {
        key,
        name: "charge",
        payload: b"",
        first: start() + Duration::from_secs(3600),
        period: None,
        replace: false,
    };
    store.add(&timer).unwrap();
    store.stats().unwrap().last_seq
}

/// Runs `flush` on another thread and gives its result, or `None` if it has not returned
/// within a generous while.
fn returns_within<R: Send + 'static>(flush: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let flushing = thread::spawn(flush);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !flushing.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    flushing.is_finished().then(|| flushing.join().unwrap())
}

#[test]
fn a_flush_to_a_sequence_does_not_wait_for_the_changes_queued_after_it() {
    let sink = HoldingSink::holding_after(2);
    let store = Arc::new(open(&sink));
    let mine = add(&store, 1);
    assert_eq!(mine, 2);
    for key in 2..=50 {
        add(&store, key);
    }
    let flushing = Arc::clone(&store);
    let durable = returns_within(move || flushing.flush_to(mine))
        .expect("flush_to waited for the changes queued after its sequence");
    assert_eq!(durable, Ok(2));
    let stored = sink.inner.snapshot();
    assert_eq!(stored.seq, 2, "the flush committed past its sequence");
    assert_eq!(stored.timers.len(), 1);
    assert_eq!(store.stats().unwrap().durable_seq, 2);
    // The later changes are committed by the next flush once the store takes them.
    sink.release();
    assert_eq!(store.flush(), Ok(51));
    assert_eq!(sink.inner.snapshot().timers.len(), 50);
}

#[test]
fn a_flush_to_a_sequence_returns_only_once_it_is_durable() {
    let sink = HoldingSink::holding_after(1);
    let store = Arc::new(open(&sink));
    let mine = add(&store, 7);
    let flushing = Arc::clone(&store);
    let waiting = thread::spawn(move || flushing.flush_to(mine));
    thread::sleep(Duration::from_millis(200));
    assert!(
        !waiting.is_finished(),
        "flush_to returned before its sequence was committed"
    );
    assert_eq!(sink.inner.snapshot().seq, 1);
    sink.release();
    assert_eq!(waiting.join().unwrap(), Ok(mine));
    assert_eq!(sink.inner.snapshot().timers.len(), 1);
    // A sequence durable already (and 0, before any change) returns at once.
    assert_eq!(returns_within(move || store.flush_to(0)), Some(Ok(mine)));
}

#[test]
fn a_flush_to_a_sequence_not_handed_out_is_refused_at_once_and_changes_nothing() {
    let sink = HoldingSink::holding_after(1);
    let store = Arc::new(open(&sink));
    let last = add(&store, 3);
    for bad in [last + 1, u64::MAX] {
        let refusing = Arc::clone(&store);
        let refused = returns_within(move || refusing.flush_to(bad))
            .expect("a flush to a sequence not handed out waited");
        let Err(DurableError::Invalid(message)) = refused else {
            panic!("flush_to({bad}) gave {refused:?}");
        };
        assert!(
            message.contains(&bad.to_string()) && message.contains(&last.to_string()),
            "{message}"
        );
    }
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats.last_seq, stats.durable_seq, stats.commits),
        (last, 1, 1)
    );
    sink.release();
    assert_eq!(store.flush_to(last), Ok(last));
}
