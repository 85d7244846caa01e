//! Property tests: the wheel driven by random operations, checked after every operation
//! against a reference model kept in a `BTreeMap`.
//!
//! The model knows, for every entry, its deadline, whether it is pending or detached (by
//! `expire`), and its firing order: the deadline clamped up to `now()` at insert/reset time.
//! After each `advance`/`expire` the wheel must hand out exactly the entries the model says
//! are due, each once, in nondecreasing firing order; `next_expiry` must never point past the
//! earliest pending entry and must always make progress.

use std::collections::{BTreeMap, HashSet};

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
    Remove(usize),
    Reset(usize, When),
    GetMut(usize),
    Advance(When),
    /// Expire, then remove the detached entries at once (`true`) or leave them detached.
    Expire(When, bool),
    AdvanceToNext,
    Stale(usize),
}

/// Shifts of the level boundaries (64 slots per level) and of the overflow range.
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
}

/// The wheel under test next to the model it must agree with.
struct Harness {
    wheel: Wheel<u64>,
    limit: Option<usize>,
    now: u64,
    model: BTreeMap<u64, Entry>,
    stale: Vec<Key>,
    issued: HashSet<u64>,
    next_value: u64,
}

impl Harness {
    fn new(limit: Option<usize>, start: u64) -> Self {
        let mut wheel = limit.map_or_else(Wheel::new, Wheel::with_limit);
        assert_eq!(wheel.now(), 0);
        assert_eq!(wheel.advance(start, |_, _| panic!("empty wheel fired")), 0);
        let h = Harness {
            wheel,
            limit,
            now: start,
            model: BTreeMap::new(),
            stale: Vec::new(),
            issued: HashSet::new(),
            next_value: 0,
        };
        h.check();
        h
    }

    fn run(&mut self, op: &Op) {
        match *op {
            Op::Insert(when) => self.insert(when),
            Op::Remove(pick) => self.remove(pick),
            Op::Reset(pick, when) => self.reset(pick, when),
            Op::GetMut(pick) => self.get_mut(pick),
            Op::Advance(when) => self.advance(when.resolve(self.now)),
            Op::Expire(when, remove) => self.expire(when.resolve(self.now), remove),
            Op::AdvanceToNext => {
                if let Some(t) = self.wheel.next_expiry() {
                    self.advance(t);
                }
            }
            Op::Stale(pick) => self.poke_stale(pick),
        }
        self.check();
    }

    fn fresh_value(&mut self) -> u64 {
        self.next_value += 1;
        self.next_value
    }

    fn pick(&self, pick: usize) -> Option<Key> {
        let n = self.model.len();
        (n > 0).then(|| self.model.values().nth(pick % n).unwrap().key)
    }

    fn insert(&mut self, when: When) {
        let deadline = when.resolve(self.now);
        let value = self.fresh_value();
        match self.wheel.insert(deadline, value) {
            Ok(key) => {
                assert!(
                    self.limit.map_or(true, |l| self.model.len() < l),
                    "insert past the limit"
                );
                assert_ne!(key.to_u64(), 0);
                assert_eq!(Key::from_u64(key.to_u64()), Some(key));
                assert!(self.issued.insert(key.to_u64()), "key {key:?} issued twice");
                let order = deadline.max(self.now);
                let entry = Entry {
                    key,
                    value,
                    deadline,
                    order,
                    pending: true,
                };
                self.model.insert(key.to_u64(), entry);
            }
            Err(Full(back)) => {
                assert_eq!(back, value, "Full must hand the value back");
                assert_eq!(Some(self.model.len()), self.limit, "Full below the limit");
            }
        }
    }

    fn remove(&mut self, pick: usize) {
        let Some(key) = self.pick(pick) else {
            return self.poke_stale(pick);
        };
        let entry = self.model.remove(&key.to_u64()).unwrap();
        assert_eq!(self.wheel.remove(key), Some(entry.value));
        self.stale.push(key);
    }

    fn reset(&mut self, pick: usize, when: When) {
        let Some(key) = self.pick(pick) else {
            return self.poke_stale(pick);
        };
        let deadline = when.resolve(self.now);
        assert!(
            self.wheel.reset(key, deadline),
            "reset of a live key refused"
        );
        let entry = self.model.get_mut(&key.to_u64()).unwrap();
        entry.deadline = deadline;
        entry.order = deadline.max(self.now);
        entry.pending = true;
    }

    fn get_mut(&mut self, pick: usize) {
        let Some(key) = self.pick(pick) else {
            return self.poke_stale(pick);
        };
        let value = self.fresh_value();
        *self.wheel.get_mut(key).expect("get_mut of a live key") = value;
        self.model.get_mut(&key.to_u64()).unwrap().value = value;
    }

