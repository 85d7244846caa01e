//! The executor's queue of due runs not yet started, in deadline order, runs of equal
//! deadlines in the order they were queued.
//!
//! Two parts, because runs nearly always arrive in order: a list for those that arrive no
//! earlier than the last one queued (a push at the back, a pop at the front), and the early
//! ones, due before it: a periodic timer behind its schedule whose next point is past
//! already, a timer added already due. A take is the earlier of the two heads.
//!
//! - Inserting the early ones into the list instead costs a shift of the runs behind them,
//!   which under a backlog of 100,000 runs took most of the tick thread's time.
//! - The early ones are kept by tick, each tick's runs in a heap of their own. One heap of
//!   them all grew to a million runs when periodic timers fell behind: a push or a take was
//!   some twenty cache misses, under the executor's lock, and the workers waited for it
//!   while a CPU stood idle. A tick's heap holds a few hundred runs, and the map of ticks a
//!   few thousand keys that stay in the cache.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use super::clock::Deadline;
use super::sync::time::Instant;
use super::TimerId;

/// A due run not yet started, its deadline, and since when it waits.
pub(crate) struct Waiting {
    pub(crate) id: TimerId,
    pub(crate) deadline: Deadline,
    pub(crate) since: Instant,
    /// The order queued, which breaks ties of deadline.
    seq: u64,
}

impl Waiting {
    fn key(&self) -> (Deadline, u64) {
        (self.deadline, self.seq)
    }
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Waiting {}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

#[derive(Default)]
pub(crate) struct RunQueue {
    /// Runs queued in order: each no earlier than the one before.
    in_order: VecDeque<Waiting>,
    /// Runs queued before the back of `in_order`, by tick, each tick's earliest on top.
    early: BTreeMap<u64, BinaryHeap<Reverse<Waiting>>>,
    early_len: usize,
    queued: u64,
}

impl RunQueue {
    pub(crate) fn push(&mut self, id: TimerId, deadline: Deadline, since: Instant) {
        self.queued += 1;
        let run = Waiting {
            id,
            deadline,
            since,
            seq: self.queued,
        };
        match self.in_order.back() {
            Some(last) if last.deadline > deadline => {
                self.early_len += 1;
                let tick = self.early.entry(deadline.tick).or_default();
                tick.push(Reverse(run));
            }
            _ => self.in_order.push_back(run),
        }
    }

    /// The run to start next.
    pub(crate) fn pop(&mut self) -> Option<Waiting> {
        match (self.in_order.front(), self.first_early()) {
            (Some(first), Some(early)) if early < first => self.pop_early(),
            (Some(_), _) => self.in_order.pop_front(),
            (None, _) => self.pop_early(),
        }
    }

    fn first_early(&self) -> Option<&Waiting> {
        let (_, tick) = self.early.first_key_value()?;
        tick.peek().map(|Reverse(run)| run)
    }

    fn pop_early(&mut self) -> Option<Waiting> {
        let mut tick = self.early.first_entry()?;
        let Reverse(run) = tick.get_mut().pop()?;
        if tick.get().is_empty() {
            tick.remove();
        }
        self.early_len -= 1;
        Some(run)
    }

    /// Since when the longest waiting of the two runs next in line waits.
    pub(crate) fn oldest_since(&self) -> Option<Instant> {
        let first = self.in_order.front().map(|run| run.since);
        let early = self.first_early().map(|run| run.since);
        first.into_iter().chain(early).min()
    }

    pub(crate) fn len(&self) -> usize {
        self.in_order.len() + self.early_len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn clear(&mut self) {
        self.in_order.clear();
        self.early.clear();
        self.early_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_leave_in_deadline_order_ties_in_the_order_queued() {
        let mut queue = RunQueue::default();
        let now = Instant::now();
        let pushes = [
            (5, 1),
            (7, 2),
            (3, 3),
            (5, 4),
            (9, 5),
            (3, 6),
            (1, 7),
            (9, 8),
        ];
        for (tick, n) in pushes {
            queue.push(TimerId::from_u64(n).unwrap(), Deadline::at_tick(tick), now);
        }
        assert_eq!(queue.len(), 8);
        let taken: Vec<_> = std::iter::from_fn(|| queue.pop())
            .map(|run| run.id.as_u64())
            .collect();
        assert_eq!(taken, [7, 3, 6, 1, 4, 2, 5, 8]);
        assert!(queue.is_empty());
    }

    /// Pushes and takes at random, deadlines spread over a few ticks and within them,
    /// against a list sorted by (deadline, order queued).
    #[test]
    fn random_pushes_and_takes_leave_as_a_sorted_list_would() {
        let mut queue = RunQueue::default();
        let mut model: Vec<(Deadline, u64)> = Vec::new();
        let now = Instant::now();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        for n in 1..=20_000u64 {
            if random(3) == 0 {
                let taken = queue.pop().map(|run| run.id.as_u64());
                let expected = (!model.is_empty()).then(|| model.remove(0).1);
                assert_eq!(taken, expected, "take {n}");
            } else {
                let deadline = Deadline {
                    tick: random(40),
                    rounded_up_ns: random(3) as u32,
                };
                queue.push(TimerId::from_u64(n).unwrap(), deadline, now);
                let at = model.partition_point(|&(d, _)| d <= deadline);
                model.insert(at, (deadline, n));
            }
            assert_eq!(queue.len(), model.len());
        }
        let rest: Vec<_> = std::iter::from_fn(|| queue.pop())
            .map(|run| run.id.as_u64())
            .collect();
        assert_eq!(rest, model.iter().map(|&(_, n)| n).collect::<Vec<_>>());
    }
}
