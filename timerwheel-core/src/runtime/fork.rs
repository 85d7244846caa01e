//! fork(): the runtime's locks around it, and what the child may do with the parent's runtimes.
//!
//! The child of a multithreaded process has one thread, the one that called fork(). The
//! other threads of the parent, the runtimes' tick threads and workers among them, do not
//! exist there, and a lock one of them held at that moment stays locked for good. So the
//! handlers installed with `pthread_atfork` (once, when the first runtime starts) take every
//! lock a runtime call can hold before the fork, and release them after it, in the parent
//! and in the child.
//!
//! In the child, every runtime started before the fork is *forked*: a call that would need
//! its threads (add, cancel, reset, poll) refuses with [`Error::Forked`](super::Error::Forked),
//! and `shutdown` drops its pending timers without waiting for threads that are not there.
//! A runtime knows it is forked by the fork generation it was started in, which the child
//! handler advances. A [`PerProcess`] value (the default runtime) is made again on its first
//! use in the child.
//!
//! Lock order, the order `prepare` takes them in: the [`PerProcess`] slots' lock, the
//! registry, then each registered runtime's locks ([`Lockable::lock_all`]). No runtime call
//! holds two of them in another order: making a `PerProcess` value may start a runtime
//! (slots, then registry), and the runtime's own calls hold one of its locks at a time.

use std::cell::RefCell;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// How many fork()s lie between the first process and this one; 0 in a process that is no
/// fork() child of a process that used the library.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Every runtime started in this process and not yet freed (dead entries are pruned when a
/// runtime registers).
static REGISTRY: Mutex<Vec<Weak<dyn Lockable>>> = Mutex::new(Vec::new());

/// Held while a [`PerProcess`] value is made.
static SLOTS: Mutex<()> = Mutex::new(());

/// The current fork generation (see [`GENERATION`]).
#[inline]
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// What the fork handlers need of a runtime: its locks.
pub(crate) trait Lockable: Send + Sync {
    /// Takes every lock of the runtime, in a fixed order; dropping the result releases them.
    fn lock_all(&self) -> Box<dyn Held + '_>;
}

/// Anything held across a fork (lock guards); only ever dropped.
pub(crate) trait Held {}

impl<T> Held for T {}

/// Registers a runtime that just started, so that its locks are held across a fork, and
/// installs the fork handlers on the first call.
pub(crate) fn register<R: Lockable + 'static>(runtime: &Arc<R>) {
    install_handlers();
    let runtime: Weak<dyn Lockable> = Arc::downgrade(runtime) as Weak<dyn Lockable>;
    let mut registry = lock(&REGISTRY);
    registry.retain(|entry| entry.strong_count() > 0);
    registry.push(runtime);
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics under these locks; a poisoned one still guards consistent data.
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Everything `prepare` took, in the order it is released: the runtimes' locks, the
/// runtimes they borrow from, the registry, the slots.
struct Taken {
    _locks: Vec<Box<dyn Held>>,
    _runtimes: Vec<Arc<dyn Lockable>>,
    _registry: MutexGuard<'static, Vec<Weak<dyn Lockable>>>,
    _slots: MutexGuard<'static, ()>,
}

thread_local! {
    /// What `prepare` took, on the thread that calls fork(); the handlers after the fork run
    /// on that same thread (in the child, on its copy).
    static TAKEN: RefCell<Option<Taken>> = const { RefCell::new(None) };
}

/// Before fork(): takes every lock in the documented order.
extern "C" fn prepare() {
    let slots = lock(&SLOTS);
    let registry = lock(&REGISTRY);
    let runtimes: Vec<Arc<dyn Lockable>> = registry.iter().filter_map(Weak::upgrade).collect();
    let locks = runtimes
        .iter()
        .map(|runtime| {
            let held = runtime.lock_all();
            // SAFETY: only the lifetime changes. The guards borrow from a runtime that
            // `Taken::_runtimes` keeps alive, and `Taken` drops `_locks` before it.
            unsafe { std::mem::transmute::<Box<dyn Held + '_>, Box<dyn Held + 'static>>(held) }
        })
        .collect();
    let taken = Taken {
        _locks: locks,
        _runtimes: runtimes,
        _registry: registry,
        _slots: slots,
    };
    // A thread whose thread-locals are gone (fork() from a thread-local destructor) forks
    // without holding the locks, as before the handlers existed.
    let _ = TAKEN.try_with(|cell| *cell.borrow_mut() = Some(taken));
}

/// After fork(), in the parent: releases the locks.
extern "C" fn after_in_parent() {
    let _ = TAKEN.try_with(|cell| cell.borrow_mut().take());
}

/// After fork(), in the child: every runtime started so far is forked, the clock's anchor is
/// freed if it was being written; releases the locks.
extern "C" fn after_in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    super::tsc::after_fork_in_child();
    let _ = TAKEN.try_with(|cell| cell.borrow_mut().take());
}

#[cfg(unix)]
fn install_handlers() {
    use std::ffi::c_int;
    type Handler = Option<extern "C" fn()>;
    extern "C" {
        fn pthread_atfork(prepare: Handler, parent: Handler, child: Handler) -> c_int;
    }
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: pthread_atfork only records the three pointers; they are functions of this
        // library, which the C library forgets again if the library is unloaded.
        unsafe { pthread_atfork(Some(prepare), Some(after_in_parent), Some(after_in_child)) };
    });
}

#[cfg(not(unix))]
fn install_handlers() {}

/// A process-wide value made on first use, and made again on the first use in a fork()
/// child: the default runtime, whose threads a child does not have. Values are never freed;
/// the ones a child inherits stay reachable from here, unused.
pub struct PerProcess<T: 'static> {
    current: AtomicPtr<Made<T>>,
}

struct Made<T> {
    value: T,
    generation: u64,
    /// The value the parent process made (kept, never used again).
    _parent: *mut Made<T>,
}

impl<T: 'static> PerProcess<T> {
    /// An empty slot, for a `static`.
    pub const fn new() -> Self {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl<T: 'static> Default for PerProcess<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + Sync + 'static> PerProcess<T> {
    /// This process's value: made by `init` on the first call in this process (the first
    /// call at all, or the first in a fork() child), then the same one every time.
    pub fn get_or_init(&'static self, init: impl FnOnce() -> T) -> &'static T {
        match self.of_this_process(self.current.load(Ordering::Acquire)) {
            Some(value) => value,
            None => self.make(init),
        }
    }

    fn of_this_process(&self, made: *mut Made<T>) -> Option<&'static T> {
        // SAFETY: a non-null pointer in `current` comes from `Box::into_raw` in `make` and is
        // never freed, and the value it holds is never changed.
        let made: &'static Made<T> = unsafe { made.as_ref() }?;
        (made.generation == generation()).then_some(&made.value)
    }

    #[cold]
    fn make(&'static self, init: impl FnOnce() -> T) -> &'static T {
        let _slots = lock(&SLOTS);
        let parent = self.current.load(Ordering::Acquire);
        if let Some(value) = self.of_this_process(parent) {
            return value;
        }
        let made = Box::into_raw(Box::new(Made {
            value: init(),
            generation: generation(),
            _parent: parent,
        }));
        self.current.store(made, Ordering::Release);
        // SAFETY: just made from a Box, never freed.
        unsafe { &(*made).value }
    }
}
