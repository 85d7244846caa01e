//! The hierarchical timing wheel as a plain data structure: no threads, no clock. Time is a
//! tick number that the caller passes to [`Wheel::advance`]; everything is O(1) but the
//! advance, which costs O(levels) plus the entries it moves.
//!
//! The geometry (six levels of 128 slots, an overflow list beyond) is tabled in `level.rs`.
//! Entries are nodes in a pool (`pool.rs`), linked by `u32` index into one doubly-linked
//! list per slot; a bitmap per level marks the slots that hold something, so the next
//! non-empty slot is found with one rotate and one count of trailing zeros.
//!
//! Cascading is spread out: while a level runs through its current rotation, the next slot
//! of the level above is moved down in chunks of at least [`DRAIN_CHUNK`] entries, paced to
//! finish before it comes due, so no single advance moves a whole upper slot at once.
//! [`Wheel::next_expiry`] asks to be advanced for those steps too.
//!
//! Order: within one advance, entries come out in nondecreasing deadline order, where a
//! deadline already past when the entry was inserted or reset counts as the wheel's `now` at
//! that moment; entries with the same deadline come out in no particular order.

mod level;
mod pool;
mod region;

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;

use level::{
    list_for, list_of, next_occupied, overflow_time, slot_time, slot_value, LEVELS, LISTS,
    OVERFLOW, SLOTS,
};
pub use pool::Key;
use pool::{Node, Pool, CANCELLED, DETACHED, NIL, OPEN, RETIRED};
pub use region::Prefault;

/// Asks the processor to bring the cache line at `ptr` into cache without reading it: a
/// hint that never faults, whatever the address.
pub fn prefetch<T: ?Sized>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)] // a safe function since Rust 1.87
    // SAFETY: a prefetch reads no memory and cannot fault, for any address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(ptr.cast::<i8>(), _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Least number of entries moved down per step when an upper slot is moved ahead of time.
pub const DRAIN_CHUNK: u64 = 1 << DRAIN_CHUNK_SHIFT;
const DRAIN_CHUNK_SHIFT: u32 = 8;

/// Removed entries whose nodes are unlinked together, at the latest. Unlinking writes to
/// both neighbours, two cache misses when the wheel is large; a batch lets the processor
/// overlap them instead of waiting for each in turn.
const UNLINK_BATCH: usize = 64;

/// Words of the occupancy bitmap: two per level (its 128 slots).
const OCCUPANCY_WORDS: usize = LEVELS * SLOTS / 64;

/// Chains per list. A node goes into the chain its index picks, and a list is emptied by
/// taking from its chains in turn: walking one chain waits for each node's cache miss
/// before it knows the next node, while separate chains let those misses overlap.
const LANES: usize = 4;

/// Where the chain of `list` that holds node `index` starts, in `Wheel::heads`.
fn head_of(list: usize, index: u32) -> usize {
    list * LANES + index as usize % LANES
}

/// An insert refused because the wheel holds its limit of entries; the value comes back.
#[derive(Debug, PartialEq, Eq)]
pub struct Full<T>(pub T);

/// A live entry of a [`Wheel`], found by its key once ([`Wheel::find`]) for the calls on it
/// that follow.
pub struct Found<'a, T> {
    wheel: &'a mut Wheel<T>,
    index: u32,
}

