//! What a timer that is not a plain one-shot keeps beside its wheel entry (its extra record:
//! a periodic schedule, a wall-clock time, a group membership), in a slab per shard.
//! The entry holds the index of its record (a one-shot has none), and the record's variant
//! is the one place that says which kind of timer it is. A timer in a group has a member
//! record, which holds the record of its kind, if any (see `group.rs`).

use std::num::NonZeroU32;
use std::time::SystemTime;

use super::clock::Deadline;
use super::periodic::Periodic;
use super::PeriodMode;
use crate::wheel::Key;

/// Where a group is kept in its shard's table: stays valid while the group lives.
pub(crate) type Slot = u32;

/// When a timer runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Schedule {
    Once,
    /// `period` in nanoseconds, exact.
    Every {
        period: u64,
        mode: PeriodMode,
    },
    At(SystemTime),
    /// A periodic timer whose first run is off its grid: one run now for the points that
    /// passed before it was added; after it, the schedule goes on at `then`.
    EveryAfterCatchUp {
        period: u64,
        mode: PeriodMode,
        then: Deadline,
    },
}

/// The record of a timer that is not a plain one-shot.
pub(crate) enum Extra {
    /// A periodic timer's schedule.
    Periodic(Periodic),
    /// A one-shot for a wall-clock time: its key, to re-place it when the system clock is
    /// stepped.
    Wall { key: Key, when: SystemTime },
    /// A timer in a group.
    Member(Member),
}

/// A timer's place in its group: the group, its neighbours on the group's list, and the
/// record of its kind (periodic, wall clock; none for a one-shot).
pub(crate) struct Member {
    pub(crate) key: Key,
    pub(crate) group: Slot,
    pub(crate) prev: Option<ExtraId>,
    pub(crate) next: Option<ExtraId>,
    pub(crate) kind: Option<ExtraId>,
}

/// Where a record is kept: its index in the slab, plus one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExtraId(NonZeroU32);

/// The records of one shard; freed slots are reused.
#[derive(Default)]
pub(crate) struct Extras {
    slots: Vec<Option<Extra>>,
    free: Vec<ExtraId>,
    walls: usize,
}

impl ExtraId {
    fn index(self) -> usize {
        self.0.get() as usize - 1
    }
}

