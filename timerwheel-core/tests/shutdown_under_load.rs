//! Shutdown under load: a million pending timers, sixteen callbacks mid-run, and timers
//! coming due while it happens. Shutdown returns, every timer ran or was discarded, every
//! task was dropped exactly once before it returned, and no callback starts afterwards.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use timerwheel_core::{Config, PeriodMode, Runtime, Task, TimerId};

const PENDING: usize = 1_000_000;
const RUNNING: usize = 16;
/// Timers due around the moment of shutdown, racing it.
const RACING: usize = 50_000;
const PATIENCE: Duration = Duration::from_secs(30);

/// What every task shares: a drop count per task, and what the callbacks saw.
struct Board {
    drops: Vec<AtomicU8>,
    runs: AtomicUsize,
    started_blockers: AtomicUsize,
    finished_blockers: AtomicUsize,
    shutdown_called: AtomicBool,
    shutdown_returned: AtomicBool,
    starts_after_return: AtomicUsize,
}

impl Board {
    fn new(tasks: usize) -> Arc<Self> {
        Arc::new(Board {
            drops: (0..tasks).map(|_| AtomicU8::new(0)).collect(),
            runs: AtomicUsize::new(0),
            started_blockers: AtomicUsize::new(0),
            finished_blockers: AtomicUsize::new(0),
            shutdown_called: AtomicBool::new(false),
            shutdown_returned: AtomicBool::new(false),
            starts_after_return: AtomicUsize::new(0),
        })
    }
}

struct Probe {
    board: Arc<Board>,
    serial: usize,
    /// Runs until shutdown has been called, then a little longer.
    blocks: bool,
}

impl Task for Probe {
    fn run(&mut self, _: TimerId) {
        let board = &self.board;
        if board.shutdown_returned.load(SeqCst) {
            board.starts_after_return.fetch_add(1, SeqCst);
        }
        board.runs.fetch_add(1, SeqCst);
        if self.blocks {
            board.started_blockers.fetch_add(1, SeqCst);
            wait_for("shutdown to be called", || {
                board.shutdown_called.load(SeqCst)
            });
            thread::sleep(Duration::from_millis(50));
            board.finished_blockers.fetch_add(1, SeqCst);
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.board.drops[self.serial].fetch_add(1, SeqCst);
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn shutdown_with_a_million_pending_and_sixteen_running() {
    let total = RUNNING + PENDING + RACING;
    // One more serial for the add refused after shutdown.
    let board = Board::new(total + 1);
    let config = Config {
        min_workers: RUNNING,
        max_workers: RUNNING + 4,
        ..Config::default()
    };
    let rt: Runtime<Probe> = Runtime::new(config).unwrap();
    let mut serials = 0..total + 1;
    let mut probe = |blocks| Probe {
        board: Arc::clone(&board),
        serial: serials.next().expect("enough serials"),
        blocks,
    };
    for _ in 0..RUNNING {
        rt.add(ms(1), probe(true)).unwrap();
    }
    for i in 0..PENDING as u64 {
        let delay = ms(60_000 + i % 3_600_000);
        match i % 1_000 {
            0..10 => rt.add_periodic(delay, ms(10), PeriodMode::FixedRate, probe(false)),
            10 => rt.add_periodic(ms(1), ms(1), PeriodMode::FixedDelay, probe(false)),
            _ => rt.add(delay, probe(false)),
        }
        .unwrap();
    }
    wait_for("sixteen callbacks mid-run", || {
        board.started_blockers.load(SeqCst) == RUNNING
    });
    for i in 0..RACING as u64 {
        rt.add(ms(i % 20), probe(false)).unwrap();
    }
    board.shutdown_called.store(true, SeqCst);
    let discarded = rt.shutdown().unwrap();
    board.shutdown_returned.store(true, SeqCst);

    assert_eq!(
        board.finished_blockers.load(SeqCst),
        RUNNING,
        "shutdown returned before the running callbacks"
    );
    let stats = rt.stats();
    assert_eq!(stats.added, total as u64);
    assert_eq!(stats.discarded, discarded as u64);
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert_eq!(
        stats.added,
        stats.fired_one_shot + stats.cancelled + stats.discarded,
        "{stats:?}"
    );
    assert!(
        discarded >= PENDING - PENDING / 100,
        "discarded only {discarded}"
    );
    let wrong: Vec<(usize, u8)> = (0..total)
        .map(|serial| (serial, board.drops[serial].load(SeqCst)))
        .filter(|&(_, drops)| drops != 1)
        .take(10)
        .collect();
    assert!(
        wrong.is_empty(),
        "tasks not dropped exactly once (serial, drops): {wrong:?}"
    );

    thread::sleep(ms(200));
    assert_eq!(
        board.starts_after_return.load(SeqCst),
        0,
        "a callback started after shutdown returned"
    );
    assert_eq!(
        rt.add(ms(1), probe(false)).map_err(|r| r.error),
        Err(timerwheel_core::Error::Shutdown)
    );
}

/// Manual mode: a callback runs inside `poll` on one thread while another thread shuts the
/// runtime down. Shutdown waits for it (as with threads), and the poll returns normally.
#[test]
fn manual_shutdown_waits_for_a_callback_running_in_poll() {
    let board = Board::new(2);
    let config = Config {
        manual: true,
        ..Config::default()
    };
    let rt = Arc::new(Runtime::<Probe>::new(config).unwrap());
    let probe = |serial, blocks| Probe {
        board: Arc::clone(&board),
        serial,
        blocks,
    };
    rt.add(Duration::ZERO, probe(0, true)).unwrap();
    rt.add(ms(60_000), probe(1, false)).unwrap();
    let poller = {
        let rt = Arc::clone(&rt);
        thread::spawn(move || {
            wait_for("the first timer to be due", || {
                rt.next_timeout() == Some(Duration::ZERO)
            });
            rt.poll()
        })
    };
    wait_for("the callback to start", || {
        board.started_blockers.load(SeqCst) == 1
    });
    board.shutdown_called.store(true, SeqCst);
    let discarded = rt.shutdown();
    let finished = board.finished_blockers.load(SeqCst);
    let polled = poller.join();
    assert_eq!(
        finished, 1,
        "shutdown returned while a callback ran in poll"
    );
    assert_eq!(discarded, Ok(1));
    assert_eq!(polled.map_err(|_| "poll panicked").unwrap(), Ok(1));
    assert_eq!(board.drops[0].load(SeqCst), 1);
    assert_eq!(board.drops[1].load(SeqCst), 1);
}