    fn advance(&mut self, target: u64) {
        let mut fired = Vec::new();
        let n = self
            .wheel
            .advance(target, |key, value| fired.push((key, value)));
        assert_eq!(n, fired.len(), "advance's count");
        self.settle(target, fired.iter().map(|&(key, _)| key));
        for (key, value) in fired {
            let entry = self.model.remove(&key.to_u64()).unwrap();
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
            let entry = self.model.get_mut(&key.to_u64()).unwrap();
            entry.pending = false;
            if remove {
                assert_eq!(
                    self.wheel.remove(key),
                    Some(entry.value),
                    "remove after expire"
                );
                self.model.remove(&key.to_u64());
                self.stale.push(key);
            }
        }
    }

    /// Checks that `fired` (in the order handed out) is exactly the due set of an advance to
    /// `target`, in firing order, and moves the model's clock. Returns `fired` again.
    fn settle<I: IntoIterator<Item = Key>>(&mut self, target: u64, fired: I) -> Vec<Key> {
        let fired: Vec<Key> = fired.into_iter().collect();
        let due: HashSet<u64> = self
            .model
            .iter()
            .filter(|(_, e)| e.pending && target >= self.now && e.deadline <= target)
            .map(|(&raw, _)| raw)
            .collect();
        let got: HashSet<u64> = fired.iter().map(|k| k.to_u64()).collect();
        assert_eq!(got.len(), fired.len(), "an entry fired twice in one call");
        let early: Vec<_> = got
            .difference(&due)
            .map(|raw| self.describe(*raw))
            .collect();
        let missed: Vec<_> = due
            .difference(&got)
            .map(|raw| self.describe(*raw))
            .collect();
        assert!(
            early.is_empty(),
            "advance to {target} (now {}) fired {early:?}",
            self.now
        );
        assert!(
            missed.is_empty(),
            "advance to {target} (now {}) missed {missed:?}",
            self.now
        );
        let orders: Vec<u64> = fired
            .iter()
            .map(|k| self.model[&k.to_u64()].order)
            .collect();
        assert!(
            orders.windows(2).all(|w| w[0] <= w[1]),
            "out of order: {orders:?}"
        );
        self.now = self.now.max(target);
        fired
    }

    fn describe(&self, raw: u64) -> String {
        match self.model.get(&raw) {
            Some(e) => format!("{:?} deadline {} order {}", e.key, e.deadline, e.order),
            None => format!("unknown key {raw:#x}"),
        }
    }

    /// A stale key is refused everywhere, including by the mutating calls.
    fn poke_stale(&mut self, pick: usize) {
        if self.stale.is_empty() {
            return;
        }
        let key = self.stale[pick % self.stale.len()];
        assert_eq!(self.wheel.remove(key), None, "remove of stale {key:?}");
        assert!(!self.wheel.reset(key, self.now), "reset of stale {key:?}");
        assert!(
            self.wheel.get_mut(key).is_none(),
            "get_mut of stale {key:?}"
        );
    }

    /// Everything observable agrees with the model.
    fn check(&self) {
        assert_eq!(self.wheel.now(), self.now, "now()");
        assert_eq!(self.wheel.len(), self.model.len(), "len()");
        assert_eq!(self.wheel.is_empty(), self.model.is_empty(), "is_empty()");
        for e in self.model.values() {
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
        let earliest = self
            .model
            .values()
            .filter(|e| e.pending)
            .map(|e| e.order)
            .min();
        let next = self.wheel.next_expiry();
        let Some(earliest) = earliest else {
            return assert_eq!(next, None, "next_expiry with nothing pending");
        };
        let t = next.expect("next_expiry is None with entries pending");
        assert!(
            t <= earliest,
            "next_expiry {t} after the earliest deadline {earliest}"
        );
        if earliest == self.now {
            assert_eq!(t, self.now, "next_expiry {t} while an entry is due now");
        } else {
            assert!(
                t > self.now,
                "next_expiry {t} makes no progress from now {}",
                self.now
            );
        }
    }

    /// Follows `next_expiry()` until nothing is pending, then drains the detached rest.
    fn finish(&mut self) {
        let deadlines: HashSet<u64> = self
            .model
            .values()
            .filter(|e| e.pending)
            .map(|e| e.order)
            .collect();
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
            got.len(),
            self.model.len(),
            "drain handed out {} of {}",
            n,
            self.model.len()
        );
        for (key, value) in got {
            let entry = self
                .model
                .remove(&key.to_u64())
                .expect("drain: unknown or repeated key");
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
            h.insert(when);
            h.check();
        }
        h.finish();
        prop_assert!(h.wheel.is_empty());
    }
}