impl Extras {
    /// Keeps `extra`; its id stays valid until [`remove`](Self::remove).
    pub(crate) fn insert(&mut self, extra: Extra) -> ExtraId {
        self.walls += usize::from(matches!(extra, Extra::Wall { .. }));
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            let slot = u32::try_from(self.slots.len()).expect("fewer records than wheel nodes");
            ExtraId(NonZeroU32::new(slot).expect("one past an index is never 0"))
        });
        self.slots[id.index()] = Some(extra);
        id
    }

    /// Frees the record (a member's, with the record of its kind); the group of a member
    /// (take it off the group's list first).
    pub(crate) fn remove(&mut self, id: ExtraId) -> Option<Slot> {
        match self.take(id)? {
            Extra::Member(member) => Some(self.remove_member(member)),
            _ => None,
        }
    }

    /// Frees the record `id`; what it held.
    fn take(&mut self, id: ExtraId) -> Option<Extra> {
        let extra = self.slots[id.index()].take()?;
        self.walls -= usize::from(matches!(extra, Extra::Wall { .. }));
        self.free.push(id);
        Some(extra)
    }

    /// Frees the kind record of a member whose record was taken; its group. Out of the
    /// way of the timers outside groups.
    #[cold]
    #[inline(never)]
    fn remove_member(&mut self, member: Member) -> Slot {
        if let Some(kind) = member.kind {
            self.take(kind);
        }
        member.group
    }

    /// The record that says the timer's kind: `id` itself, or a member's kind record.
    fn kind(&self, id: Option<ExtraId>) -> Option<ExtraId> {
        let id = id?;
        match &self.slots[id.index()] {
            Some(Extra::Member(member)) => member.kind,
            _ => Some(id),
        }
    }

    /// The schedule of a periodic timer; `None` for any other (`id` none: a one-shot).
    pub(crate) fn periodic(&self, id: Option<ExtraId>) -> Option<&Periodic> {
        match self.slots[id?.index()].as_ref() {
            Some(Extra::Periodic(periodic)) => Some(periodic),
            Some(Extra::Member(member)) => self.periodic(member.kind),
            _ => None,
        }
    }

    /// [`periodic`](Self::periodic), to change.
    pub(crate) fn periodic_mut(&mut self, id: Option<ExtraId>) -> Option<&mut Periodic> {
        let kind = self.kind(id)?;
        match self.slots[kind.index()].as_mut() {
            Some(Extra::Periodic(periodic)) => Some(periodic),
            _ => None,
        }
    }

    /// What a run needs to know of a timer: whether it is periodic, and its group.
    #[inline]
    pub(crate) fn run_kind(&self, id: Option<ExtraId>) -> (bool, Option<Slot>) {
        match id.and_then(|id| self.slots[id.index()].as_ref()) {
            Some(Extra::Periodic(_)) => (true, None),
            Some(Extra::Member(member)) => {
                (self.periodic(member.kind).is_some(), Some(member.group))
            }
            _ => (false, None),
        }
    }

    /// The group of the timer whose record is `id`; `None` outside every group.
    pub(crate) fn group(&self, id: Option<ExtraId>) -> Option<Slot> {
        match self.slots[id?.index()].as_ref() {
            Some(Extra::Member(member)) => Some(member.group),
            _ => None,
        }
    }

    /// Makes the timer whose record is `kind` (`None`: a one-shot) a member of `group`;
    /// the member record, which the timer's entry holds from now on.
    pub(crate) fn insert_member(
        &mut self,
        key: Key,
        group: Slot,
        kind: Option<ExtraId>,
    ) -> ExtraId {
        self.insert(Extra::Member(Member {
            key,
            group,
            prev: None,
            next: None,
            kind,
        }))
    }

    /// The member record `id`, to change.
    pub(crate) fn member_mut(&mut self, id: ExtraId) -> &mut Member {
        match &mut self.slots[id.index()] {
            Some(Extra::Member(member)) => member,
            _ => unreachable!("a group's list holds member records only"),
        }
    }

    /// Makes a wall-clock timer whose record is `id` a plain one-shot: frees its wall-clock
    /// record (a member keeps its member record).
    pub(crate) fn drop_wall(&mut self, id: &mut Option<ExtraId>) {
        let Some(kind) = self.kind(*id).filter(|&kind| self.is_wall(kind)) else {
            return;
        };
        self.remove(kind);
        match self.slots[id.expect("a kind comes from a record").index()].as_mut() {
            Some(Extra::Member(member)) => member.kind = None,
            _ => *id = None,
        }
    }

    /// The schedule of the timer whose record is `id` (none: a one-shot).
    pub(crate) fn schedule(&self, id: Option<ExtraId>) -> Schedule {
        match self.kind(id).and_then(|id| self.slots[id.index()].as_ref()) {
            Some(Extra::Periodic(periodic)) => Schedule::Every {
                period: periodic.period_ns,
                mode: periodic.mode,
            },
            Some(Extra::Wall { when, .. }) => Schedule::At(*when),
            Some(Extra::Member(_)) | None => Schedule::Once,
        }
    }

    /// Whether `id` is the record of a wall-clock timer.
    fn is_wall(&self, id: ExtraId) -> bool {
        matches!(self.slots[id.index()], Some(Extra::Wall { .. }))
    }

    /// Whether any wall-clock timer is kept.
    pub(crate) fn has_walls(&self) -> bool {
        self.walls > 0
    }

    /// Every wall-clock timer: its key and its time.
    pub(crate) fn walls(&self) -> impl Iterator<Item = (Key, SystemTime)> + '_ {
        self.slots.iter().filter_map(|slot| match slot {
            Some(Extra::Wall { key, when }) => Some((*key, *when)),
            _ => None,
        })
    }

    /// Frees every record.
    pub(crate) fn clear(&mut self) {
        *self = Extras::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::PeriodMode;
    use crate::wheel::Wheel;

    #[test]
    fn records_are_reused_and_wall_clock_timers_counted() {
        let key = Wheel::new().insert(1, ()).unwrap();
        let wall = || Extra::Wall {
            key,
            when: SystemTime::UNIX_EPOCH,
        };
        let mut extras = Extras::default();
        let periodic = extras.insert(Extra::Periodic(Periodic::new(1, PeriodMode::FixedRate)));
        let first_wall = extras.insert(wall());
        assert!(extras.has_walls() && extras.is_wall(first_wall) && !extras.is_wall(periodic));
        assert!(extras.periodic(Some(periodic)).is_some());
        assert!(extras.periodic(Some(first_wall)).is_none() && extras.periodic(None).is_none());
        extras.remove(first_wall);
        assert!(!extras.has_walls());
        assert_eq!(
            extras.insert(wall()),
            first_wall,
            "a freed slot is taken first"
        );
        assert_eq!(extras.walls().map(|(k, _)| k).collect::<Vec<_>>(), [key]);
        extras.clear();
        assert!(!extras.has_walls() && extras.walls().next().is_none());
    }
}
