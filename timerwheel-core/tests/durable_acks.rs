//! Acknowledgements are journalled and group-committed like every change
//! (docs/durable.md, "Modes"): in async mode many ack calls share a commit; in sync mode an
//! ack call's tokens go in one commit, concurrent ack calls share commits, and an ack that
//! returned is in the store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use timerwheel_core::durable::{
    Ack, Durable, DurableTimer, Event, MemorySink, Mode, Sink, Snapshot, Token,
};
use timerwheel_core::{BoxTask, Runtime};

const FIRES: u64 = 100;

/// A memory store that counts its commits and takes `pause` for each (a disk's fsync).
#[derive(Clone)]
struct CountingSink {
    inner: MemorySink,
    commits: Arc<AtomicU64>,
    pause: Duration,
}

impl CountingSink {
    fn new(pause: Duration) -> Self {
        CountingSink {
            inner: MemorySink::new(),
            commits: Arc::default(),
            pause,
        }
    }

    fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }
}

impl Sink for CountingSink {
    fn load(&mut self) -> Result<Snapshot, String> {
        self.inner.load()
    }

    fn commit(&mut self, events: &[Event]) -> Result<(), String> {
        thread::sleep(self.pause);
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.commit(events)
    }
}

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A store over `sink` in `mode` whose FIRES timers have fired, unacknowledged, with
/// everything committed; their tokens.
fn fired(mode: Mode, sink: &CountingSink) -> (Durable<BoxTask>, Vec<Token>) {
    let seen: Arc<Mutex<Vec<Token>>> = Arc::default();
    let log = Arc::clone(&seen);
    let wheel = Arc::new(Runtime::builder().virtual_clock(start()).build().unwrap());
    let durable = Durable::builder()
        .handler("charge", move |fired| {
            log.lock().unwrap().push(fired.token.clone());
            Ack::Later
        })
        .mode(mode)
        .open(Arc::clone(&wheel), sink.clone())
        .unwrap();
    for key in 0..FIRES {
        let timer = DurableTimer {
            key,
            name: "charge",
            payload: b"",
            first: start() + Duration::from_millis(10),
            period: None,
            replace: false,
        };
        durable.add(&timer).unwrap();
    }
    wheel.advance(Duration::from_millis(10)).unwrap();
    durable.flush().unwrap();
    let tokens = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(tokens.len() as u64, FIRES);
    assert_eq!(sink.inner.snapshot().fires.len() as u64, FIRES);
    (durable, tokens)
}

#[test]
fn async_ack_calls_return_at_once_and_share_commits_until_flush() {
    let sink = CountingSink::new(Duration::ZERO);
    let mode = Mode::Async {
        batch: 1000,
        delay: Duration::from_secs(30),
    };
    let (durable, tokens) = fired(mode, &sink);
    let before = sink.commits();
    for token in &tokens {
        assert_eq!(durable.ack(std::slice::from_ref(token)).unwrap(), 1);
    }
    assert_eq!(sink.commits(), before, "an async ack call committed");
    assert_eq!(durable.stats().unwrap().unacked_fires, 0);
    durable.flush().unwrap();
    assert_eq!(sink.commits(), before + 1, "flush commits the acks at once");
    assert!(sink.inner.snapshot().fires.is_empty());
}

#[test]
fn a_sync_ack_call_is_one_commit_and_in_the_store_when_it_returns() {
    let sink = CountingSink::new(Duration::from_millis(2));
    let (durable, tokens) = fired(Mode::Sync { batch: 1000 }, &sink);
    for chunk in tokens.chunks(25) {
        let before = sink.commits();
        assert_eq!(durable.ack(chunk).unwrap(), chunk.len());
        assert_eq!(
            sink.commits(),
            before + 1,
            "25 tokens in more than one commit"
        );
        let stored = sink.inner.snapshot().fires;
        assert!(chunk.iter().all(|t| !stored.contains_key(t)));
    }
}

#[test]
fn concurrent_sync_ack_calls_share_commits() {
    let sink = CountingSink::new(Duration::from_millis(5));
    let (durable, tokens) = fired(Mode::Sync { batch: 1000 }, &sink);
    let durable = Arc::new(durable);
    let before = sink.commits();
    let callers: Vec<_> = tokens
        .chunks((FIRES / 4) as usize)
        .map(|part| {
            let (durable, part, sink) = (Arc::clone(&durable), part.to_vec(), sink.clone());
            thread::spawn(move || {
                for token in part {
                    assert_eq!(durable.ack(std::slice::from_ref(&token)).unwrap(), 1);
                    assert!(!sink.inner.snapshot().fires.contains_key(&token));
                }
            })
        })
        .collect();
    callers.into_iter().for_each(|c| c.join().unwrap());
    let commits = sink.commits() - before;
    assert!(
        commits < FIRES * 3 / 4,
        "{FIRES} ack calls from 4 threads took {commits} commits"
    );
    assert!(sink.inner.snapshot().fires.is_empty());
}
