//! `PyTask`: a Python callable with its arguments, run by the runtime as a timer's task.
//!
//! The GIL is taken once per batch of due callbacks (`enter_batch`); `run` and `Drop`
//! attach again, which costs nothing while the batch holds it. Dropping the task is the
//! timer's end, so a fired or cancelled timer lets go of its callback and arguments at once.

use std::cell::Cell;
use std::panic;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use timerwheel_core::{prefetch, BoxTask, Task, TimerId};

use crate::gil;

thread_local! {
    /// Set while this thread, attached, runs a call of the runtime that drops a task it
    /// ended right there ([`attached_drops`]).
    static ATTACHED_DROPS: Cell<bool> = const { Cell::new(false) };
}

/// Runs `call` (a call of the runtime, such as a cancel, that does not detach) telling the
/// tasks it drops that this thread is attached: a task whose callable is referenced
/// elsewhere too then says its drop is trivial (it only takes one from that count), so the
/// runtime drops it at once, without the scope of a timer's drop.
pub fn attached_drops<R>(_py: Python<'_>, call: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = ATTACHED_DROPS.try_with(|flag| flag.set(self.0));
        }
    }
    let _restore = Restore(ATTACHED_DROPS.with(|flag| flag.replace(true)));
    call()
}

/// The marker a task unwinds with after a callback raised: the runtime catches it and
/// counts it in `callback_panics`, so a Python exception is counted exactly like a Rust
/// panic without a counter of our own. `resume_unwind` skips the panic hook, so nothing
/// is printed besides what `sys.unraisablehook` prints.
pub struct CallbackRaised;

/// `func(*args, **kwargs)` with at least one argument: kept in a box of its own, so that the
/// common task without arguments is the callable alone.
struct Call {
    func: Py<PyAny>,
    // `None` for no positional arguments (keyword arguments only).
    args: Option<Py<PyTuple>>,
    kwargs: Option<Py<PyDict>>,
}

/// A callable alone, which the cancel that takes its timer without the shard's lock can
/// let go of through a shared reference ([`Task::release_shared`]): a reference of its
/// own, or null once released. Dropped only attached (see `Drop for PyTask`).
struct Func(AtomicPtr<pyo3::ffi::PyObject>);

impl Func {
    fn new(func: Py<PyAny>) -> Self {
        Func(AtomicPtr::new(func.into_ptr()))
    }

    /// The callable; `None` once released. Relaxed: the pointer is atomic only so that
    /// cancels may read it, and the one that took the timer release it, through a shared
    /// reference; they hold the GIL, which orders them.
    fn get(&self) -> Option<*mut pyo3::ffi::PyObject> {
        let func = self.0.load(Relaxed);
        (!func.is_null()).then_some(func)
    }

    fn bind<'a, 'py>(&'a self, py: Python<'py>) -> Option<Borrowed<'a, 'py, PyAny>> {
        // SAFETY: a reference of this task's own, alive until released.
        self.get()
            .map(|func| unsafe { Borrowed::from_ptr(py, func) })
    }

    /// Lets go of the callable, for the one cancel that took its timer: attached, after
    /// `drop_is_trivial` found its count above one (so nothing runs, nothing is freed).
    fn release_shared(&self) {
        if let Some(func) = self.get() {
            // No swap: no other thread reads or releases it meanwhile.
            self.0.store(ptr::null_mut(), Relaxed);
            // SAFETY: the reference was this task's own; the caller is attached.
            unsafe { pyo3::ffi::Py_DECREF(func) };
        }
    }
}

impl Drop for Func {
    fn drop(&mut self) {
        let func = *self.0.get_mut();
        if !func.is_null() {
            // SAFETY: the reference is this task's own; a `Func` is dropped attached.
            unsafe { pyo3::ffi::Py_DECREF(func) };
        }
    }
}

/// What a task holds: two words, so that a timer's node in the wheel stays small.
enum Held {
    /// `func()`: the callable alone, the common case (no box, no tuple).
    Func(Func),
    /// `func(*args, **kwargs)` with arguments.
    Call(Box<Call>),
    /// A task of the library's own.
    Native(Box<BoxTask>),
    /// Nothing: only inside `drop`, which takes the references out to release them while
    /// attached.
    Released,
}

impl Held {
    /// Whether it holds references to Python objects, which only an attached thread may
    /// let go of.
    fn holds_references(&self) -> bool {
        match self {
            Held::Func(func) => func.get().is_some(),
            Held::Call(_) => true,
            Held::Native(_) | Held::Released => false,
        }
    }
}

/// A timer's task: `func(*args, **kwargs)`, or a task of the library's own (a durable
/// timer's dispatch to its handler, which takes the GIL itself).
pub struct PyTask {
    held: Held,
}

impl From<BoxTask> for PyTask {
    fn from(task: BoxTask) -> Self {
        PyTask {
            held: Held::Native(Box::new(task)),
        }
    }
}

impl PyTask {
    /// A task that calls `func(*args, **kwargs)`; an empty args tuple or kwargs dict is
    /// not kept.
    pub fn new(
        func: Bound<'_, PyAny>,
        args: Option<Bound<'_, PyTuple>>,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyTask {
        let args = args.filter(|a| !a.is_empty()).map(Bound::unbind);
        let kwargs = kwargs.filter(|k| !k.is_empty()).map(Bound::unbind);
        let held = match (args, kwargs) {
            (None, None) => Held::Func(Func::new(func.unbind())),
            (args, kwargs) => Held::Call(Box::new(Call {
                func: func.unbind(),
                args,
                kwargs,
            })),
        };
        PyTask { held }
    }

