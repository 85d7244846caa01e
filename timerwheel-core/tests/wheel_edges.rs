//! Unit tests of the wheel's edges: level boundaries, the overflow list, cascading, pool
//! growth and the capacity limit, key reuse, reset, expire, drain, and payload drops.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use timerwheel_core::wheel::{Full, Key, Wheel};

/// Distances around every level granularity (powers of 64) and the overflow range (2^37).
const BOUNDARY_DISTANCES: &[u64] = &[
    1,
    2,
    63,
    64,
    65,
    4_095,
    4_096,
    4_097,
    (1 << 18) - 1,
    1 << 18,
    (1 << 18) + 1,
    (1 << 24) - 1,
    1 << 24,
    (1 << 24) + 1,
    (1 << 30) - 1,
    1 << 30,
    (1 << 30) + 1,
    (1 << 36) - 1,
    1 << 36,
    (1 << 36) + 1,
    (1 << 37) - 1,
    1 << 37,
    (1 << 37) + 1,
];

/// Clock positions to start from: zero, unaligned, and high enough for the top levels.
const STARTS: &[u64] = &[0, 1_000_003, (1 << 36) + 12_345, (7 << 40) + 999];

fn fire<T>(wheel: &mut Wheel<T>, now: u64) -> Vec<(Key, T)> {
    let mut fired = Vec::new();
    let n = wheel.advance(now, |key, value| fired.push((key, value)));
    assert_eq!(n, fired.len(), "advance's count");
    fired
}

fn fire_values<T>(wheel: &mut Wheel<T>, now: u64) -> Vec<T> {
    fire(wheel, now)
        .into_iter()
        .map(|(_, value)| value)
        .collect()
}

fn fire_keys<T>(wheel: &mut Wheel<T>, now: u64) -> Vec<Key> {
    fire(wheel, now).into_iter().map(|(key, _)| key).collect()
}

fn expire<T>(wheel: &mut Wheel<T>, now: u64) -> Vec<Key> {
    let mut fired = Vec::new();
    let n = wheel.expire(now, |key| fired.push(key));
    assert_eq!(n, fired.len(), "expire's count");
    fired
}

fn wheel_at<T>(now: u64) -> Wheel<T> {
    let mut wheel = Wheel::new();
    assert_eq!(wheel.advance(now, |_, _| unreachable!()), 0);
    wheel
}

/// A key is stale: refused by every call.
fn assert_stale<T: std::fmt::Debug + PartialEq>(wheel: &mut Wheel<T>, key: Key) {
    assert_eq!(wheel.get(key), None);
    assert_eq!(wheel.get_mut(key), None);
    assert_eq!(wheel.deadline(key), None);
    assert!(!wheel.is_pending(key));
    assert!(!wheel.reset(key, wheel.now() + 1));
    assert_eq!(wheel.remove(key), None);
}

/// `next_expiry` points neither before `now()` nor after `deadline`, and moves forward.
fn assert_next_expiry_within<T>(wheel: &Wheel<T>, deadline: u64) {
    let t = wheel.next_expiry().expect("an entry is pending");
    assert!(t <= deadline, "next_expiry {t} after deadline {deadline}");
    assert!(
        t > wheel.now() || t == deadline,
        "next_expiry {t} stuck at now {}",
        wheel.now()
    );
}

/// A single entry fires at exactly its tick: not one tick before, and on it.
fn assert_fires_exactly_at(start: u64, deadline: u64) {
    let mut wheel = wheel_at(start);
    let key = wheel.insert(deadline, deadline).unwrap();
    assert_next_expiry_within(&wheel, deadline);
    assert!(
        fire(&mut wheel, deadline - 1).is_empty(),
        "{deadline} fired at {}",
        deadline - 1
    );
    assert_next_expiry_within(&wheel, deadline);
    assert_eq!(
        fire(&mut wheel, deadline),
        vec![(key, deadline)],
        "from {start} to {deadline}"
    );
    assert_eq!(wheel.next_expiry(), None);
    assert!(wheel.is_empty());
}

#[test]
fn level_boundaries_relative_to_now() {
    for &start in STARTS {
        for &d in BOUNDARY_DISTANCES {
            assert_fires_exactly_at(start, start + d);
        }
    }
}

