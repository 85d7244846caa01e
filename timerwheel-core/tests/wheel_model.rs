//! Property tests: the wheel driven by random operations, checked after every operation
//! against a reference model kept in a `BTreeMap`.
//!
//! The model knows, for every entry, its deadline, whether it is pending or detached (by
//! `expire`), and its firing order: the deadline clamped up to `now()` at insert/reset time.
//! After each `advance`/`expire` the wheel must hand out exactly the entries the model says
//! are due, each once, in nondecreasing firing order; `next_expiry` must never point past the
//! earliest pending entry and must always make progress.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use proptest::prelude::*;
use timerwheel_core::wheel::{Full, Key, Wheel};

/// Upper bound on `advance(next_expiry())` steps per distinct pending deadline when draining.
const STEPS_PER_DEADLINE: usize = 64;

/// A point in time, resolved against the wheel's `now()` when the operation runs.
#[derive(Clone, Copy, Debug)]
enum When {
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
    fn resolve(self, now: u64) -> u64 {
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
enum Op {
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

/// Shifts of the level granularities (powers of 64), the overflow range and beyond.
fn boundary_shift() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![6u32, 12, 18, 24, 30, 36, 37, 42, 48, 63])
}

fn deadline() -> impl Strategy<Value = When> {
    prop_oneof![
        4 => (0u64..70).prop_map(When::After),
        2 => (0u64..5_000).prop_map(When::After),
        2 => (0u64..1 << 40).prop_map(When::After),
        2 => (boundary_shift(), -2i64..=2)
            .prop_map(|(shift, delta)| When::After((1u64 << shift).saturating_add_signed(delta))),
        2 => (boundary_shift(), -2i64..=2).prop_map(|(shift, delta)| When::Aligned { shift, delta }),
        1 => (0u64..1_000).prop_map(When::Before),
        1 => (0u64..1_000).prop_map(|d| When::At(u64::MAX - d)),
        1 => any::<u64>().prop_map(When::At),
    ]
}

fn step() -> impl Strategy<Value = When> {
    prop_oneof![
        2 => Just(When::After(0)),
        12 => (1u64..70).prop_map(When::After),
        4 => (70u64..100_000).prop_map(When::After),
        2 => (boundary_shift(), -2i64..=2).prop_map(|(shift, delta)| When::Aligned { shift, delta }),
        2 => (0u64..1 << 40).prop_map(When::After),
        1 => (1u64..100).prop_map(When::Before),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => deadline().prop_map(Op::Insert),
        1 => (1u64..3_000, deadline(), prop::sample::select(vec![1u64, 64, 4_096, 1 << 18]))
            .prop_map(|(count, base, spread)| Op::Bulk { count, base, spread }),
        3 => any::<usize>().prop_map(Op::Remove),
        4 => (any::<usize>(), deadline()).prop_map(|(i, w)| Op::Reset(i, w)),
        1 => any::<usize>().prop_map(Op::GetMut),
        8 => step().prop_map(Op::Advance),
        2 => (step(), any::<bool>()).prop_map(|(w, rm)| Op::Expire(w, rm)),
        2 => Just(Op::AdvanceToNext),
        1 => any::<usize>().prop_map(Op::Stale),
    ]
}

/// Where the clock starts: at 0, somewhere ordinary, or so high that deadlines saturate.
fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0u64),
        2 => 0u64..1 << 40,
        1 => any::<u64>(),
        1 => (0u64..1 << 38).prop_map(|d| u64::MAX - d),
    ]
}

fn limit() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![3 => Just(None), 1 => (0usize..40).prop_map(Some)]
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
    entries: BTreeMap<u64, Entry>,
    /// `(order, key)` of every pending entry.
    queue: BTreeSet<(u64, u64)>,
    /// Every live key, for picking one at random in O(1).
    live: Vec<u64>,
}

impl Model {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn get(&self, raw: u64) -> &Entry {
        &self.entries[&raw]
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
        self.queue.insert((order, raw));
        assert!(
            self.entries.insert(raw, entry).is_none(),
            "key {key:?} issued twice"
        );
    }

    fn set_deadline(&mut self, raw: u64, deadline: u64) {
        self.detach(raw);
        let entry = self.entries.get_mut(&raw).unwrap();
        entry.deadline = deadline;
        entry.order = deadline.max(self.now);
        entry.pending = true;
        self.queue.insert((entry.order, raw));
    }

    fn detach(&mut self, raw: u64) {
        let entry = self.entries.get_mut(&raw).unwrap();
        if entry.pending {
            entry.pending = false;
            self.queue.remove(&(entry.order, raw));
        }
    }

    fn remove(&mut self, raw: u64) -> Entry {
        self.detach(raw);
        let entry = self.entries.remove(&raw).unwrap();
        self.live.swap_remove(entry.slot);
        if let Some(&moved) = self.live.get(entry.slot) {
            self.entries.get_mut(&moved).unwrap().slot = entry.slot;
        }
        entry
    }

    /// Keys of the pending entries an advance to `target` must hand out.
    fn due(&self, target: u64) -> HashSet<u64> {
        if target < self.now {
            return HashSet::new();
        }
        let due = self.queue.range(..=(target, u64::MAX));
        due.map(|&(_, raw)| raw).collect()
    }

    /// The earliest firing order of a pending entry.
    fn earliest(&self) -> Option<u64> {
        self.queue.first().map(|&(order, _)| order)
    }

    /// Up to `n` entries spread over all of them.
    fn sample(&self, n: usize) -> impl Iterator<Item = &Entry> {
        let step = self.live.len().div_ceil(n).max(1);
        self.live.iter().step_by(step).map(|raw| self.get(*raw))
    }