    /// New references to its callable, positional and keyword arguments (if any).
    pub fn call_parts(&self, py: Python<'_>) -> Option<CallParts> {
        match &self.held {
            Held::Func(func) => Some((func.bind(py)?.to_owned().unbind(), None, None)),
            Held::Call(call) => {
                let args = call.args.as_ref().map(|args| args.clone_ref(py));
                let kwargs = call.kwargs.as_ref().map(|kwargs| kwargs.clone_ref(py));
                Some((call.func.clone_ref(py), args, kwargs))
            }
            Held::Native(_) | Held::Released => None,
        }
    }
}

/// A task's callable, positional arguments and keyword arguments (if any).
pub type CallParts = (Py<PyAny>, Option<Py<PyTuple>>, Option<Py<PyDict>>);

/// What a callback's exception becomes: reported (`sys.unraisablehook`), then the unwind
/// that the runtime counts.
fn raised(py: Python<'_>, err: PyErr, func: &Bound<'_, PyAny>) -> ! {
    err.write_unraisable(py, Some(func));
    panic::resume_unwind(Box::new(CallbackRaised));
}

fn invoke_func(py: Python<'_>, func: &Func) {
    let Some(func) = func.bind(py) else {
        return; // released: its timer was cancelled
    };
    if let Err(err) = func.call0() {
        raised(py, err, &func);
    }
}

impl Call {
    fn invoke(&self, py: Python<'_>) {
        let func = self.func.bind(py);
        let args = self.args.as_ref().map(|args| args.bind(py));
        let result = match (args, &self.kwargs) {
            (None, None) => func.call0(),
            (Some(args), None) => func.call1(args),
            (args, Some(kwargs)) => {
                let args = args.cloned().unwrap_or_else(|| PyTuple::empty(py));
                func.call(args, Some(kwargs.bind(py)))
            }
        };
        if let Err(err) = result {
            raised(py, err, func);
        }
    }
}

impl Task for PyTask {
    fn run(&mut self, id: TimerId) {
        // try_attach: None when the interpreter is shutting down; nothing can run any more.
        match &mut self.held {
            Held::Func(func) => {
                Python::try_attach(|py| invoke_func(py, func));
            }
            Held::Call(call) => {
                Python::try_attach(|py| call.invoke(py));
            }
            Held::Native(native) => native(id),
            Held::Released => {}
        }
    }

    /// The callable and its arguments are read first when the run starts.
    fn warm(&self) {
        match &self.held {
            Held::Func(func) => {
                if let Some(func) = func.get() {
                    prefetch(func);
                }
            }
            Held::Call(call) => {
                prefetch(call.func.as_ptr());
                if let Some(args) = &call.args {
                    prefetch(args.as_ptr());
                }
            }
            Held::Native(_) | Held::Released => {}
        }
    }

    /// A callable alone, with more references than this one, dropped by a thread that is
    /// attached ([`attached_drops`]): the drop takes one from its count, which stays above
    /// zero (no code runs, nothing is freed). The count is read and then dropped under the
    /// same hold of the GIL: no other thread changes it in between.
    /// That holds for this thread, now: so `Task::CANCEL_WITHOUT_LOCK` stays false (a task
    /// cancelled without the lock is dropped later, by any thread), and a cancel without
    /// the lock releases the callable itself (`RELEASE_WITHOUT_LOCK`).
    fn drop_is_trivial(&self) -> bool {
        match &self.held {
            Held::Func(func) => func.get().is_none_or(|func| {
                ATTACHED_DROPS.try_with(Cell::get).unwrap_or(false)
                    // SAFETY: this thread is attached (the flag), so the count is its to read.
                    && unsafe { pyo3::ffi::Py_REFCNT(func) } > 1
            }),
            Held::Call(_) | Held::Native(_) | Held::Released => false,
        }
    }

    /// `drop_is_trivial` said yes on this thread, attached: the GIL, held since, kept the
    /// count above one, and the callable emptied out drops nothing on any thread.
    const RELEASE_WITHOUT_LOCK: bool = true;

    fn release_shared(&self) {
        if let Held::Func(func) = &self.held {
            func.release_shared();
        }
    }

    /// A task a cancel without the lock took holds nothing (`release_shared` emptied its
    /// callable): forgotten, it skips the drop's checks, on the lock's next holder.
    fn end_taken_without_lock(self) {
        debug_assert!(
            matches!(&self.held, Held::Func(func) if func.get().is_none()),
            "only a released callable is taken without the lock"
        );
        std::mem::forget(self);
    }

    fn enter_batch(batch: &mut dyn FnMut()) {
        let keep = gil::should_keep();
        let attached = Python::try_attach(|py| {
            if keep {
                gil::keep(py);
            }
            batch()
        });
        if attached.is_none() {
            batch();
        }
    }
}

impl Drop for PyTask {
    fn drop(&mut self) {
        if !self.held.holds_references() {
            return; // what is left (a box of the library's own, or nothing) drops anywhere
        }
        let held = std::mem::replace(&mut self.held, Held::Released);
        if ATTACHED_DROPS.try_with(Cell::get).unwrap_or(false) {
            // Attached, in a call of `attached_drops`: the references go at once.
            drop(held);
        } else if let Err(held) = release(held) {
            // The interpreter is gone: the references cannot be released any more.
            std::mem::forget(held);
        }
    }
}

/// Releases the references now, attached to the interpreter (a no-op attach when the
/// thread already holds the GIL); hands `held` back when the interpreter is gone.
fn release(held: Held) -> Result<(), Held> {
    let mut slot = Some(held);
    match Python::try_attach(|_py| drop(slot.take())) {
        Some(()) => Ok(()),
        None => Err(slot.take().expect("not taken when not attached")),
    }
}