#[test]
fn level_boundaries_on_absolute_ticks() {
    for shift in [6, 12, 18, 24, 30, 36, 37] {
        let edge = 1u64 << shift;
        for start in [edge - 64, edge - 2, edge - 1, edge] {
            for deadline in [
                edge - 1,
                edge,
                edge + 1,
                edge + 63,
                edge + 64,
                edge + 65,
                2 * edge,
            ] {
                if deadline > start {
                    assert_fires_exactly_at(start, deadline);
                }
            }
        }
    }
}

#[test]
fn boundaries_in_one_wheel_fire_in_order() {
    for &start in STARTS {
        let mut wheel = wheel_at(start);
        for &d in BOUNDARY_DISTANCES {
            wheel.insert(start + d, d).unwrap();
        }
        for &d in BOUNDARY_DISTANCES {
            assert!(fire(&mut wheel, start + d - 1).is_empty());
            assert_eq!(fire_values(&mut wheel, start + d), vec![d], "start {start}");
        }
        assert!(wheel.is_empty());
    }
}

/// Steps one tick at a time from `from` to `to`: each entry fires on its own tick.
fn step_one_tick_at_a_time(wheel: &mut Wheel<u64>, from: u64, to: u64) -> usize {
    let mut fired = 0;
    for now in from..=to {
        for (_, deadline) in fire(wheel, now) {
            assert_eq!(deadline, now, "an entry due at {deadline} fired at {now}");
            fired += 1;
        }
    }
    fired
}

#[test]
fn cascaded_entries_fire_on_their_tick() {
    let distances = [
        1, 63, 64, 65, 100, 4_095, 4_096, 4_097, 5_000, 70_000, 262_143, 262_144,
    ];
    for start in [0, 1_000_003] {
        let mut wheel = wheel_at(start);
        for d in distances {
            wheel.insert(start + d, start + d).unwrap();
        }
        let fired = step_one_tick_at_a_time(&mut wheel, start, start + 300_000);
        assert_eq!(fired, distances.len());
        assert!(wheel.is_empty());
    }
}

#[test]
fn far_entries_fire_on_their_tick_after_a_jump() {
    let far = [
        (1 << 30) + 17,
        (1 << 36) + 5,
        (1 << 37) + 3,
        (1 << 40) + 3,
        u64::MAX - 70,
    ];
    let mut wheel = wheel_at(5);
    for deadline in far {
        wheel.insert(deadline, deadline).unwrap();
        wheel.insert(deadline + 1, deadline + 1).unwrap();
    }
    for deadline in far {
        assert!(fire(&mut wheel, deadline - 100).is_empty());
        assert_eq!(
            step_one_tick_at_a_time(&mut wheel, deadline - 99, deadline + 1),
            2
        );
    }
    assert!(wheel.is_empty());
}

