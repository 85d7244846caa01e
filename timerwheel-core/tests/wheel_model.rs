//! Property tests: the wheel driven by random operations, checked after every operation
//! against the reference model of `support/wheel_harness.rs`.

#[path = "support/wheel_harness.rs"]
mod wheel_harness;

use proptest::prelude::*;
use timerwheel_core::wheel::DRAIN_CHUNK;
use wheel_harness::{Checks, Harness, Op, When};

/// The wheel's default geometry (the fuzz target `wheel_ops` uses a small drain chunk).
const DEFAULT_CHUNK: u32 = DRAIN_CHUNK.trailing_zeros();

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

proptest! {
    #[test]
    fn wheel_matches_model(
        limit in limit(),
        start in start(),
        ops in prop::collection::vec(op(), 1..300),
        follow_next_expiry in any::<bool>(),
    ) {
        let mut h = Harness::new(limit, start, Checks::EveryOp, DEFAULT_CHUNK);
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
        let mut h = Harness::new(None, start, Checks::EveryOp, DEFAULT_CHUNK);
        for when in deadlines {
            h.insert(when.resolve(start));
            h.check();
        }
        h.finish();
        prop_assert!(h.wheel.is_empty());
    }
}
