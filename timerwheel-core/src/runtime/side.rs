//! What a periodic or a wall-clock timer keeps beside its wheel entry, in a slab per shard.
//! The entry holds the index of its record (a one-shot has none), and the record's variant
//! is the one place that says which kind of timer it is.

use std::num::NonZeroU32;
use std::time::SystemTime;

use super::periodic::Periodic;
use super::shard::Schedule;
use crate::wheel::Key;

/// The record of a timer that is not a plain one-shot.
pub(crate) enum Side {
    /// A periodic timer's schedule.
    Periodic(Periodic),
    /// A one-shot for a wall-clock time: its key, to re-place it when the system clock is
    /// stepped.
    Wall { key: Key, when: SystemTime },
}

/// Where a record is kept: its index in the slab, plus one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SideId(NonZeroU32);

/// The records of one shard; freed slots are reused.
#[derive(Default)]
pub(crate) struct Sides {
    slots: Vec<Option<Side>>,
    free: Vec<SideId>,
    walls: usize,
}

impl SideId {
    fn index(self) -> usize {
        self.0.get() as usize - 1
    }
}

impl Sides {
    /// Keeps `side`; its id stays valid until [`remove`](Self::remove).
    pub(crate) fn insert(&mut self, side: Side) -> SideId {
        self.walls += usize::from(matches!(side, Side::Wall { .. }));
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            let slot = u32::try_from(self.slots.len()).expect("fewer records than wheel nodes");
            SideId(NonZeroU32::new(slot).expect("one past an index is never 0"))
        });
        self.slots[id.index()] = Some(side);
        id
    }

    /// Frees the record.
    pub(crate) fn remove(&mut self, id: SideId) {
        if let Some(side) = self.slots[id.index()].take() {
            self.walls -= usize::from(matches!(side, Side::Wall { .. }));
            self.free.push(id);
        }
    }

    /// The schedule of a periodic timer; `None` for any other (`id` none: a one-shot).
    pub(crate) fn periodic(&self, id: Option<SideId>) -> Option<&Periodic> {
        match self.slots[id?.index()].as_ref() {
            Some(Side::Periodic(periodic)) => Some(periodic),
            _ => None,
        }
    }

    /// [`periodic`](Self::periodic), to change.
    pub(crate) fn periodic_mut(&mut self, id: Option<SideId>) -> Option<&mut Periodic> {
        match self.slots[id?.index()].as_mut() {
            Some(Side::Periodic(periodic)) => Some(periodic),
            _ => None,
        }
    }

    /// The schedule of the timer whose record is `id` (none: a one-shot).
    pub(crate) fn schedule(&self, id: Option<SideId>) -> Schedule {
        match id.and_then(|id| self.slots[id.index()].as_ref()) {
            Some(Side::Periodic(periodic)) => Schedule::Every {
                period: periodic.period_ns,
                mode: periodic.mode,
            },
            Some(Side::Wall { when, .. }) => Schedule::At(*when),
            None => Schedule::Once,
        }
    }

    /// Whether `id` is the record of a wall-clock timer.
    pub(crate) fn is_wall(&self, id: SideId) -> bool {
        matches!(self.slots[id.index()], Some(Side::Wall { .. }))
    }

    /// Whether any wall-clock timer is kept.
    pub(crate) fn has_walls(&self) -> bool {
        self.walls > 0
    }

    /// Every wall-clock timer: its key and its time.
    pub(crate) fn walls(&self) -> impl Iterator<Item = (Key, SystemTime)> + '_ {
        self.slots.iter().filter_map(|slot| match slot {
            Some(Side::Wall { key, when }) => Some((*key, *when)),
            _ => None,
        })
    }

    /// Frees every record.
    pub(crate) fn clear(&mut self) {
        *self = Sides::default();
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
        let wall = || Side::Wall {
            key,
            when: SystemTime::UNIX_EPOCH,
        };
        let mut sides = Sides::default();
        let periodic = sides.insert(Side::Periodic(Periodic::new(1, PeriodMode::FixedRate)));
        let first_wall = sides.insert(wall());
        assert!(sides.has_walls() && sides.is_wall(first_wall) && !sides.is_wall(periodic));
        assert!(sides.periodic(Some(periodic)).is_some());
        assert!(sides.periodic(Some(first_wall)).is_none() && sides.periodic(None).is_none());
        sides.remove(first_wall);
        assert!(!sides.has_walls());
        assert_eq!(
            sides.insert(wall()),
            first_wall,
            "a freed slot is taken first"
        );
        assert_eq!(sides.walls().map(|(k, _)| k).collect::<Vec<_>>(), [key]);
        sides.clear();
        assert!(!sides.has_walls() && sides.walls().next().is_none());
    }
}