impl<T> Found<'_, T> {
    /// The entry's value.
    #[inline]
    pub fn value(&self) -> &T {
        self.wheel
            .pool
            .node(self.index)
            .value
            .as_ref()
            .expect("a live node holds a value")
    }

    /// The entry's value, mutably.
    #[inline]
    pub fn value_mut(&mut self) -> &mut T {
        let node = self.wheel.pool.node_mut(self.index);
        node.value.as_mut().expect("a live node holds a value")
    }

    /// Whether the entry waits in the wheel (not expired).
    #[inline]
    pub fn is_pending(&self) -> bool {
        self.wheel.pool.node(self.index).list != DETACHED
    }

    /// Takes the entry out, pending or expired (see [`Wheel::remove`]). Always inlined: out
    /// of line, the value it returns is moved through memory, which costs a delete as much
    /// as the removal itself.
    #[inline(always)]
    pub fn remove(self) -> T {
        let (wheel, index) = (self.wheel, self.index);
        let list = wheel.pool.node(index).list;
        if list == DETACHED {
            return wheel.pool.free(index);
        }
        wheel.uncount(usize::from(list));
        wheel.pool.node_mut(index).list = list | RETIRED;
        wheel.retired.push(index);
        let value = wheel.pool.retire(index);
        if wheel.retired.len() >= UNLINK_BATCH {
            wheel.unlink_retired();
        }
        value
    }

    /// Moves the entry to a new deadline; an expired entry becomes pending again.
    ///
    /// A pending entry above level 0 pushed later stays in its slot with the new deadline:
    /// that slot comes due no later than the new deadline, and the entry is re-placed then.
    /// So the common "touch" of an idle timeout writes one node and no list.
    #[inline]
    pub fn reset(self, deadline: u64) {
        let (wheel, index) = (self.wheel, self.index);
        let node = wheel.pool.node_mut(index);
        let above_level_0 = node.list != DETACHED && usize::from(node.list) >= SLOTS;
        if above_level_0 && deadline >= node.deadline {
            node.deadline = deadline;
            return;
        }
        wheel.relink(index, deadline);
    }
}

/// What [`Wheel::cancel_shared`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedCancel {
    /// The entry is marked cancelled: it will not expire, and [`Wheel::take_cancelled`]
    /// removes it.
    Cancelled,
    /// No live entry has this key (a stale key, or an entry cancelled already).
    NotFound,
    /// The entry was not opened to shared cancels, or has left its list since: cancel it
    /// with exclusive access.
    Refused,
}

/// A hierarchical timing wheel holding values of type `T` until their deadline tick.
pub struct Wheel<T> {
    pool: Pool<T>,
    /// The first node of each chain of each list ([`LANES`] per list).
    heads: Vec<u32>,
    counts: Vec<u32>,
    /// One bit per level list, set while it holds something: list `i` is bit `i % 64` of
    /// word `i / 64`, so level `L` is words `2L` (low half) and `2L + 1`.
    occupied: [u64; OCCUPANCY_WORDS],
    /// Lower bound of the deadlines in the overflow list.
    overflow_earliest: u64,
    now: u64,
    /// Nodes of removed entries, still linked in their lists (flagged `RETIRED`).
    retired: Vec<u32>,
    /// The chain `pop` looks at first.
    next_lane: usize,
    /// Log2 of the least number of entries moved down per step ([`DRAIN_CHUNK`] by default).
    drain_chunk_shift: u32,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("now", &self.now)
            .field("len", &self.len())
            .finish()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel at tick 0 with no limit on entries.
    pub fn new() -> Self {
        Self::with_limit(usize::MAX)
    }

    /// An empty wheel at tick 0 that holds at most `limit` entries.
    pub fn with_limit(limit: usize) -> Self {
        Self::with_drain_chunk(limit, DRAIN_CHUNK_SHIFT)
    }

    /// Like [`with_limit`](Self::with_limit), but moving upper slots down in chunks of at
    /// least `2^shift` entries (at most 2^16) instead of [`DRAIN_CHUNK`]. Behaviour is
    /// the same but for how many steps a move takes; a small chunk reaches the paced
    /// moves with a few entries, which is what the model tests and the fuzzer want.
    #[doc(hidden)]
    pub fn with_drain_chunk(limit: usize, shift: u32) -> Self {
        Wheel {
            pool: Pool::new(limit),
            heads: vec![NIL; LISTS * LANES],
            counts: vec![0; LISTS],
            occupied: [0; OCCUPANCY_WORDS],
            overflow_earliest: u64::MAX,
            now: 0,
            retired: Vec::with_capacity(UNLINK_BATCH),
            next_lane: 0,
            drain_chunk_shift: shift.min(16),
        }
    }

    /// Bytes of one node: the wheel's whole cost per entry, payload included.
    pub fn node_size() -> usize {
        std::mem::size_of::<Node<T>>()
    }

    /// Where the nodes lie in memory: node `key.index()` at this address plus the index
    /// times [`node_size`](Self::node_size). They move when the pool grows (at each
    /// doubling of its reservation), so this is a hint for a prefetch ahead of the lock
    /// that guards the wheel, never an address to read through.
    pub fn nodes_address(&self) -> usize {
        self.pool.address()
    }