    fn describe(&self, raw: u64) -> String {
        match self.entries.get(&raw) {
            Some(e) => format!("{:?} deadline {} order {}", e.key, e.deadline, e.order),
            None => format!("unknown key {raw:#x}"),
        }
    }
}

/// The wheel under test next to the model it must agree with.
struct Harness {
    wheel: Wheel<u64>,
    limit: Option<usize>,
    model: Model,
    stale: Vec<Key>,
    next_value: u64,
}

impl Harness {
    fn new(limit: Option<usize>, start: u64) -> Self {
        let mut wheel = limit.map_or_else(Wheel::new, Wheel::with_limit);
        assert_eq!(wheel.now(), 0);
        assert_eq!(wheel.advance(start, |_, _| panic!("empty wheel fired")), 0);
        let model = Model {
            now: start,
            ..Model::default()
        };
        let h = Harness {
            wheel,
            limit,
            model,
            stale: Vec::new(),
            next_value: 0,
        };
        h.check();
        h
    }

    fn run(&mut self, op: &Op) {
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
        self.check();
    }

    fn insert(&mut self, deadline: u64) {
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
        self.model.entries.get_mut(&key.to_u64()).unwrap().value = self.next_value;
    }

    fn advance(&mut self, target: u64) {
        let mut fired = Vec::new();
        let n = self
            .wheel
            .advance(target, |key, value| fired.push((key, value)));
        assert_eq!(n, fired.len(), "advance's count");
        self.settle(target, fired.iter().map(|&(key, _)| key));
        for (key, value) in fired {
            let entry = self.model.remove(key.to_u64());
            assert_eq!(
                value, entry.value,
                "advance handed out the wrong value for {key:?}"
            );
            self.stale.push(key);
        }
    }

    fn expire(&mut self, target: u64, remove: bool) {
        let mut fired = Vec::new();
        let n = self.wheel.expire(target, |key| fired.push(key));
        assert_eq!(n, fired.len(), "expire's count");
        for key in self.settle(target, fired) {
            self.model.detach(key.to_u64());
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
    }

    /// Checks that `fired` (in the order handed out) is exactly the due set of an advance to
    /// `target`, in firing order, and moves the model's clock. Returns `fired` again.
    fn settle<I: IntoIterator<Item = Key>>(&mut self, target: u64, fired: I) -> Vec<Key> {
        let fired: Vec<Key> = fired.into_iter().collect();
        let due = self.model.due(target);
        let got: HashSet<u64> = fired.iter().map(|k| k.to_u64()).collect();
        assert_eq!(got.len(), fired.len(), "an entry fired twice in one call");
        let now = self.model.now;
        let early: Vec<_> = got
            .difference(&due)
            .map(|&raw| self.model.describe(raw))
            .collect();
        assert!(
            early.is_empty(),
            "advance to {target} (now {now}) fired {early:?}"
        );
        let missed: Vec<_> = due
            .difference(&got)
            .map(|&raw| self.model.describe(raw))
            .collect();
        assert!(
            missed.is_empty(),
            "advance to {target} (now {now}) missed {missed:?}"
        );
        let orders: Vec<u64> = fired
            .iter()
            .map(|k| self.model.get(k.to_u64()).order)
            .collect();
        assert!(
            orders.windows(2).all(|w| w[0] <= w[1]),
            "out of order: {orders:?}"
        );
        self.model.now = now.max(target);
        fired
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
    /// there are many).
    fn check(&self) {
        assert_eq!(self.wheel.now(), self.model.now, "now()");
        assert_eq!(self.wheel.len(), self.model.len(), "len()");
        assert_eq!(self.wheel.is_empty(), self.model.len() == 0, "is_empty()");
        for e in self.model.sample(256) {
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
        self.check_next_expiry();
    }

    fn check_next_expiry(&self) {
        let (now, next) = (self.model.now, self.wheel.next_expiry());
        let Some(earliest) = self.model.earliest() else {
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
    fn finish(&mut self) {
        let deadlines: HashSet<u64> = self.model.queue.iter().map(|&(order, _)| order).collect();
        let bound = STEPS_PER_DEADLINE * (deadlines.len() + 1);
        let mut steps = 0;
        while let Some(t) = self.wheel.next_expiry() {
            steps += 1;
            assert!(
                steps <= bound,
                "{steps} steps to reach {} deadlines",
                deadlines.len()
            );
            self.advance(t);
            self.check();
        }
        self.drain();
    }

    /// `drain` hands out every entry, pending or detached, once.
    fn drain(&mut self) {
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
                self.model.entries.contains_key(&key.to_u64()),
                "drain: unknown {key:?}"
            );
            let entry = self.model.remove(key.to_u64());
            assert_eq!(value, entry.value, "drain handed out the wrong value");
            self.stale.push(key);
        }
        self.check();
    }
}

proptest! {
    #[test]
    fn wheel_matches_model(
        limit in limit(),
        start in start(),
        ops in prop::collection::vec(op(), 1..300),
        follow_next_expiry in any::<bool>(),
    ) {
        let mut h = Harness::new(limit, start);
        for op in &ops {
            h.run(op);
        }
        if follow_next_expiry {
            h.finish();
        } else {
            h.drain();
        }
    }

    #[test]
    fn following_next_expiry_fires_everything(
        start in start(),
        deadlines in prop::collection::vec(deadline(), 1..200),
    ) {
        let mut h = Harness::new(None, start);
        for when in deadlines {
            h.insert(when.resolve(start));
            h.check();
        }
        h.finish();
        prop_assert!(h.wheel.is_empty());
    }
}
