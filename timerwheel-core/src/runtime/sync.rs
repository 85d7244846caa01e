//! What the runtime synchronises and waits with: std's types, or loom's under `cfg(loom)`
//! (`make test-loom`), so that the models of `loom_tests.rs` run the runtime's own code
//! (shards, executor, tick thread, workers) and loom explores their interleavings.
//!
//! Under loom, where loom lacks something or differs from std: a timed wait never times
//! out (`park_timeout`, as loom's `Condvar::wait_timeout`), so a wake-up that only a
//! timeout would bring shows up as a deadlock; time is a counter that stands still unless
//! a model moves it ([`time::advance`]), so every interleaving sees the same clock; threads
//! park on a token of their own with std's semantics (`model_thread`), and their handles
//! are kept until joined (no `is_finished`); `thread_local!` takes std's `const` form.
//! Std's stay: `OnceLock` (the tick thread's handle, set before anyone can read it), the
//! runtime's `Arc` (timer handles hold a `Weak`, which loom's lacks), the statistics
//! counters and the process-wide ones in statics (shard hints, runtime numbers in ids).

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// loom's `thread_local!`, which does not take std's `const { init }` form: the same
/// declarations, the `const` left out.
#[cfg(loom)]
macro_rules! loom_thread_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }; $($rest:tt)*) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $t = $init;);
        $crate::runtime::sync::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr; $($rest:tt)*) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $t = $init;);
        $crate::runtime::sync::thread_local!($($rest)*);
    };
}
#[cfg(loom)]
pub(crate) use loom_thread_local as thread_local;

pub(crate) mod atomic {
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
}

pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use super::model_thread::{
        current, park, park_timeout, Builder, JoinHandle, Thread,
    };
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, park_timeout, Builder, JoinHandle, Thread};
}

/// Threads under loom, with std's park token: a flag under a lock. Loom's own token is lost
/// when the thread blocks on a lock, and its unpark wakes a thread blocked elsewhere, which
/// aborts a join (tokio-rs/loom#249, #422).
#[cfg(loom)]
mod model_thread {
    use std::cell::RefCell;
    use std::time::Duration;

    use loom::sync::{Arc, Condvar, Mutex};
    use loom::thread::ThreadId;

    struct Token {
        available: Mutex<bool>,
        changed: Condvar,
    }

    #[derive(Clone)]
    pub(crate) struct Thread {
        id: ThreadId,
        token: Arc<Token>,
    }

    impl Token {
        fn new() -> Self {
            Token {
                available: Mutex::new(false),
                changed: Condvar::new(),
            }
        }
    }

    impl Thread {
        pub(crate) fn id(&self) -> ThreadId {
            self.id
        }

        pub(crate) fn unpark(&self) {
            *self.token.available.lock().unwrap() = true;
            self.token.changed.notify_one();
        }
    }

    loom::thread_local! {
        static CURRENT: RefCell<Option<Thread>> = RefCell::new(None);
    }

    pub(crate) fn current() -> Thread {
        CURRENT.with(|current| {
            let mut current = current.borrow_mut();
            let id = loom::thread::current().id();
            let token = || Arc::new(Token::new());
            current
                .get_or_insert_with(|| Thread { id, token: token() })
                .clone()
        })
    }

    pub(crate) fn park() {
        let token = current().token;
        let mut available = token.available.lock().unwrap();
        while !*available {
            available = token.changed.wait(available).unwrap();
        }
        *available = false;
    }

    pub(crate) fn park_timeout(_: Duration) {
        park();
    }

    pub(crate) struct Builder(loom::thread::Builder);

    impl Builder {
        pub(crate) fn new() -> Self {
            Builder(loom::thread::Builder::new())
        }

        pub(crate) fn name(self, name: String) -> Self {
            Builder(self.0.name(name))
        }

        pub(crate) fn spawn<F, T>(self, f: F) -> std::io::Result<JoinHandle<T>>
        where
            F: FnOnce() -> T + Send + 'static,
            T: Send + 'static,
        {
            let token = Arc::new(Token::new());
            let own_token = Arc::clone(&token);
            let inner = self.0.spawn(move || {
                let id = loom::thread::current().id();
                let token = own_token;
                CURRENT.with(|current| *current.borrow_mut() = Some(Thread { id, token }));
                f()
            })?;
            let id = inner.thread().id();
            Ok(JoinHandle {
                inner,
                thread: Thread { id, token },
            })
        }
    }

    pub(crate) struct JoinHandle<T> {
        inner: loom::thread::JoinHandle<T>,
        thread: Thread,
    }

    impl<T> JoinHandle<T> {
        pub(crate) fn join(self) -> std::thread::Result<T> {
            self.inner.join()
        }

        pub(crate) fn thread(&self) -> &Thread {
            &self.thread
        }

        /// Kept until joined: loom cannot tell.
        pub(crate) fn is_finished(&self) -> bool {
            false
        }
    }
}

pub(crate) mod time {
    #[cfg(not(loom))]
    pub(crate) use std::time::Instant;

    /// The system clock.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn system_now() -> std::time::SystemTime {
        std::time::SystemTime::now()
    }

    #[cfg(all(loom, test))]
    pub(crate) use model::advance;
    #[cfg(loom)]
    pub(crate) use model::{system_now, Instant};

    #[cfg(loom)]
    mod model {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        use std::time::{Duration, SystemTime};

        /// Model time, in nanoseconds: both clocks read it.
        static NOW_NS: AtomicU64 = AtomicU64::new(0);

        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub(crate) struct Instant(u64);

        impl Instant {
            pub(crate) fn now() -> Self {
                Instant(NOW_NS.load(Relaxed))
            }

            pub(crate) fn elapsed(&self) -> Duration {
                Duration::from_nanos(NOW_NS.load(Relaxed) - self.0)
            }

            #[cfg(test)]
            pub(crate) fn checked_sub(&self, by: Duration) -> Option<Self> {
                let by = u64::try_from(by.as_nanos()).ok()?;
                self.0.checked_sub(by).map(Instant)
            }
        }

        pub(crate) fn system_now() -> SystemTime {
            SystemTime::UNIX_EPOCH + Duration::from_nanos(NOW_NS.load(Relaxed))
        }

        /// Moves model time forward by `by`.
        #[cfg(test)]
        pub(crate) fn advance(by: Duration) {
            NOW_NS.fetch_add(by.as_nanos() as u64, Relaxed);
        }
    }
}