    /// Starts loading the node of `key` into the cache, given where the nodes lay (a
    /// [`nodes_address`](Self::nodes_address), possibly stale): a hint that never faults.
    #[inline]
    pub fn prefetch_node(nodes_at: usize, key: Key) {
        pool::prefetch_node::<T>(nodes_at, key.index());
    }

    /// Memory the inserts so far ask to be faulted in ahead of their successors: run it
    /// after releasing the lock that guards the wheel (see [`Prefault`]). Left untaken,
    /// that memory is faulted in by the inserts that reach it.
    #[inline]
    pub fn take_prefault(&mut self) -> Option<Prefault> {
        self.pool.take_prefault()
    }

    /// The tick of the last advance.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Entries held: pending ones and expired ones not yet removed.
    pub fn len(&self) -> usize {
        self.pool.live()
    }

    /// Whether the wheel holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `value`, due at tick `deadline` (any u64; one already past is due at the next
    /// advance).
    #[inline(always)]
    pub fn insert(&mut self, deadline: u64, value: T) -> Result<Key, Full<T>> {
        if !self.retired.is_empty() && !self.pool.has_free() {
            self.unlink_retired(); // reuse before growing
        }
        let index = self.pool.alloc(deadline, value).map_err(Full)?;
        self.link(index);
        Ok(self.pool.key(index))
    }

