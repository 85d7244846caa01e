//! The Rust API's groups, in the shape of a cancellation scope: a [`Group`] owns its group
//! and cancels every timer in it when it is dropped (as leaving a scope, or calling a
//! `context.Context`'s cancel function, ends the work started under it); a [`GroupHandle`]
//! is what callbacks keep to add the next timer to the group or to cancel it.

use std::ops::Deref;
use std::sync::Weak;
use std::time::{Duration, SystemTime};

use super::clock::Deadline;
use super::extras::Schedule;
use super::runtime_state::RuntimeState;
use super::{periodic_schedule, BoxTask, Error, GroupId, PeriodMode, Timer, TimerId};

/// A group of timers, owned: dropping it (or [`cancel`](Self::cancel)) cancels every timer
/// in it and closes it; [`close`](Self::close) lets its timers run on instead. Either way
/// the group's data ([`Runtime::group_with`](crate::Runtime::group_with)) is dropped once
/// the last timer has ended. It derefs to a [`GroupHandle`], which adds timers.
///
/// ```
/// use std::time::Duration;
/// use timerwheel_core::Runtime;
///
/// let rt = Runtime::builder().max_workers(1).build().unwrap();
/// let session = rt.group().unwrap();
/// let idle = session.after(Duration::from_secs(30), |_| println!("idle")).unwrap();
/// let charges = session.every(Duration::from_secs(1), |_| println!("charge")).unwrap();
/// drop(session); // hang-up: both timers are cancelled
/// assert!(!idle.is_active() && !charges.is_active());
/// ```
#[derive(Debug)]
pub struct Group {
    /// `None` once closed or cancelled by a call that consumed the group.
    handle: Option<GroupHandle>,
}

/// A handle to a group of the Rust API, for adding timers to it (from its own callbacks
/// too) and cancelling it. It does not own the group: dropping it changes nothing, and its
/// adds are refused (`GroupClosed`, then `NotFound`) once the owner closed it.
#[derive(Clone)]
pub struct GroupHandle {
    id: GroupId,
    runtime: Weak<RuntimeState<BoxTask>>,
}

impl Group {
    pub(crate) fn new(id: GroupId, runtime: Weak<RuntimeState<BoxTask>>) -> Self {
        Group {
            handle: Some(GroupHandle { id, runtime }),
        }
    }

    /// A handle to add timers from elsewhere (a callback of the group).
    pub fn handle(&self) -> GroupHandle {
        self.deref().clone()
    }

    /// Lets go of the group without cancelling it: it takes no more timers, its timers run
    /// on, and its data is dropped after the last of them ended (at once if none is left).
    pub fn close(mut self) -> Result<(), Error> {
        let handle = self.handle.take().expect("an open group has its handle");
        handle.with(|rt| rt.close_group(handle.id))
    }

    /// Cancels every timer of the group and closes it, as dropping it does, but says what
    /// happened: `NotFound` if it had ended already (it cannot, while it is open),
    /// `Shutdown` if the runtime is gone.
    pub fn cancel(mut self) -> Result<(), Error> {
        let handle = self.handle.take().expect("an open group has its handle");
        handle.delete()
    }
}

impl Deref for Group {
    type Target = GroupHandle;

    fn deref(&self) -> &GroupHandle {
        self.handle.as_ref().expect("an open group has its handle")
    }
}

impl Drop for Group {
    /// Cancels every timer of the group and closes it.
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let _ = handle.delete();
        }
    }
}

impl std::fmt::Debug for GroupHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("GroupHandle").field(&self.id).finish()
    }
}

impl GroupHandle {
    /// The group's id.
    pub fn id(&self) -> GroupId {
        self.id
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&RuntimeState<BoxTask>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        f(&*self.runtime.upgrade().ok_or(Error::Shutdown)?)
    }

    fn add(
        &self,
        deadline: impl FnOnce(&RuntimeState<BoxTask>) -> Deadline,
        schedule: Schedule,
        task: BoxTask,
    ) -> Result<Timer, Error> {
        self.with(|rt| {
            rt.add_in_group(self.id, deadline(rt), schedule, task, |_| {})
                .map(|id| Timer::new(id, self.runtime.clone()))
                .map_err(|rejected| rejected.error)
        })
    }

    /// Runs `f` once, `delay` from now, as a timer of this group.
    pub fn after(
        &self,
        delay: Duration,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        let deadline = |rt: &RuntimeState<BoxTask>| rt.clock.deadline_after(delay);
        self.add(deadline, Schedule::Once, Box::new(f))
    }

    /// Runs `f` once at the wall-clock time `when`, as a timer of this group.
    pub fn at(
        &self,
        when: SystemTime,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        let deadline = |rt: &RuntimeState<BoxTask>| rt.deadline_at(when);
        self.add(deadline, Schedule::At(when), Box::new(f))
    }

    /// Runs `f` every `period`, first after `period`, at a fixed rate, as a timer of this
    /// group.
    pub fn every(
        &self,
        period: Duration,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        let schedule = periodic_schedule(period, PeriodMode::FixedRate).ok_or(Error::Invalid)?;
        let deadline = |rt: &RuntimeState<BoxTask>| rt.clock.deadline_after(period);
        self.add(deadline, schedule, Box::new(f))
    }

    /// Cancels every timer of the group and closes it (from one of its callbacks too); the
    /// owner's [`Group`] then has nothing left to cancel. False if the group had ended.
    pub fn cancel(&self) -> bool {
        self.delete().is_ok()
    }

    fn delete(&self) -> Result<(), Error> {
        self.with(|rt| rt.delete_group(self.id))
    }
}
