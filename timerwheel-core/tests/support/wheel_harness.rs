//! The wheel next to a reference model (entries by node index, a min-heap of the pending
//! ones' firing orders), driven by [`Op`]s; shared by
//! the property tests (`wheel_model.rs`), the fuzz target `wheel_ops` and its stable replay.
//!
//! The model knows, for every entry, its deadline, whether it is pending or detached (by
//! `expire`), and its firing order: the deadline clamped up to `now()` at insert/reset time.
//! After each `advance`/`expire` the wheel must hand out exactly the entries the model says
//! are due, each once, in nondecreasing firing order; `next_expiry` must never point past the
//! earliest pending entry and must always make progress. A disagreement panics.
//!
//! How much is compared after each operation is the caller's choice ([`Checks`]): the
//! property tests compare a sample of every entry after each one; the fuzz target, which
//! runs tens of thousands of inputs a second, checks the cheap invariants after each one
//! and every entry at the end. Either way every entry handed out is checked as it comes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use timerwheel_core::wheel::{Full, Key, Wheel};

/// Upper bound on `advance(next_expiry())` steps per distinct pending deadline when draining.
const STEPS_PER_DEADLINE: usize = 64;
/// Entries compared after each operation under [`Checks::EveryOp`].
const SAMPLE_PER_OP: usize = 256;

/// What is compared with the model after each operation.
#[allow(dead_code)] // each test binary that includes this file uses one of them
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// A sample of the entries (get, deadline, is_pending) and every invariant.
    EveryOp,
    /// `now`, `len` and `next_expiry` after each; every entry when the scenario ends.
    AtEnd,
}

/// A point in time, resolved against the wheel's `now()` when the operation runs.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// `now + d` (saturating).
    After(u64),
    /// `now - d` (saturating): in the past, or `now` itself.
    Before(u64),
    /// An absolute tick.
    At(u64),
    /// The next multiple of `2^shift` after `now`, plus `delta`: a level boundary.
    Aligned { shift: u32, delta: i64 },
}