#[test]
fn overflow_entries_wait_and_fire() {
    for &start in STARTS {
        let deadlines = [
            start + (1 << 37) + 5,
            start + (1 << 42),
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut wheel = wheel_at(start);
        for deadline in deadlines {
            wheel.insert(deadline, deadline).unwrap();
        }
        for (i, deadline) in deadlines.into_iter().enumerate() {
            assert_next_expiry_within(&wheel, deadline);
            assert!(
                fire(&mut wheel, deadline - 1).is_empty(),
                "{deadline} fired early"
            );
            assert_eq!(wheel.len(), deadlines.len() - i);
            assert_eq!(fire_values(&mut wheel, deadline), vec![deadline]);
        }
    }
}

/// An overflow entry that left must not hold `next_expiry` back once the list refills.
#[test]
fn next_expiry_moves_on_after_the_overflow_list_emptied() {
    let mut wheel = Wheel::new();
    let gone = wheel.insert(1 << 37, ()).unwrap();
    wheel.remove(gone).unwrap();
    assert!(fire(&mut wheel, 1 << 36).is_empty());
    let deadline = (1 << 36) + (1 << 37);
    wheel.insert(deadline, ()).unwrap();
    assert_next_expiry_within(&wheel, deadline);
}

#[test]
fn the_last_tick_is_reachable() {
    let mut wheel = wheel_at(u64::MAX - 1);
    let last = wheel.insert(u64::MAX, 1).unwrap();
    assert_eq!(wheel.next_expiry(), Some(u64::MAX));
    assert_eq!(fire_keys(&mut wheel, u64::MAX), vec![last]);
    assert_eq!(wheel.now(), u64::MAX);
    wheel.insert(u64::MAX, 2).unwrap();
    wheel.insert(7, 3).unwrap();
    assert_eq!(wheel.next_expiry(), Some(u64::MAX));
    let mut fired = fire_values(&mut wheel, u64::MAX);
    fired.sort_unstable();
    assert_eq!(fired, vec![2, 3]);
    assert_eq!(wheel.next_expiry(), None);
}

#[test]
fn past_deadlines_fire_on_the_next_advance_first() {
    let mut wheel = wheel_at(100);
    let later = wheel.insert(105, "later").unwrap();
    let past = wheel.insert(3, "past").unwrap();
    let now = wheel.insert(100, "now").unwrap();
    assert_eq!(wheel.next_expiry(), Some(100));
    assert_eq!(wheel.deadline(past), Some(3));
    let fired = fire_keys(&mut wheel, 110);
    assert_eq!(fired.len(), 3);
    assert_eq!(
        fired[2], later,
        "the past and the due-now entries count as due at 100"
    );
    assert!(fired[..2].contains(&past) && fired[..2].contains(&now));
}

#[test]
fn advancing_to_now_fires_what_is_due_now() {
    let mut wheel = wheel_at(100);
    let key = wheel.insert(90, ()).unwrap();
    assert_eq!(fire_keys(&mut wheel, 100), vec![key]);
    assert_eq!(wheel.now(), 100);
}

#[test]
fn advancing_backwards_changes_nothing() {
    let mut wheel = wheel_at(1_000);
    let key = wheel.insert(900, ()).unwrap();
    assert!(fire(&mut wheel, 500).is_empty());
    assert_eq!(wheel.now(), 1_000);
    assert!(wheel.is_pending(key));
    assert!(expire(&mut wheel, 999).is_empty());
    assert_eq!(fire_keys(&mut wheel, 1_000), vec![key]);
}

#[test]
fn one_advance_fires_in_deadline_order() {
    let mut wheel = wheel_at(12_345);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let deadline = (x >> (x % 64) as u32).saturating_add(12_345);
        wheel.insert(deadline, deadline).unwrap();
    }
    let fired = fire_values(&mut wheel, u64::MAX);
    assert_eq!(fired.len(), 10_000);
    assert!(fired.windows(2).all(|w| w[0] <= w[1]), "out of order");
}

#[test]
fn next_expiry_leads_to_every_deadline() {
    let mut wheel = wheel_at(777);
    assert_eq!(wheel.next_expiry(), None);
    let deadline = 777 + (1 << 33) + 5;
    wheel.insert(deadline, ()).unwrap();
    let mut steps = 0;
    while let Some(t) = wheel.next_expiry() {
        assert_next_expiry_within(&wheel, deadline);
        steps += 1;
        assert!(steps <= 64, "{steps} steps and still going");
        let fired = fire(&mut wheel, t);
        assert_eq!(fired.is_empty(), t < deadline, "advance to {t}");
    }
    assert_eq!(wheel.now(), deadline);
}

#[test]
fn many_entries_grow_the_pool() {
    const N: u64 = 100_000;
    let mut wheel = Wheel::new();
    let keys: Vec<Key> = (0..N)
        .map(|i| wheel.insert(1 + i * 7_919 % 1_000_000, i).unwrap())
        .collect();
    assert_eq!(wheel.len(), N as usize);
    assert_eq!(
        keys.iter()
            .map(|k| k.to_u64())
            .collect::<HashSet<_>>()
            .len(),
        N as usize
    );
    let mut seen = vec![false; N as usize];
    let mut before = 0;
    for now in (0..=1_000_000).step_by(99_991).chain([1_000_000]) {
        for (key, i) in fire(&mut wheel, now) {
            assert!(!seen[i as usize], "entry {i} fired twice");
            seen[i as usize] = true;
            assert_eq!(keys[i as usize], key);
            let deadline = 1 + i * 7_919 % 1_000_000;
            assert!(
                before < deadline && deadline <= now,
                "{deadline} fired at {now}"
            );
        }
        before = now;
    }
    assert!(seen.iter().all(|s| *s), "not every entry fired");
    assert!(wheel.is_empty());
}

