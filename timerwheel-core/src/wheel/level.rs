//! The geometry of the wheel: which level and slot a deadline belongs to.
//!
//! Each level has 128 slots: two rotations of 64. Level `L` has a granularity of `64^L`
//! ticks and holds the deadlines whose level-`L+1` slot is the current one or the next,
//! so that the next upper slot can be moved down a piece at a time while the current
//! rotation runs (see `Wheel::drain_ahead`) instead of all at once when it comes due.
//!
//! | level | slots | granularity   | reach (two rotations) | at a 1 ms tick |
//! |-------|-------|---------------|-----------------------|----------------|
//! | 0     | 128   | 1 tick        | 2^7  ticks            | 128 ms         |
//! | 1     | 128   | 2^6  ticks    | 2^13 ticks            | 8.2 s          |
//! | 2     | 128   | 2^12 ticks    | 2^19 ticks            | 8.7 min        |
//! | 3     | 128   | 2^18 ticks    | 2^25 ticks            | 9.3 h          |
//! | 4     | 128   | 2^24 ticks    | 2^31 ticks            | 24.9 days      |
//! | 5     | 128   | 2^30 ticks    | 2^37 ticks            | 4.4 years      |
//! | overflow | 1 list | -          | any u64               | re-checked when its earliest fits |
//!
//! A slot's *value* is `deadline >> (6 * level)`; its index is `value % 128`; its *time*,
//! when it comes due, is `value << (6 * level)`. A level holds 128 consecutive values, so
//! the index names one value at a time.

/// Number of levels below the overflow list.
pub(super) const LEVELS: usize = 6;
/// Bits of one rotation: 64 slots.
const ROTATION_BITS: u32 = 6;
/// Slots per level: two rotations.
pub(super) const SLOTS: usize = 128;
/// List id of the overflow list; level lists are `level * SLOTS + slot`.
pub(super) const OVERFLOW: usize = LEVELS * SLOTS;
/// Number of lists.
pub(super) const LISTS: usize = OVERFLOW + 1;
/// Shift of the overflow's window: the top level reaches two of its rotations.
const OVERFLOW_SHIFT: u32 = ROTATION_BITS * LEVELS as u32;

fn level_shift(level: usize) -> u32 {
    ROTATION_BITS * level as u32
}

/// The list for `deadline` (at least `now`) when the wheel stands at `now`: the lowest
/// level whose window (the current rotation of the next level up, and the one after)
/// contains it, that is the least `level` with
/// `deadline >> 6 * (level + 1) <= (now >> 6 * (level + 1)) + 1`.
///
/// Found without a loop over the levels. With `a = deadline >> 6` and `c = now >> 6`, the
/// test at `level` compares `a` and `c` above bit `6 * level`: they are equal there above
/// their highest differing bit `p`, where `a` has the 1. Below `p`, `a >> s` is exactly one
/// more than `c >> s` when `a` holds only 0s and `c` only 1s between bit `s` and `p`. So
/// the level is the first whose bit `6 * level` lies above every bit below `p` that breaks
/// that pattern (a 1 of `a` or a 0 of `c`).
#[inline]
pub(super) fn list_for(deadline: u64, now: u64) -> usize {
    debug_assert!(deadline >= now);
    let (a, c) = (deadline >> ROTATION_BITS, now >> ROTATION_BITS);
    let differing = a ^ c;
    let level = if differing == 0 {
        0
    } else {
        let below_p = (1u64 << differing.ilog2()) - 1;
        match (a | !c) & below_p {
            0 => 0,
            breaking => (breaking.ilog2() / ROTATION_BITS) as usize + 1,
        }
    };
    if level >= LEVELS {
        return OVERFLOW;
    }
    level * SLOTS + (slot_value(deadline, level) % SLOTS as u64) as usize
}

/// The value of `tick` at `level`.
pub(super) fn slot_value(tick: u64, level: usize) -> u64 {
    tick >> level_shift(level)
}

/// The tick at which the slot of `value` at `level` comes due.
pub(super) fn slot_time(value: u64, level: usize) -> u64 {
    value << level_shift(level)
}

/// The list id of `value` at `level`.
pub(super) fn list_of(value: u64, level: usize) -> usize {
    level * SLOTS + (value % SLOTS as u64) as usize
}

/// When an overflow entry due at `deadline` fits the top level: the start of the top
/// level's rotation before the one that holds it.
pub(super) fn overflow_time(deadline: u64) -> u64 {
    ((deadline >> OVERFLOW_SHIFT) - 1) << OVERFLOW_SHIFT
}

/// The first occupied value at `level` at or after the value of `now`, given the level's
/// occupancy bitmap (bit i = slot i holds something).
pub(super) fn next_occupied(occupied: u128, level: usize, now: u64) -> Option<u64> {
    if occupied == 0 {
        return None;
    }
    let current = slot_value(now, level);
    // Rotate so that bit 0 is the current slot; the first set bit is then the distance.
    let distance = occupied
        .rotate_right((current % SLOTS as u64) as u32)
        .trailing_zeros();
    Some(current + u64::from(distance))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition of [`list_for`], level by level.
    fn list_by_levels(deadline: u64, now: u64) -> usize {
        (0..LEVELS)
            .find(|&level| {
                let shift = level_shift(level + 1);
                (deadline >> shift) <= (now >> shift) + 1
            })
            .map_or(OVERFLOW, |level| {
                level * SLOTS + (slot_value(deadline, level) % SLOTS as u64) as usize
            })
    }

    #[test]
    fn the_list_found_without_a_loop_is_the_one_the_definition_names() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut pairs = Vec::new();
        for _ in 0..200_000 {
            let now = random() >> (random() % 64);
            // Distances of every size, and deadlines just around the window edges.
            let span = random() >> (random() % 64);
            pairs.push((now, now.saturating_add(span)));
            let shift = level_shift(1 + (random() % LEVELS as u64) as usize);
            if let Some(edge) = ((now >> shift) + 2).checked_shl(shift) {
                pairs.push((now, edge.max(now)));
                pairs.push((now, (edge - 1).max(now)));
            }
        }
        for now in [0, 1, 63, 64, 4095, 4096, u64::MAX - 1, u64::MAX] {
            for shift in 0..64 {
                for deadline in [now.saturating_add(1 << shift), now | ((1 << shift) - 1)] {
                    pairs.push((now, deadline.max(now)));
                }
            }
        }
        for (now, deadline) in pairs {
            assert_eq!(
                list_for(deadline, now),
                list_by_levels(deadline, now),
                "deadline {deadline}, now {now}"
            );
        }
    }
}
