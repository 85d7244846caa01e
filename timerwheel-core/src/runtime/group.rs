//! Timer groups: the timers of one application entity (a session), deleted together, with
//! one piece of data whose drop runs once, after the group was closed and its last timer
//! ended.
//!
//! A group lives in one shard, and so do its timers: one lock guards the group and every
//! timer in it, so deleting the group races with nothing. Its timers form a list threaded
//! through their member records in the shard's [`Extras`] (a timer outside every group has
//! no such record and pays nothing). `live` counts the timers whose task has not been
//! dropped yet; it only falls after a drop, so the group's data is dropped after the drop of
//! each of its timers. Every timer on the list is counted in `live`, so a group's slot
//! outlives every reference to it from a member.

use std::fmt;
use std::num::NonZeroU64;

use super::extras::{ExtraId, Extras, Slot};
use super::Error;
use crate::wheel::Key;

/// The data a group carries; dropping it is the group's drop.
pub type GroupData = Box<dyn std::any::Any + Send>;

/// The id of a group in a [`Runtime`](crate::Runtime). Never zero. Generational like a
/// [`TimerId`](crate::TimerId): the id of a group that ended, or of a group of another
/// runtime, finds nothing (`Error::NotFound`). Group ids and timer ids are written apart:
/// one given for the other is not found either.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(NonZeroU64);

impl GroupId {
    /// The id as the C ABI passes it.
    pub fn as_u64(self) -> u64 {
        self.0.get()
    }

    /// An id from its C form; `None` for 0, which never names a group.
    pub fn from_u64(raw: u64) -> Option<GroupId> {
        NonZeroU64::new(raw).map(GroupId)
    }
}

impl fmt::Debug for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GroupId({:#x})", self.0)
    }
}

struct Group {
    data: GroupData,
    closed: bool,
    /// Timers of the group whose task has not been dropped yet.
    live: usize,
    /// The member record of the first timer on the group's list.
    head: Option<ExtraId>,
}

struct Entry {
    generation: u32,
    group: Option<Group>,
}

/// The groups of one shard, in a generational table; freed slots are reused.
#[derive(Default)]
pub(crate) struct Groups {
    entries: Vec<Entry>,
    free: Vec<Slot>,
}