#[test]
fn limit_hands_the_value_back() {
    let mut wheel = Wheel::with_limit(3);
    let a = wheel.insert(10, "a".to_string()).unwrap();
    wheel.insert(20, "b".to_string()).unwrap();
    wheel.insert(30, "c".to_string()).unwrap();
    match wheel.insert(40, "d".to_string()) {
        Err(Full(value)) => assert_eq!(value, "d"),
        Ok(_) => panic!("insert past the limit accepted"),
    }
    assert_eq!(wheel.len(), 3);
    assert_eq!(
        fire(&mut wheel, 100).len(),
        3,
        "the refused insert changed nothing"
    );
    assert!(wheel.get(a).is_none());
    for name in ["e", "f", "g"] {
        wheel.insert(200, name.to_string()).unwrap();
    }
    let detached = expire(&mut wheel, 200);
    assert_eq!(detached.len(), 3);
    assert!(
        wheel.insert(300, "h".to_string()).is_err(),
        "detached entries count"
    );
    assert!(wheel.remove(detached[0]).is_some());
    let h = wheel.insert(300, "h".to_string()).unwrap();
    assert_eq!(wheel.get(h).map(String::as_str), Some("h"));
}

#[test]
fn limit_zero_refuses_everything() {
    let mut wheel = Wheel::with_limit(0);
    assert!(matches!(wheel.insert(1, 5u8), Err(Full(5))));
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_expiry(), None);
}

fn indices(keys: &[Key]) -> HashSet<u32> {
    keys.iter().map(|k| k.index()).collect()
}

#[test]
fn removed_memory_is_reused_at_once() {
    const N: usize = 1_000;
    let mut wheel = Wheel::with_limit(N);
    let first: Vec<Key> = (0..N)
        .map(|i| wheel.insert(10 + i as u64, i).unwrap())
        .collect();
    for &key in &first {
        wheel.remove(key).unwrap();
    }
    let second: Vec<Key> = (0..N).map(|i| wheel.insert(5, i).unwrap()).collect();
    assert!(
        indices(&second).is_subset(&indices(&first)),
        "removed slots not reused"
    );
    assert!(
        first.iter().all(|k| !second.contains(k)),
        "a key was issued twice"
    );
    assert_eq!(fire(&mut wheel, 5).len(), N);
    let third: Vec<Key> = (0..N).map(|i| wheel.insert(u64::MAX, i).unwrap()).collect();
    assert!(
        indices(&third).is_subset(&indices(&first)),
        "fired slots not reused"
    );
    assert_eq!(wheel.drain(|_, _| {}), N);
    let fourth: Vec<Key> = (0..N).map(|i| wheel.insert(6, i).unwrap()).collect();
    assert!(
        indices(&fourth).is_subset(&indices(&first)),
        "drained slots not reused"
    );
}

#[test]
fn keys_round_trip_and_are_never_zero() {
    let mut wheel = Wheel::new();
    let key = wheel.insert(1, ()).unwrap();
    assert_ne!(key.to_u64(), 0);
    assert_eq!(Key::from_u64(key.to_u64()), Some(key));
    assert_eq!(Key::from_u64(0), None);
}

#[test]
fn stale_keys_never_touch_the_new_entry() {
    let mut wheel = Wheel::new();
    let old = wheel.insert(50, "old").unwrap();
    assert_eq!(wheel.remove(old), Some("old"));
    let new = wheel.insert(60, "new").unwrap();
    assert_eq!(new.index(), old.index(), "the freed slot is reused");
    assert_ne!(new, old);
    assert_ne!(new.to_u64(), old.to_u64());
    assert_stale(&mut wheel, old);
    assert_eq!(wheel.get(new), Some(&"new"));
    assert_eq!(wheel.deadline(new), Some(60));
    assert_eq!(fire_keys(&mut wheel, 60), vec![new]);
    assert_stale(&mut wheel, new);
    assert_stale(&mut wheel, old);
    let newest = wheel.insert(70, "newest").unwrap();
    assert_stale(&mut wheel, new);
    assert_eq!(wheel.remove(newest), Some("newest"));
}

