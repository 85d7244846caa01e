//! Where a pool's nodes live: a reservation of address space, filled from its start.
//!
//! - **Grown by moving page tables.** The first reservation, made at the first node, is
//!   one [`HUGE_PAGE`]; one about to fill (past its first, within [`AHEAD`] of its end) is
//!   followed by one twice as large, extended in place where the address space after it
//!   is free, else with the pages moved over (`mremap`: page tables, not bytes). Growing
//!   copies nothing (on Linux), and the address space held is at most twice what the
//!   nodes fill.
//! - **Paid for as used.** Memory is taken a page at a time as nodes are first written.
//!   Where the system refuses the next reservation (an address-space limit), a smaller
//!   step is tried, down to one huge page; when none can be had, the pool is full, and
//!   tries again only after [`RETRY_AFTER`] more refusals, so that a full pool refuses
//!   cheaply.
//! - **Huge pages past the first 2 MiB** (Linux, where transparent huge pages are enabled
//!   for `madvise`): a small wheel stays on small pages, a large one reaches its random
//!   nodes through far fewer TLB entries.
//! - **Faulted ahead.** Once a pool fills past its first 2 MiB less [`AHEAD`], each push
//!   that comes within [`AHEAD`] bytes of memory not yet asked for hands out a
//!   [`Prefault`] of the next [`HUGE_PAGE`]: the pool's owner runs it after releasing the
//!   lock that guards the pool, so that the page's fault (zeroing 2 MiB, or compacting
//!   memory to find it) stalls neither the lock nor the threads waiting on it.

use std::ptr::NonNull;

/// The huge page size this aligns and faults ahead by.
const HUGE_PAGE: usize = 2 << 20;
/// How far ahead of the nodes written memory is asked for: what the pushes of other
/// threads may take while a prefault runs (5,461 nodes of 48 bytes), and no more than
/// that, as memory asked for ahead is held whether or not nodes ever reach it.
const AHEAD: usize = 256 << 10;
/// Refused pushes of a full region before it tries to grow again.
const RETRY_AFTER: u32 = 1024;

/// Memory of a pool to fault in ahead of its first use: run it outside the lock that guards
/// the pool. Running it changes no byte of memory (a page already present stays as it is),
/// so it is harmless whenever it runs, even after the pool moved or is gone.
#[derive(Debug)]
#[must_use = "the memory is faulted in only when the prefault runs"]
pub struct Prefault {
    /// Where the huge page to fault in starts.
    address: usize,
}