impl Groups {
    /// A new open group holding `data`; its key. `data` comes back when the table holds
    /// `limit` groups.
    pub(crate) fn create(&mut self, data: GroupData, limit: usize) -> Result<Key, GroupData> {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None if self.entries.len() < limit => {
                self.entries.push(Entry {
                    generation: 1,
                    group: None,
                });
                (self.entries.len() - 1) as Slot
            }
            None => return Err(data),
        };
        let entry = &mut self.entries[slot as usize];
        entry.group = Some(Group {
            data,
            closed: false,
            live: 0,
            head: None,
        });
        Ok(key_of(slot, entry.generation))
    }

    /// The slot of the live group `key` names; `NotFound` for a stale or unknown key.
    pub(crate) fn find(&self, key: Key) -> Result<Slot, Error> {
        let slot = key.index();
        let entry = self.entries.get(slot as usize).ok_or(Error::NotFound)?;
        let live = entry.group.is_some() && key_of(slot, entry.generation) == key;
        live.then_some(slot).ok_or(Error::NotFound)
    }

    /// [`find`](Self::find), for a group that takes timers: `GroupClosed` once closed.
    pub(crate) fn find_open(&self, key: Key) -> Result<Slot, Error> {
        let slot = self.find(key)?;
        match self.group(slot).closed {
            true => Err(Error::GroupClosed),
            false => Ok(slot),
        }
    }

    fn group(&self, slot: Slot) -> &Group {
        self.entries[slot as usize]
            .group
            .as_ref()
            .expect("a slot in use holds its group")
    }

    fn group_mut(&mut self, slot: Slot) -> &mut Group {
        self.entries[slot as usize]
            .group
            .as_mut()
            .expect("a slot in use holds its group")
    }

    /// Puts the timer whose member record is `member` on the group's list.
    pub(crate) fn link(&mut self, extras: &mut Extras, slot: Slot, member: ExtraId) {
        let group = self.group_mut(slot);
        group.live += 1;
        let next = group.head.replace(member);
        if let Some(next) = next {
            extras.member_mut(next).prev = Some(member);
        }
        extras.member_mut(member).next = next;
    }

    /// Takes the timer whose member record is `member` off its group's list (it stays
    /// counted until its task is dropped: [`dropped`](Self::dropped)).
    pub(crate) fn unlink(&mut self, extras: &mut Extras, member: ExtraId) {
        let record = extras.member_mut(member);
        let (slot, prev, next) = (record.group, record.prev.take(), record.next.take());
        match prev {
            Some(prev) => extras.member_mut(prev).next = next,
            None => self.group_mut(slot).head = next,
        }
        if let Some(next) = next {
            extras.member_mut(next).prev = prev;
        }
    }

    /// Empties the group's list, for a delete of all of them: the keys of its timers. Each
    /// stays counted until its drop; a timer that is not deleted (it is running) leaves
    /// no list when it ends.
    pub(crate) fn take_members(&mut self, extras: &mut Extras, slot: Slot) -> Vec<Key> {
        let mut keys = Vec::new();
        let mut at = self.group_mut(slot).head.take();
        while let Some(member) = at {
            let record = extras.member_mut(member);
            record.prev = None;
            at = record.next.take();
            keys.push(record.key);
        }
        keys
    }

    /// Closes the group to new timers; its data if that ended it (no timer left).
    /// `GroupClosed` if it was closed already.
    pub(crate) fn close(&mut self, slot: Slot) -> Result<Option<GroupData>, Error> {
        let group = self.group_mut(slot);
        if group.closed {
            return Err(Error::GroupClosed);
        }
        group.closed = true;
        Ok(self.end_if_idle(slot))
    }

    /// [`close`](Self::close), of a group that may be closed already.
    pub(crate) fn ensure_closed(&mut self, slot: Slot) -> Option<GroupData> {
        self.close(slot).unwrap_or_else(|_| self.end_if_idle(slot))
    }

    /// `count` timers of the group had their task dropped; its data if that ended it.
    pub(crate) fn dropped(&mut self, slot: Slot, count: usize) -> Option<GroupData> {
        self.group_mut(slot).live -= count;
        self.end_if_idle(slot)
    }

    /// Ends the group if it is closed and has no timer left: its data to drop.
    fn end_if_idle(&mut self, slot: Slot) -> Option<GroupData> {
        let group = self.group(slot);
        if !group.closed || group.live > 0 {
            return None;
        }
        let entry = &mut self.entries[slot as usize];
        entry.generation = entry.generation.wrapping_add(1).max(1);
        self.free.push(slot);
        entry.group.take().map(|group| group.data)
    }

    /// For shutdown, once the shard's timers are gone from its wheel: closes every group and
    /// empties its list (the member records went with the timers).
    pub(crate) fn close_all(&mut self) {
        for group in self.entries.iter_mut().filter_map(|e| e.group.as_mut()) {
            group.closed = true;
            group.head = None;
        }
    }

    /// For shutdown, after the discarded timers' drops: the data of every group that has
    /// no timer left (a group whose timer is still running ends when it returns).
    pub(crate) fn end_idle(&mut self) -> Vec<GroupData> {
        let alive: Vec<Slot> = (0..self.entries.len() as Slot)
            .filter(|&slot| self.entries[slot as usize].group.is_some())
            .collect();
        alive
            .into_iter()
            .filter_map(|slot| self.end_if_idle(slot))
            .collect()
    }

    /// Groups alive (open, or closed with timers left).
    pub(crate) fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

fn key_of(slot: Slot, generation: u32) -> Key {
    Key::from_u64((u64::from(generation) << 32) | u64::from(slot)).expect("a generation is never 0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> GroupData {
        Box::new(())
    }

    #[test]
    fn a_group_ends_once_closed_and_empty_and_its_key_goes_stale() {
        let mut groups = Groups::default();
        let key = groups.create(data(), usize::MAX).ok().unwrap();
        let slot = groups.find_open(key).unwrap();
        groups.group_mut(slot).live = 1;
        assert!(groups.close(slot).unwrap().is_none(), "a timer is left");
        assert_eq!(groups.find_open(key), Err(Error::GroupClosed));
        assert_eq!(groups.close(slot).err(), Some(Error::GroupClosed));
        assert!(groups.dropped(slot, 1).is_some(), "the last timer ended it");
        assert_eq!(groups.find(key), Err(Error::NotFound));
        let again = groups.create(data(), usize::MAX).ok().unwrap();
        assert_eq!(again.index(), key.index(), "the slot is reused");
        assert_ne!(again, key, "under a new generation");
        assert_eq!(groups.len(), 1);
    }

    #[test]
    fn the_table_refuses_a_group_beyond_its_limit_and_hands_the_data_back() {
        let mut groups = Groups::default();
        assert!(groups.create(data(), 1).is_ok());
        assert!(groups.create(data(), 1).is_err());
    }
}