#[test]
fn reset_moves_the_deadline() {
    let mut wheel = wheel_at(1_000);
    let earlier = wheel.insert(5_000, "earlier").unwrap();
    let later = wheel.insert(1_010, "later").unwrap();
    let past = wheel.insert(1 << 40, "past").unwrap();
    let same = wheel.insert(1_500, "same").unwrap();
    assert!(wheel.reset(earlier, 1_005));
    assert!(wheel.reset(later, 70_000));
    assert!(wheel.reset(past, 10));
    assert!(wheel.reset(same, 1_500));
    assert_eq!(wheel.deadline(later), Some(70_000));
    assert_eq!(wheel.next_expiry(), Some(1_000));
    assert_eq!(fire_keys(&mut wheel, 1_000), vec![past]);
    assert!(fire(&mut wheel, 1_004).is_empty());
    assert_eq!(fire_keys(&mut wheel, 1_005), vec![earlier]);
    assert!(fire(&mut wheel, 1_499).is_empty());
    assert_eq!(fire_keys(&mut wheel, 69_999), vec![same]);
    assert_eq!(fire_keys(&mut wheel, 70_000), vec![later]);
    assert!(wheel.is_empty());
}

#[test]
fn reset_relinks_a_detached_entry() {
    let mut wheel = wheel_at(10);
    let key = wheel.insert(20, 7).unwrap();
    assert_eq!(expire(&mut wheel, 25), vec![key]);
    assert!(!wheel.is_pending(key));
    assert_eq!(wheel.get(key), Some(&7));
    assert_eq!(wheel.len(), 1);
    assert_eq!(wheel.next_expiry(), None);
    assert!(fire(&mut wheel, 1_000).is_empty(), "a detached entry fired");
    assert!(wheel.reset(key, 1_100));
    assert!(wheel.is_pending(key));
    assert_eq!(wheel.deadline(key), Some(1_100));
    assert_next_expiry_within(&wheel, 1_100);
    assert!(fire(&mut wheel, 1_099).is_empty());
    assert_eq!(fire(&mut wheel, 1_100), vec![(key, 7)]);
    assert_stale(&mut wheel, key);
}

#[test]
fn reset_of_a_detached_entry_into_the_past() {
    let mut wheel = wheel_at(10);
    let key = wheel.insert(20, 7).unwrap();
    assert_eq!(expire(&mut wheel, 20), vec![key]);
    assert!(wheel.reset(key, 0));
    assert_eq!(wheel.next_expiry(), Some(20));
    assert_eq!(
        expire(&mut wheel, 20),
        vec![key],
        "expire hands out a re-linked entry again"
    );
    assert_eq!(wheel.remove(key), Some(7));
}

#[test]
fn expire_then_remove() {
    let mut wheel = Wheel::new();
    let a = wheel.insert(5, 'a').unwrap();
    let b = wheel.insert(6, 'b').unwrap();
    let c = wheel.insert(60, 'c').unwrap();
    assert_eq!(expire(&mut wheel, 10), vec![a, b]);
    assert_eq!(wheel.len(), 3);
    assert!(wheel.is_pending(c) && !wheel.is_pending(a) && !wheel.is_pending(b));
    assert_eq!(wheel.next_expiry().map(|t| t <= 60 && t > 10), Some(true));
    *wheel.get_mut(a).unwrap() = 'A';
    assert_eq!(wheel.remove(a), Some('A'));
    assert_stale(&mut wheel, a);
    assert_eq!(wheel.len(), 2);
    assert!(
        expire(&mut wheel, 20).is_empty(),
        "a detached entry expired twice"
    );
    assert_eq!(fire(&mut wheel, 60), vec![(c, 'c')]);
    assert_eq!(wheel.remove(b), Some('b'));
    assert!(wheel.is_empty());
}

#[test]
fn drain_takes_pending_and_detached() {
    let mut wheel = wheel_at(100);
    let detached = wheel.insert(50, 1).unwrap();
    assert_eq!(expire(&mut wheel, 100), vec![detached]);
    let keys = [
        detached,
        wheel.insert(200, 2).unwrap(),
        wheel.insert(1 << 50, 3).unwrap(),
        wheel.insert(u64::MAX, 4).unwrap(),
        wheel.insert(7, 5).unwrap(),
    ];
    let mut got = Vec::new();
    assert_eq!(wheel.drain(|key, value| got.push((key, value))), 5);
    got.sort_unstable_by_key(|&(_, value)| value);
    assert_eq!(got, keys.iter().copied().zip(1..=5).collect::<Vec<_>>());
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_expiry(), None);
    for key in keys {
        assert_stale(&mut wheel, key);
    }
    let key = wheel.insert(101, 6).unwrap();
    assert_eq!(fire(&mut wheel, 101), vec![(key, 6)]);
    assert_eq!(wheel.drain(|_, _| unreachable!()), 0);
}