    /// The live entry named by `key`, found once for the calls that follow; `None` for a
    /// stale key.
    #[inline]
    pub fn find(&mut self, key: Key) -> Option<Found<'_, T>> {
        let index = self.pool.resolve(key)?;
        Some(Found { wheel: self, index })
    }

    /// Takes the entry out, pending or expired; `None` for a stale key. The key is stale at
    /// once; the node of a pending entry is reused after a few more removes or the next
    /// advance.
    #[inline]
    pub fn remove(&mut self, key: Key) -> Option<T> {
        Some(self.find(key)?.remove())
    }

    /// Moves the entry to a new deadline; an expired entry becomes pending again. False
    /// for a stale key. See [`Found::reset`].
    #[inline]
    pub fn reset(&mut self, key: Key, deadline: u64) -> bool {
        self.find(key).map(|found| found.reset(deadline)).is_some()
    }

    /// Expires a pending entry on its own, now: it leaves its list and stays, expired, as
    /// [`expire`](Self::expire) leaves a due entry. False for a stale key.
    pub fn detach(&mut self, key: Key) -> bool {
        let Some(index) = self.pool.resolve(key) else {
            return false;
        };
        self.unlink(index);
        true
    }

    /// Lets threads with shared access cancel the pending entry `key`
    /// ([`cancel_shared`](Self::cancel_shared)) until it leaves its list (it expires, or is
    /// removed). False for a stale key.
    pub fn open_to_shared_cancel(&mut self, key: Key) -> bool {
        let Some(index) = self.pool.resolve(key) else {
            return false;
        };
        *self.pool.node_mut(index).shared_cancel.get_mut() = OPEN;
        true
    }

    /// Cancels the entry `key` with shared access, if it is pending, was opened to it
    /// ([`open_to_shared_cancel`](Self::open_to_shared_cancel)) and `may_cancel` agrees,
    /// asked of its value first. Of threads that cancel one entry at once, one gets
    /// `Cancelled` (and calls `cancelled` with the value), the others `NotFound`.
    ///
    /// The wheel is then inconsistent until [`take_cancelled`](Self::take_cancelled) removed
    /// the entry: the caller keeps the node's index, and calls it with exclusive access,
    /// before any other call that takes `&mut self`. Its lock sees to that.
    #[inline]
    pub fn cancel_shared(
        &self,
        key: Key,
        may_cancel: impl FnOnce(Option<&T>) -> bool,
        cancelled: impl FnOnce(Option<&T>),
    ) -> SharedCancel {
        let Some(node) = self.pool.live_node(key) else {
            return SharedCancel::NotFound;
        };
        if node.list & RETIRED != 0 {
            return SharedCancel::Refused; // expired (or removed)
        }
        // The value of a live node is there: `Option` only for a caller that need not look.
        let value = node.value.as_ref();
        if !may_cancel(value) {
            return SharedCancel::Refused;
        }
        // Relaxed: the lock that keeps writers away orders this with them.
        match node
            .shared_cancel
            .compare_exchange(OPEN, CANCELLED, Relaxed, Relaxed)
        {
            Ok(_) => {
                cancelled(value);
                SharedCancel::Cancelled
            }
            Err(CANCELLED) => SharedCancel::NotFound,
            Err(_) => SharedCancel::Refused,
        }
    }

    /// Removes the entry of node `index` if [`cancel_shared`](Self::cancel_shared) marked
    /// it cancelled; its value.
    #[inline]
    pub fn take_cancelled(&mut self, index: u32) -> Option<T> {
        let node = self.pool.node_mut(index);
        if *node.shared_cancel.get_mut() != CANCELLED {
            return None;
        }
        // Still in the list it was in when cancelled: nothing else ran since.
        let list = node.list;
        debug_assert_eq!(list & RETIRED, 0, "a cancelled node is linked");
        self.uncount(usize::from(list));
        self.splice_out(index, usize::from(list));
        Some(self.pool.free(index))
    }

    /// The entry's value.
    pub fn get(&self, key: Key) -> Option<&T> {
        let index = self.pool.resolve(key)?;
        self.pool.node(index).value.as_ref()
    }

    /// The entry's value, mutably.
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let index = self.pool.resolve(key)?;
        self.pool.node_mut(index).value.as_mut()
    }

    /// The entry's deadline as last inserted or reset.
    pub fn deadline(&self, key: Key) -> Option<u64> {
        let index = self.pool.resolve(key)?;
        Some(self.pool.node(index).deadline)
    }

    /// Every entry held, pending or expired: its key, its deadline and its value, in no
    /// particular order.
    pub fn entries(&self) -> impl Iterator<Item = (Key, u64, &T)> + '_ {
        self.pool.live_indices().filter_map(|index| {
            let node = self.pool.node(index);
            Some((self.pool.key(index), node.deadline, node.value.as_ref()?))
        })
    }

    /// The entry's value and whether it waits in the wheel (see [`is_pending`](Self::is_pending)),
    /// found at once.
    #[inline]
    pub fn get_and_pending(&self, key: Key) -> Option<(&T, bool)> {
        let node = self.pool.node(self.pool.resolve(key)?);
        Some((node.value.as_ref()?, node.list != DETACHED))
    }

    /// Whether the entry waits in the wheel (not expired, not removed).
    pub fn is_pending(&self, key: Key) -> bool {
        self.pool
            .resolve(key)
            .is_some_and(|index| self.pool.node(index).list != DETACHED)
    }

    /// Moves time to `now` and removes every entry due by then, handing each to `f` in
    /// deadline order. Returns how many came out. A `now` before [`now`](Self::now) does
    /// nothing.
    pub fn advance(&mut self, now: u64, mut f: impl FnMut(Key, T)) -> usize {
        let due = self.run_until(now, |wheel, index| {
            let key = wheel.pool.key(index);
            f(key, wheel.pool.free(index));
        });
        self.move_ahead();
        due
    }

    /// Like [`advance`](Self::advance), but due entries stay in the wheel, expired: their
    /// keys stay valid for [`get_mut`](Self::get_mut), [`remove`](Self::remove) and
    /// [`reset`](Self::reset) (which re-arms them).
    pub fn expire(&mut self, now: u64, f: impl FnMut(Key)) -> usize {
        let due = self.expire_due(now, f);
        self.move_ahead();
        due
    }

    /// The first half of [`expire`](Self::expire): hands out what is due but leaves the
    /// moving of upper slots ahead of time to [`move_ahead`](Self::move_ahead), so that a
    /// caller can pass the due entries on before that work. Call `move_ahead` after it.
    pub fn expire_due(&mut self, now: u64, mut f: impl FnMut(Key)) -> usize {
        self.run_until(now, |wheel, index| f(wheel.pool.key(index)))
    }

    /// The second half of [`expire`](Self::expire): moves a chunk of the next upper slots
    /// down ahead of time.
    pub fn move_ahead(&mut self) {
        self.unlink_retired();
        self.drain_ahead();
    }

    /// The next tick at which [`advance`](Self::advance) has work: never later than the
    /// earliest pending deadline, earlier when a cascade step is due first. `None` when
    /// nothing is pending.
    pub fn next_expiry(&self) -> Option<u64> {
        let due = self.next_due_list().map(|(time, _)| time);
        due.into_iter().chain(self.next_drain_step()).min()
    }

    /// Removes every entry, pending or expired, handing each to `f`; returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(Key, T)) -> usize {
        self.unlink_retired();
        let mut drained = 0;
        // By index, with no list of the live ones: a freed node goes back to the free list,
        // which is not walked here.
        for index in 0..self.pool.nodes() {
            if self.pool.is_live(index) {
                self.unlink(index);
                let key = self.pool.key(index);
                f(key, self.pool.free(index));
                drained += 1;
            }
        }
        drained
    }

    fn run_until(&mut self, now: u64, mut on_due: impl FnMut(&mut Self, u32)) -> usize {
        self.unlink_retired();
        let mut due = 0;
        while let Some((time, list)) = self.next_due_list().filter(|&(time, _)| time <= now) {
            self.now = self.now.max(time);
            if list < SLOTS {
                while let Some(index) = self.pop(list) {
                    if self.pool.node(index).deadline > time {
                        self.link(index); // pushed later by a reset: not due yet
                        continue;
                    }
                    on_due(self, index);
                    due += 1;
                }
            } else {
                self.relink_all(list);
            }
        }
        self.now = self.now.max(now);
        due
    }

    /// The list that comes due first and when: a level-0 slot expires, an upper slot or the
    /// overflow list cascades. On a tie the higher list goes first, so that its entries
    /// reach the level-0 slot before that expires.
    fn next_due_list(&self) -> Option<(u64, usize)> {
        let overflow = (self.counts[OVERFLOW] > 0)
            // The bound may be stale (its entry left): then it is due now, and re-checked.
            .then(|| {
                (
                    overflow_time(self.overflow_earliest).max(self.now),
                    OVERFLOW,
                )
            });
        (0..LEVELS).rev().fold(overflow, |best, level| {
            let Some(value) = next_occupied(self.occupancy(level), level, self.now) else {
                return best;
            };
            let time = slot_time(value, level);
            match best {
                Some((best_time, _)) if best_time <= time => best,
                _ => Some((time, list_of(value, level))),
            }
        })
    }

    /// The occupancy bitmap of `level`: bit `i` set while its slot `i` holds something.
    fn occupancy(&self, level: usize) -> u128 {
        u128::from(self.occupied[2 * level]) | u128::from(self.occupied[2 * level + 1]) << 64
    }

    /// The slot after the current one at `level` (above 0) and how many it holds: its
    /// entries already fit a level below, so they can move down before it comes due.
    fn drainable(&self, level: usize) -> Option<(usize, u64, u64)> {
        let value = slot_value(self.now, level) + 1;
        let list = list_of(value, level);
        let count = u64::from(self.counts[list]);
        (count > 0).then(|| (list, count, slot_time(value, level) - self.now))
    }

    /// Moves a chunk of each drainable slot down, sized so that the slot is empty by the
    /// time it comes due even if advances come only once a tick.
    fn drain_ahead(&mut self) {
        for level in 1..LEVELS {
            if let Some((list, count, ticks_left)) = self.drainable(level) {
                let chunk = (1 << self.drain_chunk_shift).max(count.div_ceil(ticks_left));
                for _ in 0..chunk.min(count) {
                    let index = self.pop(list).expect("counted entries are linked");
                    self.link(index);
                }
            }
        }
    }

    /// When the next drain step should run: the remaining chunks spread evenly over the
    /// ticks left before the slot comes due.
    fn next_drain_step(&self) -> Option<u64> {
        (1..LEVELS)
            .filter_map(|level| self.drainable(level))
            .map(|(_, count, ticks_left)| {
                let steps = (count + (1 << self.drain_chunk_shift) - 1) >> self.drain_chunk_shift;
                self.now + ((ticks_left - 1) / steps).max(1)
            })
            .min()
    }

    /// Re-places every entry of `list` by its deadline (a cascade).
    fn relink_all(&mut self, list: usize) {
        let mut chains = [NIL; LANES];
        for (lane, chain) in chains.iter_mut().enumerate() {
            *chain = std::mem::replace(&mut self.heads[list * LANES + lane], NIL);
        }
        self.counts[list] = 0;
        self.mark_empty(list);
        while chains.iter().any(|&index| index != NIL) {
            for chain in chains.iter_mut().filter(|index| **index != NIL) {
                let index = *chain;
                let node = self.pool.node_mut(index);
                *chain = node.next;
                node.list = DETACHED;
                self.link(index);
            }
        }
    }

    /// Links a detached node into the list of its deadline.
    #[inline]
    fn link(&mut self, index: u32) {
        let deadline = self.pool.node(index).deadline.max(self.now);
        let list = list_for(deadline, self.now);
        let chain = head_of(list, index);
        let head = self.heads[chain];
        let node = self.pool.node_mut(index);
        node.list = list as u16;
        node.prev = NIL;
        node.next = head;
        if head != NIL {
            self.pool.node_mut(head).prev = index;
        }
        self.heads[chain] = index;
        self.counts[list] += 1;
        if list == OVERFLOW {
            self.overflow_earliest = self.overflow_earliest.min(deadline);
        } else {
            self.occupied[list / 64] |= 1 << (list % 64);
        }
    }

    /// Moves node `index` to the list of `deadline`. Out of line: the reset that only
    /// writes the deadline then saves no registers for it.
    #[inline(never)]
    fn relink(&mut self, index: u32, deadline: u64) {
        self.unlink(index);
        self.pool.node_mut(index).deadline = deadline;
        self.link(index);
    }

    /// Takes a node out of its list; a detached node stays as it is.
    fn unlink(&mut self, index: u32) {
        let list = self.pool.node(index).list;
        if list == DETACHED {
            return;
        }
        self.splice_out(index, usize::from(list));
        self.uncount(usize::from(list));
    }

    /// Unlinks and frees the nodes of removed entries.
    fn unlink_retired(&mut self) {
        while let Some(index) = self.retired.pop() {
            let list = self.pool.node(index).list & !RETIRED;
            self.splice_out(index, usize::from(list));
            self.pool.recycle(index);
        }
    }

    /// Joins the neighbours of a node in `list` to each other.
    #[inline]
    fn splice_out(&mut self, index: u32, list: usize) {
        let node = self.pool.node_mut(index);
        let (prev, next) = (node.prev, node.next);
        node.list = DETACHED;
        if prev == NIL {
            self.heads[head_of(list, index)] = next;
        } else {
            self.pool.node_mut(prev).next = next;
        }
        if next != NIL {
            self.pool.node_mut(next).prev = prev;
        }
    }

    /// Counts one entry less in `list`.
    #[inline]
    fn uncount(&mut self, list: usize) {
        self.counts[list] -= 1;
        if self.counts[list] == 0 {
            self.mark_empty(list);
        }
    }

    /// Clears what tells that `list` holds something.
    fn mark_empty(&mut self, list: usize) {
        if list == OVERFLOW {
            self.overflow_earliest = u64::MAX;
        } else {
            self.occupied[list / 64] &= !(1 << (list % 64));
        }
    }

    /// Takes a node out of `list`, from the chain after the one taken from last.
    fn pop(&mut self, list: usize) -> Option<u32> {
        for turn in 0..LANES {
            let lane = (self.next_lane + turn) % LANES;
            let head = self.heads[list * LANES + lane];
            if head != NIL {
                self.next_lane = lane + 1;
                self.unlink(head);
                return Some(head);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_at_its_tick_not_before() {
        let mut wheel = Wheel::new();
        let key = wheel.insert(100, "a").unwrap();
        let mut fired = Vec::new();
        wheel.advance(99, |k, v| fired.push((k, v)));
        assert!(fired.is_empty());
        wheel.advance(100, |k, v| fired.push((k, v)));
        assert_eq!(fired, vec![(key, "a")]);
        assert!(wheel.remove(key).is_none(), "a fired key is stale");
    }

    #[test]
    fn stepping_one_tick_at_a_time_reaches_far_deadlines_exactly() {
        let mut wheel = Wheel::new();
        let deadlines = [
            1u64, 63, 64, 65, 127, 128, 4095, 4096, 4097, 8191, 8192, 300_000,
        ];
        for &d in &deadlines {
            wheel.insert(d, d).unwrap();
        }
        let mut fired = Vec::new();
        for now in 0..=300_000 {
            wheel.advance(now, |_, d| fired.push((now, d)));
        }
        let expected: Vec<_> = deadlines.iter().map(|&d| (d, d)).collect();
        assert_eq!(fired, expected);
    }

    /// Ticks at which following `next_expiry` fires each of 40 entries sharing one level-1
    /// slot, from the slot before it (where that slot is moved down ahead of time), and
    /// how many advances that takes.
    fn follow_next_expiry(mut wheel: Wheel<u64>) -> (Vec<(u64, u64)>, usize) {
        for i in 0..40 {
            wheel.insert(200 + i % 7, i).unwrap();
        }
        assert_eq!(wheel.advance(130, |_, _| panic!("fired early")), 0);
        let (mut fired, mut steps) = (Vec::new(), 0);
        while let Some(t) = wheel.next_expiry() {
            steps += 1;
            wheel.advance(t, |_, v| fired.push((t, v)));
        }
        fired.sort_unstable();
        (fired, steps)
    }

    #[test]
    fn a_small_drain_chunk_moves_a_slot_in_more_steps_to_the_same_ticks() {
        let (default, default_steps) = follow_next_expiry(Wheel::new());
        let (small, small_steps) = follow_next_expiry(Wheel::with_drain_chunk(usize::MAX, 2));
        assert_eq!(small, default);
        assert!(default.iter().all(|&(t, v)| t == 200 + v % 7));
        assert!(
            small_steps > default_steps,
            "{small_steps} steps with a chunk of 4, {default_steps} with the default"
        );
    }

    #[test]
    fn overflow_entries_come_back_in_time() {
        let mut wheel = Wheel::new();
        let far = 1u64 << 40;
        wheel.insert(far, ()).unwrap();
        wheel.insert(u64::MAX, ()).unwrap();
        let mut steps = 0;
        let mut fired = Vec::new();
        while let Some(t) = wheel.next_expiry() {
            assert!(
                t <= far || !fired.is_empty(),
                "next_expiry skipped a deadline"
            );
            wheel.advance(t, |_, _| fired.push(t));
            steps += 1;
            assert!(steps < 10_000);
        }
        assert_eq!(fired, vec![far, u64::MAX]);
    }

    #[test]
    fn entries_lists_pending_and_expired_entries_but_not_removed_ones() {
        let mut wheel = Wheel::new();
        let expired = wheel.insert(5, "expired").unwrap();
        let removed = wheel.insert(7, "removed").unwrap();
        let pending = wheel.insert(1 << 30, "pending").unwrap();
        wheel.expire(5, |_| {});
        wheel.remove(removed);
        let mut seen: Vec<_> = wheel.entries().map(|(k, d, v)| (k, d, *v)).collect();
        seen.sort_by_key(|&(_, deadline, _)| deadline);
        assert_eq!(
            seen,
            [(expired, 5, "expired"), (pending, 1 << 30, "pending")]
        );
    }

    #[test]
    fn a_wheel_grown_through_several_reservations_keeps_every_entry() {
        let mut wheel = Wheel::new();
        let keys: Vec<_> = (0..200_000u64)
            .map(|i| {
                let key = wheel.insert(i, i).unwrap();
                if let Some(prefault) = wheel.take_prefault() {
                    prefault.run();
                }
                key
            })
            .collect();
        assert!(keys
            .iter()
            .step_by(7)
            .all(|&key| wheel.remove(key).is_some()));
        let mut fired = 0;
        wheel.advance(200_000, |_, value| {
            assert_ne!(value % 7, 0, "a removed entry fired");
            fired += 1;
        });
        assert_eq!(fired, 200_000 - 200_000usize.div_ceil(7));
    }

    #[test]
    fn node_is_compact() {
        assert!(
            Wheel::<u64>::node_size() <= 48,
            "{}",
            Wheel::<u64>::node_size()
        );
        assert_eq!(Wheel::<Box<u8>>::node_size(), 32);
    }
}