impl Prefault {
    /// Faults the huge page in (`MADV_POPULATE_WRITE`; nothing where the kernel lacks it).
    pub fn run(self) {
        #[cfg(target_os = "linux")]
        // SAFETY: MADV_POPULATE_WRITE only faults pages in, as a write would, without
        // writing: no byte changes, so no memory anyone holds is disturbed. A range that is
        // no longer mapped gets ENOMEM, which is ignored.
        unsafe {
            libc::madvise(
                self.address as *mut libc::c_void,
                HUGE_PAGE,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
}

/// Nodes of type `N` in one reservation: the initialised ones are `[0, len)`.
pub(super) struct Region<N> {
    start: NonNull<N>,
    len: usize,
    /// Nodes the reservation holds: 0 until the first push reserves it.
    capacity: usize,
    /// Bytes reserved at `start`, a whole number of huge pages.
    reserved: usize,
    /// Nodes the region may grow to.
    wanted: usize,
    /// Refused pushes left before the next try to grow, after a try failed.
    refusals_left: u32,
    /// Bytes from the start asked to be faulted in ahead.
    asked: usize,
    /// The next prefault, for the owner to take.
    prefault: Option<Prefault>,
}

// SAFETY: a region owns its nodes as a `Vec` owns its elements; it is shared or sent
// exactly when they may be.
unsafe impl<N: Send> Send for Region<N> {}
// SAFETY: as above; `&Region` gives only `&N`.
unsafe impl<N: Sync> Sync for Region<N> {}

impl<N> Region<N> {
    /// An empty region that may grow to `wanted` nodes, reserved from its first push on.
    pub(super) fn new(wanted: usize) -> Self {
        Region {
            start: NonNull::dangling(),
            len: 0,
            capacity: 0,
            reserved: 0,
            wanted,
            refusals_left: 0,
            asked: HUGE_PAGE,
            prefault: None,
        }
    }

    /// Appends `node` and returns its index; hands it back when the region is full.
    #[inline]
    pub(super) fn push(&mut self, node: N) -> Result<usize, N> {
        if self.len == self.capacity && !self.grow() {
            return Err(node);
        }
        let index = self.len;
        // SAFETY: `index < capacity`, inside the reservation, and not yet initialised.
        unsafe { self.start.as_ptr().add(index).write(node) };
        self.len += 1;
        self.ask_ahead();
        Ok(index)
    }

    /// The prefault the last pushes asked for, if any (see the module's text).
    pub(super) fn take_prefault(&mut self) -> Option<Prefault> {
        self.prefault.take()
    }

    /// Where node 0 lies (dangling before the first push).
    pub(super) fn address(&self) -> usize {
        self.start.as_ptr() as usize
    }

    /// Takes a reservation at the first push, a larger one (the nodes moved over) at a
    /// later one; false when the region holds all it may, or no larger reservation could
    /// be had.
    #[cold]
    fn grow(&mut self) -> bool {
        if self.capacity >= self.wanted {
            return false;
        }
        if self.refusals_left > 0 {
            self.refusals_left -= 1;
            return false;
        }
        let size = std::mem::size_of::<N>().max(1);
        let most =
            (self.wanted.min(isize::MAX as usize / 4 / size) * size).next_multiple_of(HUGE_PAGE);
        let mut bytes = (self.reserved * 2).clamp(HUGE_PAGE, most);
        loop {
            if self.reserved > 0 && reservation::extend(self.start.cast(), self.reserved, bytes) {
                self.move_to(self.start.cast(), bytes);
                return true;
            }
            if let Some(start) = reservation::take(bytes) {
                self.move_to(start, bytes);
                return true;
            }
            let step = (bytes - self.reserved) / 2 / HUGE_PAGE * HUGE_PAGE;
            if step == 0 {
                break;
            }
            bytes = self.reserved + step;
        }
        self.refusals_left = RETRY_AFTER;
        false
    }

    /// Moves the nodes to the reservation `start` of `reserved` bytes (the same one,
    /// extended in place, when `start` is where they are).
    fn move_to(&mut self, start: NonNull<u8>, reserved: usize) {
        let from = self.start.cast::<u8>();
        if self.reserved > 0
            && start != from
            && !reservation::move_pages(from, self.reserved, start)
        {
            // The nodes written, not the whole reservation: its untouched rest would be
            // faulted in by the copy.
            let written = self.len * std::mem::size_of::<N>();
            // SAFETY: two distinct reservations, each at least `self.reserved >= written`
            // long; the old one is given back right after and not referenced again.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), start.as_ptr(), written) };
            reservation::give_back(from, self.reserved);
        }
        self.start = start.cast();
        self.reserved = reserved;
        self.capacity = (reserved / std::mem::size_of::<N>().max(1)).min(self.wanted);
    }

    /// Asks for the next huge page once the nodes written come within [`AHEAD`] of it,
    /// growing the region first if it ends there.
    #[inline]
    fn ask_ahead(&mut self) {
        let written = self.len * std::mem::size_of::<N>();
        if written + AHEAD < self.asked || (self.asked >= self.reserved && !self.grow()) {
            return;
        }
        self.prefault = Some(Prefault {
            address: self.address() + self.asked,
        });
        self.asked += HUGE_PAGE;
    }
}

impl<N> std::ops::Deref for Region<N> {
    type Target = [N];

    #[inline]
    fn deref(&self) -> &[N] {
        // SAFETY: `[0, len)` is initialised and owned by the region (dangling and empty
        // before the first push).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<N> std::ops::DerefMut for Region<N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [N] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl<N> Drop for Region<N> {
    fn drop(&mut self) {
        // SAFETY: the slice is the initialised nodes, each dropped once here.
        unsafe { std::ptr::drop_in_place(&mut **self as *mut [N]) };
        if self.reserved > 0 {
            reservation::give_back(self.start.cast(), self.reserved);
        }
    }
}

/// Address space for a region: `mmap` on Unix, the allocator elsewhere.
#[cfg(unix)]
mod reservation {
    use super::HUGE_PAGE;
    use std::ptr::NonNull;

    /// A reservation of `bytes` (a whole number of huge pages, so that every unmap below
    /// is of whole pages), aligned to a huge page, or `None` if refused.
    pub(super) fn take(bytes: usize) -> Option<NonNull<u8>> {
        debug_assert_eq!(bytes % HUGE_PAGE, 0);
        let padded = bytes.checked_add(HUGE_PAGE)?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing
        // touches no existing memory.
        let mapped = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                padded,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            return None;
        }
        let mapped = mapped as usize;
        let start = mapped.next_multiple_of(HUGE_PAGE);
        let trimmed = unmap(mapped, start - mapped);
        let trimmed = unmap(start + bytes, mapped + padded - (start + bytes)) && trimmed;
        debug_assert!(trimmed, "a reservation's padding stays mapped");
        prefer_huge_pages(start, bytes);
        NonNull::new(start as *mut u8)
    }

    /// Returns a reservation made by [`take`].
    pub(super) fn give_back(start: NonNull<u8>, bytes: usize) -> bool {
        unmap(start.as_ptr() as usize, bytes)
    }

    /// Extends the reservation at `start` from `bytes` to `larger` where it stands, if the
    /// address space after it is free (Linux); whether it did.
    pub(super) fn extend(start: NonNull<u8>, bytes: usize, larger: usize) -> bool {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: this module's own reservation; without MREMAP_MAYMOVE it stays where
            // it is or the call fails, touching nothing.
            let extended = unsafe { libc::mremap(start.as_ptr().cast(), bytes, larger, 0) };
            if extended != libc::MAP_FAILED {
                prefer_huge_pages(start.as_ptr() as usize, larger);
                return true;
            }
        }
        let _ = (start, bytes, larger);
        false
    }

    /// Moves the pages of the first `bytes` of the reservation at `from` to the start of
    /// the larger one at `to`, the old one gone with them (Linux); whether it did.
    pub(super) fn move_pages(from: NonNull<u8>, bytes: usize, to: NonNull<u8>) -> bool {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: both are this module's own reservations, the new one at least `bytes`
            // long and unused; the old one is not referenced after the move.
            let moved = unsafe {
                libc::mremap(
                    from.as_ptr().cast(),
                    bytes,
                    bytes,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    to.as_ptr().cast::<libc::c_void>(),
                )
            };
            moved != libc::MAP_FAILED
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (from, bytes, to);
            false
        }
    }

    /// Unmaps whole pages of this module's own mappings; whether that succeeded.
    fn unmap(address: usize, bytes: usize) -> bool {
        // SAFETY: only ranges of this module's own mappings, no longer referenced, are
        // unmapped.
        bytes == 0 || unsafe { libc::munmap(address as *mut libc::c_void, bytes) } == 0
    }

    /// Asks for huge pages past the first: a small pool stays on small pages.
    fn prefer_huge_pages(start: usize, bytes: usize) {
        #[cfg(target_os = "linux")]
        if bytes > HUGE_PAGE {
            // SAFETY: advice on this module's own fresh mapping; it changes no contents.
            unsafe {
                libc::madvise(
                    (start + HUGE_PAGE) as *mut libc::c_void,
                    bytes - HUGE_PAGE,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (start, bytes);
    }
}

/// Address space for a region where there is no `mmap`: allocated outright, so kept small.
#[cfg(not(unix))]
mod reservation {
    use std::alloc::{alloc, dealloc, Layout};
    use std::ptr::NonNull;

    const MOST: usize = 64 << 20;

    fn layout(bytes: usize) -> Option<Layout> {
        Layout::from_size_align(bytes, 64).ok()
    }

    pub(super) fn take(bytes: usize) -> Option<NonNull<u8>> {
        // SAFETY: a layout of non-zero size.
        (bytes <= MOST).then(|| NonNull::new(unsafe { alloc(layout(bytes)?) }))??
    }

    pub(super) fn give_back(start: NonNull<u8>, bytes: usize) -> bool {
        // SAFETY: `start` came from `take(bytes)` with this layout.
        unsafe { dealloc(start.as_ptr(), layout(bytes).expect("taken with it")) };
        true
    }

    pub(super) fn extend(_start: NonNull<u8>, _bytes: usize, _larger: usize) -> bool {
        false
    }

    pub(super) fn move_pages(_from: NonNull<u8>, _bytes: usize, _to: NonNull<u8>) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of 4 KiB, so that a test fills huge pages with few pushes.
    type Page = [u64; 512];

    fn page(i: usize) -> Page {
        [i as u64; 512]
    }

    #[test]
    fn a_growing_region_moves_its_nodes_intact_and_stops_at_its_limit() {
        let mut region = Region::new(2000);
        let mut reservations = Vec::new();
        for i in 0..2000 {
            region.push(page(i)).unwrap();
            if reservations.last() != Some(&region.reserved) {
                reservations.push(region.reserved);
            }
        }
        let mib = 1 << 20;
        assert_eq!(
            reservations,
            [2 * mib, 4 * mib, 8 * mib],
            "doubled, cut to the limit"
        );
        assert!(region.iter().enumerate().all(|(i, node)| *node == page(i)));
        assert!(region.push(page(0)).is_err(), "a full region refuses");
    }

    #[test]
    fn reservations_are_whole_huge_pages_given_back_whole() {
        let start = reservation::take(3 * HUGE_PAGE).unwrap();
        assert_eq!(start.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(reservation::give_back(start, 3 * HUGE_PAGE));
        let odd_nodes = Region::<[u8; 48]>::new(5_592_405); // 256 MiB less 16 bytes
        assert_eq!(odd_nodes.reserved % HUGE_PAGE, 0);
    }

    #[test]
    fn prefaults_cover_every_huge_page_past_the_first_once_ahead_of_its_nodes() {
        let pages = 5 * HUGE_PAGE / 4096;
        let mut region = Region::new(pages);
        let mut asked = Vec::new();
        for i in 0..pages {
            region.push(page(i)).unwrap();
            if let Some(prefault) = region.take_prefault() {
                let written = (i + 1) * 4096;
                let ahead = prefault.address - region.address();
                assert!(
                    ahead > written && ahead - written <= AHEAD,
                    "{ahead} at {written}"
                );
                asked.push(ahead);
                prefault.run();
            }
        }
        let expected: Vec<_> = (1..5).map(|page| page * HUGE_PAGE).collect();
        assert_eq!(asked, expected);
    }

    #[test]
    fn a_small_region_asks_for_nothing_ahead() {
        let mut region = Region::new(1000);
        for i in 0..1000u64 {
            region.push(i).unwrap();
            assert!(region.take_prefault().is_none());
        }
    }

    #[test]
    fn a_region_that_cannot_grow_refuses_cheaply_then_tries_again() {
        let mut region = Region::new(usize::MAX);
        region.push(page(0)).unwrap();
        region.reserved = isize::MAX as usize / 4 / 4096 * 4096; // no larger one exists
        region.capacity = region.len;
        assert!(region.push(page(1)).is_err());
        assert_eq!(region.refusals_left, RETRY_AFTER);
        for _ in 0..RETRY_AFTER {
            assert!(region.push(page(1)).is_err());
        }
        assert_eq!(region.refusals_left, 0, "the next push tries again");
        region.reserved = HUGE_PAGE; // as it was, so that dropping gives it back whole
    }

    #[test]
    fn every_node_written_is_dropped_once_with_the_region() {
        use std::rc::Rc;
        let counted = Rc::new(());
        let mut region = Region::new(100);
        for _ in 0..100 {
            region.push(Rc::clone(&counted)).unwrap();
        }
        assert!(region.push(Rc::clone(&counted)).is_err());
        assert_eq!(Rc::strong_count(&counted), 101);
        drop(region);
        assert_eq!(Rc::strong_count(&counted), 1);
    }

    #[test]
    fn a_region_of_no_nodes_refuses_the_first() {
        let mut region = Region::<u64>::new(0);
        assert_eq!(region.push(1), Err(1));
    }
}