#[test]
fn zero_sized_payload() {
    let mut wheel: Wheel<()> = Wheel::new();
    let keys: Vec<Key> = (0..1_000)
        .map(|i| wheel.insert(i % 100, ()).unwrap())
        .collect();
    for key in keys.iter().step_by(2) {
        assert_eq!(wheel.remove(*key), Some(()));
    }
    assert_eq!(wheel.len(), 500);
    assert_eq!(fire(&mut wheel, 99).len(), 500);
    assert!(wheel.is_empty());
}

/// Records its id in a shared log when dropped.
#[derive(Debug)]
struct Tracked {
    id: u32,
    log: Rc<RefCell<Vec<u32>>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.log.borrow_mut().push(self.id);
    }
}

fn dropped(log: &Rc<RefCell<Vec<u32>>>) -> Vec<u32> {
    let mut ids = log.borrow().clone();
    ids.sort_unstable();
    ids
}

#[test]
fn every_value_is_dropped_exactly_once() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let tracked = |id| Tracked {
        id,
        log: log.clone(),
    };
    let mut wheel = Wheel::with_limit(9);
    let keys: Vec<Key> = (0..9)
        .map(|id| wheel.insert(10 * u64::from(id), tracked(id)).unwrap())
        .collect();
    match wheel.insert(1, tracked(9)) {
        Err(Full(value)) => assert_eq!(value.id, 9),
        Ok(_) => panic!("insert past the limit accepted"),
    }
    assert_eq!(dropped(&log), vec![9], "only the refused value is gone");
    drop(wheel.remove(keys[8]));
    assert_eq!(wheel.advance(25, |_, value| drop(value)), 3);
    assert_eq!(dropped(&log), vec![0, 1, 2, 8, 9]);
    *wheel.get_mut(keys[7]).unwrap() = tracked(10);
    assert_eq!(dropped(&log), vec![0, 1, 2, 7, 8, 9]);
    assert_eq!(expire(&mut wheel, 30), vec![keys[3]]);
    assert!(wheel.reset(keys[6], 5));
    assert_eq!(wheel.drain(|_, value| drop(value)), 5);
    assert_eq!(dropped(&log), (0..=10).collect::<Vec<_>>());

    for id in 11..20 {
        wheel
            .insert(u64::from(id) * 1_000_000, tracked(id))
            .unwrap();
    }
    assert_eq!(expire(&mut wheel, 13_000_000).len(), 3);
    drop(wheel);
    assert_eq!(
        dropped(&log),
        (0..20).collect::<Vec<_>>(),
        "dropping the wheel drops it all"
    );
}

#[test]
fn removes_between_advances_leave_every_list_whole() {
    // Many removes in one slot, among inserts and resets into it, with no advance between:
    // the removed nodes are unlinked in batches, so neighbours of removed nodes are
    // themselves removed, reset or reused meanwhile.
    let mut wheel = Wheel::new();
    let keys: Vec<Key> = (0..1_000)
        .map(|i| wheel.insert(5_000, i).unwrap())
        .collect();
    for &key in keys.iter().step_by(2) {
        assert!(wheel.remove(key).is_some());
    }
    let added: Vec<Key> = (1_000..1_100)
        .map(|i| wheel.insert(5_000, i).unwrap())
        .collect();
    for &key in keys.iter().skip(1).step_by(4) {
        assert!(wheel.reset(key, 6_000));
    }
    for &key in keys.iter().step_by(2) {
        assert_stale(&mut wheel, key);
    }
    assert_eq!(wheel.len(), 600);
    let mut early = fire_values(&mut wheel, 5_000);
    early.sort_unstable();
    let mut expected: Vec<usize> = (3..1_000).step_by(4).chain(1_000..1_100).collect();
    expected.sort_unstable();
    assert_eq!(early, expected);
    assert_eq!(fire_values(&mut wheel, 6_000).len(), 250);
    assert!(wheel.is_empty());
    assert!(added.iter().all(|&key| wheel.get(key).is_none()));
}