impl When {
    pub fn resolve(self, now: u64) -> u64 {
        match self {
            When::After(d) => now.saturating_add(d),
            When::Before(d) => now.saturating_sub(d),
            When::At(t) => t,
            When::Aligned { shift, delta } => ((now >> shift) + 1)
                .saturating_mul(1 << shift)
                .saturating_add_signed(delta),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Op {
    Insert(When),
    /// `count` inserts at `base` plus up to `spread`: enough to fill an upper slot, so that
    /// it is moved down in several chunks.
    Bulk {
        count: u64,
        base: When,
        spread: u64,
    },
    Remove(usize),
    Reset(usize, When),
    GetMut(usize),
    Advance(When),
    /// Expire, then remove the detached entries at once (`true`) or leave them detached.
    Expire(When, bool),
    AdvanceToNext,
    Stale(usize),
}

#[derive(Debug)]
struct Entry {
    key: Key,
    value: u64,
    deadline: u64,
    /// The deadline clamped up to `now()` when it was set: the firing order.
    order: u64,
    pending: bool,
    /// Position in `Model::live`.
    slot: usize,
}

/// What the wheel should hold: entries by key, pending ones ordered by firing order.
#[derive(Default)]
struct Model {
    now: u64,
    /// Entries by their key's node index (the wheel's indices are dense): O(1) lookups.
    entries: Vec<Option<Entry>>,
    len: usize,
    /// `(order, key)` of every pending entry, smallest first, and stale pairs: an entry
    /// detached or given another order leaves its pair behind, dropped once it comes to the
    /// top ([`Model::earliest`]). Cheaper than an ordered set's removal in the middle.
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    /// Every live key, for picking one at random in O(1).
    live: Vec<u64>,
}

impl Model {
    fn len(&self) -> usize {
        self.len
    }

    /// The live entry of the key `raw`, if any.
    fn find(&self, raw: u64) -> Option<&Entry> {
        let slot = self.entries.get(raw as u32 as usize)?.as_ref();
        slot.filter(|e| e.key.to_u64() == raw)
    }

    fn get(&self, raw: u64) -> &Entry {
        self.find(raw).expect("a live entry of the model")
    }

    fn get_mut(&mut self, raw: u64) -> &mut Entry {
        let slot = self.entries[raw as u32 as usize].as_mut();
        slot.filter(|e| e.key.to_u64() == raw)
            .expect("a live entry of the model")
    }

    fn pick(&self, pick: usize) -> Option<Key> {
        let n = self.live.len();
        (n > 0).then(|| self.get(self.live[pick % n]).key)
    }

    fn insert(&mut self, key: Key, deadline: u64, value: u64) {
        let raw = key.to_u64();
        let order = deadline.max(self.now);
        let slot = self.live.len();
        let entry = Entry {
            key,
            value,
            deadline,
            order,
            pending: true,
            slot,
        };
        self.live.push(raw);
        self.queue.push(Reverse((order, raw)));
        let index = key.index() as usize;
        if self.entries.len() <= index {
            self.entries.resize_with(index + 1, || None);
        }
        let before = self.entries[index].replace(entry);
        assert!(
            before.is_none(),
            "key {key:?} issued while its node is live"
        );
        self.len += 1;
    }

    fn set_deadline(&mut self, raw: u64, deadline: u64) {
        self.detach(raw);
        let now = self.now;
        let order = deadline.max(now);
        let entry = self.get_mut(raw);
        entry.deadline = deadline;
        entry.order = order;
        entry.pending = true;
        self.queue.push(Reverse((order, raw)));
    }

    /// Marks the entry not pending; its pair in `queue` goes stale.
    fn detach(&mut self, raw: u64) {
        self.get_mut(raw).pending = false;
    }

    fn remove(&mut self, raw: u64) -> Entry {
        self.detach(raw);
        let entry = self.entries[raw as u32 as usize].take().unwrap();
        self.len -= 1;
        self.live.swap_remove(entry.slot);
        if let Some(&moved) = self.live.get(entry.slot) {
            self.get_mut(moved).slot = entry.slot;
        }
        entry
    }

    /// The earliest firing order of a pending entry, and its key.
    fn earliest(&mut self) -> Option<(u64, u64)> {
        while let Some(&Reverse((order, raw))) = self.queue.peek() {
            if self
                .find(raw)
                .is_some_and(|e| e.pending && e.order == order)
            {
                return Some((order, raw));
            }
            self.queue.pop();
        }
        None
    }

    /// The distinct firing orders of the pending entries.
    fn pending_orders(&self) -> Vec<u64> {
        let mut orders: Vec<u64> = (self.live.iter().map(|&raw| self.get(raw)))
            .filter_map(|e| e.pending.then_some(e.order))
            .collect();
        orders.sort_unstable();
        orders.dedup();
        orders
    }

    /// Up to `n` entries spread over all of them.
    fn sample(&self, n: usize) -> impl Iterator<Item = &Entry> {
        let step = self.live.len().div_ceil(n).max(1);
        self.live.iter().step_by(step).map(|raw| self.get(*raw))
    }

    fn describe(&self, raw: u64) -> String {
        match self.find(raw) {
            Some(e) => format!("{:?} deadline {} order {}", e.key, e.deadline, e.order),
            None => format!("unknown key {raw:#x}"),
        }
    }
}

/// The wheel under test next to the model it must agree with.
pub struct Harness {
    pub wheel: Wheel<u64>,
    limit: Option<usize>,
    checks: Checks,
    model: Model,
    stale: Vec<Key>,
    next_value: u64,
    /// What the last advance handed out (kept to reuse its memory).
    fired: Vec<(Key, u64)>,
    /// What the last expire handed out (kept to reuse its memory).
    expired: Vec<Key>,
}

/// Entries the model and the buffers make room for at once (they grow past it).
const ROOM: usize = 256;

impl Harness {
    /// A wheel at `start` holding at most `limit` entries, moving upper slots down in
    /// chunks of at least `2^drain_chunk_shift` entries.
    pub fn new(limit: Option<usize>, start: u64, checks: Checks, drain_chunk_shift: u32) -> Self {
        let mut wheel = Wheel::with_drain_chunk(limit.unwrap_or(usize::MAX), drain_chunk_shift);
        assert_eq!(wheel.now(), 0);
        assert_eq!(wheel.advance(start, |_, _| panic!("empty wheel fired")), 0);
        let model = Model {
            now: start,
            entries: Vec::with_capacity(ROOM),
            queue: BinaryHeap::with_capacity(ROOM),
            live: Vec::with_capacity(ROOM),
            ..Model::default()
        };
        let mut h = Harness {
            wheel,
            limit,
            checks,
            model,
            stale: Vec::with_capacity(ROOM),
            next_value: 0,
            fired: Vec::with_capacity(ROOM),
            expired: Vec::with_capacity(ROOM),
        };
        h.check();
        h
    }

    pub fn run(&mut self, op: &Op) {
        let now = self.model.now;
        match *op {
            Op::Insert(when) => self.insert(when.resolve(now)),
            Op::Bulk {
                count,
                base,
                spread,
            } => {
                let base = base.resolve(now);
                for i in 0..count {
                    self.insert(base.saturating_add(i * 7_919 % spread));
                }
            }
            Op::Remove(pick) => self.remove(pick),
            Op::Reset(pick, when) => self.reset(pick, when.resolve(now)),
            Op::GetMut(pick) => self.get_mut(pick),
            Op::Advance(when) => self.advance(when.resolve(now)),
            Op::Expire(when, remove) => self.expire(when.resolve(now), remove),
            Op::AdvanceToNext => {
                if let Some(t) = self.wheel.next_expiry() {
                    self.advance(t);
                }
            }
            Op::Stale(pick) => self.poke_stale(pick),
        }
        self.check_after_op();
    }

    fn check_after_op(&mut self) {
        match self.checks {
            Checks::EveryOp => self.check(),
            Checks::AtEnd => self.check_counts(),
        }
    }

    pub fn insert(&mut self, deadline: u64) {
        self.next_value += 1;
        let value = self.next_value;
        match self.wheel.insert(deadline, value) {
            Ok(key) => {
                let room = self.limit.is_none_or(|l| self.model.len() < l);
                assert!(room, "insert past the limit");
                assert_ne!(key.to_u64(), 0);
                assert_eq!(Key::from_u64(key.to_u64()), Some(key));
                self.model.insert(key, deadline, value);
            }
            Err(Full(back)) => {
                assert_eq!(back, value, "Full must hand the value back");
                assert_eq!(Some(self.model.len()), self.limit, "Full below the limit");
            }
        }
    }

    fn remove(&mut self, pick: usize) {
        let Some(key) = self.model.pick(pick) else {
            return self.poke_stale(pick);
        };
        let entry = self.model.remove(key.to_u64());
        assert_eq!(self.wheel.remove(key), Some(entry.value));
        self.stale.push(key);
    }

    fn reset(&mut self, pick: usize, deadline: u64) {
        let Some(key) = self.model.pick(pick) else {
            return self.poke_stale(pick);
        };
        assert!(
            self.wheel.reset(key, deadline),
            "reset of a live key refused"
        );
        self.model.set_deadline(key.to_u64(), deadline);
    }

    fn get_mut(&mut self, pick: usize) {
        let Some(key) = self.model.pick(pick) else {
            return self.poke_stale(pick);
        };
        self.next_value += 1;
        *self.wheel.get_mut(key).expect("get_mut of a live key") = self.next_value;
        self.model.get_mut(key.to_u64()).value = self.next_value;
    }

    fn advance(&mut self, target: u64) {
        let mut fired = std::mem::take(&mut self.fired);
        fired.clear();
        let n = self
            .wheel
            .advance(target, |key, value| fired.push((key, value)));
        assert_eq!(n, fired.len(), "advance's count");
        self.settle(target, fired.iter().map(|&(key, _)| key));
        for &(key, value) in &fired {
            let entry = self.model.remove(key.to_u64());
            assert_eq!(
                value, entry.value,
                "advance handed out the wrong value for {key:?}"
            );
            self.stale.push(key);
        }
        self.fired = fired;
    }

    fn expire(&mut self, target: u64, remove: bool) {
        let mut expired = std::mem::take(&mut self.expired);
        expired.clear();
        let n = self.wheel.expire(target, |key| expired.push(key));
        assert_eq!(n, expired.len(), "expire's count");
        self.settle(target, expired.iter().copied());
        for &key in &expired {
            if remove {
                let entry = self.model.remove(key.to_u64());
                assert_eq!(
                    self.wheel.remove(key),
                    Some(entry.value),
                    "remove after expire"
                );
                self.stale.push(key);
            }
        }
        self.expired = expired;
    }

    /// Checks that `fired` (in the order handed out) is exactly the due set of an advance to
    /// `target`, in firing order, and moves the model's clock; the fired entries are
    /// detached in the model.
    fn settle(&mut self, target: u64, fired: impl Iterator<Item = Key>) {
        let now = self.model.now;
        let mut last_order = 0;
        for key in fired {
            let raw = key.to_u64();
            let entry = self.model.find(raw);
            if !entry.is_some_and(|e| e.pending && e.order <= target && target >= now) {
                let what = self.model.describe(raw);
                panic!("advance to {target} (now {now}) fired {what}, not due (or twice)");
            }
            let order = self.model.get(raw).order;
            assert!(
                order >= last_order,
                "out of order: {order} after {last_order}"
            );
            last_order = order;
            self.model.detach(raw);
        }
        let first_due = self.model.earliest().filter(|&(o, _)| o <= target);
        if let Some((order, raw)) = first_due.filter(|_| target >= now) {
            let what = self.model.describe(raw);
            panic!("advance to {target} (now {now}) missed {what} (order {order})");
        }
        self.model.now = now.max(target);
    }

    /// A stale key is refused everywhere, including by the mutating calls.
    fn poke_stale(&mut self, pick: usize) {
        if self.stale.is_empty() {
            return;
        }
        let key = self.stale[pick % self.stale.len()];
        assert_eq!(self.wheel.remove(key), None, "remove of stale {key:?}");
        assert!(
            !self.wheel.reset(key, self.model.now),
            "reset of stale {key:?}"
        );
        assert!(
            self.wheel.get_mut(key).is_none(),
            "get_mut of stale {key:?}"
        );
    }

    /// Everything observable agrees with the model (for a sample of the entries when
    /// there are many and the checks run after every operation).
    pub fn check(&mut self) {
        let sample = match self.checks {
            Checks::EveryOp => SAMPLE_PER_OP,
            Checks::AtEnd => usize::MAX,
        };
        self.check_counts();
        for e in self.model.sample(sample) {
            assert_eq!(self.wheel.get(e.key), Some(&e.value), "get({:?})", e.key);
            assert_eq!(
                self.wheel.is_pending(e.key),
                e.pending,
                "is_pending({:?})",
                e.key
            );
            let deadline = self.wheel.deadline(e.key);
            if e.pending {
                assert_eq!(deadline, Some(e.deadline), "deadline({:?})", e.key);
            } else {
                assert!(deadline.is_some(), "deadline of detached {:?}", e.key);
            }
        }
        for &key in self.stale.iter().rev().take(4) {
            assert_eq!(self.wheel.get(key), None, "get of stale {key:?}");
            assert_eq!(self.wheel.deadline(key), None, "deadline of stale {key:?}");
            assert!(!self.wheel.is_pending(key), "is_pending of stale {key:?}");
        }
    }

    /// The cheap invariants: the clock, the count, and `next_expiry`.
    fn check_counts(&mut self) {
        self.check_clock_and_len();
        self.check_next_expiry();
    }

    fn check_clock_and_len(&self) {
        assert_eq!(self.wheel.now(), self.model.now, "now()");
        assert_eq!(self.wheel.len(), self.model.len(), "len()");
        assert_eq!(self.wheel.is_empty(), self.model.len() == 0, "is_empty()");
    }

    fn check_next_expiry(&mut self) {
        self.check_next_expiry_is(self.wheel.next_expiry());
    }

    /// `next` (what `next_expiry` returned) agrees with the model.
    fn check_next_expiry_is(&mut self, next: Option<u64>) {
        let now = self.model.now;
        let Some((earliest, _)) = self.model.earliest() else {
            return assert_eq!(next, None, "next_expiry with nothing pending");
        };
        let t = next.expect("next_expiry is None with entries pending");
        assert!(
            t <= earliest,
            "next_expiry {t} after the earliest deadline {earliest}"
        );
        if earliest == now {
            assert_eq!(t, now, "next_expiry {t} while an entry is due now");
        } else {
            assert!(t > now, "next_expiry {t} makes no progress from now {now}");
        }
    }

    /// Follows `next_expiry()` until nothing is pending, then drains the detached rest.
    /// Each step checks the clock, the count and the `next_expiry` it follows (asking for
    /// it once a step: it is the costliest of the cheap checks).
    pub fn finish(&mut self) {
        self.check();
        let orders = self.model.pending_orders();
        let bound = STEPS_PER_DEADLINE * (orders.len() + 1);
        let mut steps = 0;
        loop {
            let next = self.wheel.next_expiry();
            self.check_next_expiry_is(next);
            let Some(t) = next else { break };
            steps += 1;
            assert!(
                steps <= bound,
                "{steps} steps to reach {} deadlines",
                orders.len()
            );
            self.advance(t);
            match self.checks {
                Checks::EveryOp => self.check(),
                Checks::AtEnd => self.check_clock_and_len(),
            }
        }
        self.drain();
    }

    /// `drain` hands out every entry, pending or detached, once.
    pub fn drain(&mut self) {
        self.check();
        let mut got = Vec::new();
        let n = self.wheel.drain(|key, value| got.push((key, value)));
        assert_eq!(n, got.len(), "drain's count");
        assert_eq!(
            n,
            self.model.len(),
            "drain handed out {n} of {}",
            self.model.len()
        );
        for (key, value) in got {
            assert!(
                self.model.find(key.to_u64()).is_some(),
                "drain: unknown {key:?}"
            );
            let entry = self.model.remove(key.to_u64());
            assert_eq!(value, entry.value, "drain handed out the wrong value");
            self.stale.push(key);
        }
        self.check();
    }
}
