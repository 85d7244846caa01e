//! Where a pool's nodes live: a reservation of address space, filled from its start.
//!
//! - **Moved only past 256 MiB.** The first reservation, made at the first node, holds
//!   256 MiB of nodes (or the pool's limit, if less); nodes stay at one address until a
//!   pool outgrows it. Then a reservation twice as large is taken and the pages are moved
//!   over (`mremap`: page tables, not bytes). So growing copies nothing, and an address
//!   taken once (a prefetch ahead of a lock) stays right for almost every wheel.
//! - **Paid for as used.** A reservation is address space only (`MAP_NORESERVE`); memory
//!   is taken a page at a time as nodes are first written. Where the system refuses a
//!   reservation that large, a smaller one is taken.
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
/// threads may take while a prefault runs (4,681 nodes of 56 bytes), and no more than
/// that, as memory asked for ahead is held whether or not nodes ever reach it.
const AHEAD: usize = 256 << 10;
/// Bytes of a pool's first reservation, at most.
const FIRST_RESERVATION: usize = 256 << 20;

/// Memory of a pool to fault in ahead of its first use: run it outside the lock that guards
/// the pool. Running it changes no byte of memory (a page already present stays as it is),
/// so it is harmless whenever it runs, even after the pool moved or is gone.
#[derive(Debug)]
#[must_use = "the memory is faulted in only when the prefault runs"]
pub struct Prefault {
    address: usize,
    bytes: usize,
}

impl Prefault {
    /// Faults the memory in (`MADV_POPULATE_WRITE`; nothing where the kernel lacks it).
    pub fn run(self) {
        #[cfg(target_os = "linux")]
        // SAFETY: MADV_POPULATE_WRITE only faults pages in, as a write would, without
        // writing: no byte changes, so no memory anyone holds is disturbed. A range that is
        // no longer mapped gets ENOMEM, which is ignored.
        unsafe {
            libc::madvise(
                self.address as *mut libc::c_void,
                self.bytes,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
}

/// Nodes of type `N` in one fixed reservation: the initialised ones are `[0, len)`.
pub(super) struct Region<N> {
    start: NonNull<N>,
    len: usize,
    /// Nodes the reservation holds: 0 until the first push reserves it.
    capacity: usize,
    /// Nodes the region may grow to.
    wanted: usize,
    /// Bytes of the first reservation, at most.
    first_reservation: usize,
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
        Self::with_first_reservation(wanted, FIRST_RESERVATION)
    }

    fn with_first_reservation(wanted: usize, first_reservation: usize) -> Self {
        Region {
            start: NonNull::dangling(),
            len: 0,
            capacity: 0,
            wanted,
            first_reservation,
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

    /// Takes a reservation at the first push, a twice larger one (the nodes moved over) at
    /// a later one; false when the region holds all it may, or no larger reservation could
    /// be had.
    #[cold]
    fn grow(&mut self) -> bool {
        let size = std::mem::size_of::<N>().max(1);
        let most = self.wanted.min(isize::MAX as usize / size / 2);
        let mut nodes = match self.capacity {
            0 => most.min(self.first_reservation / size).max(1),
            capacity => most.min(capacity * 2),
        };
        while nodes > self.capacity && nodes <= most {
            if let Some(start) = reservation::take(nodes * size) {
                if self.capacity > 0 {
                    reservation::move_into(self.start.cast(), self.capacity * size, start);
                }
                self.start = start.cast();
                self.capacity = nodes;
                return true;
            }
            nodes = self.capacity + (nodes - self.capacity) / 2;
        }
        false
    }

    /// Asks for the next huge page once the nodes written come within [`AHEAD`] of it.
    #[inline]
    fn ask_ahead(&mut self) {
        let written = self.len * std::mem::size_of::<N>();
        if written + AHEAD < self.asked {
            return;
        }
        let reserved = self.capacity * std::mem::size_of::<N>();
        if self.asked < reserved {
            self.prefault = Some(Prefault {
                address: self.address() + self.asked,
                bytes: HUGE_PAGE.min(reserved - self.asked),
            });
        }
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
        if self.capacity > 0 {
            let bytes = self.capacity * std::mem::size_of::<N>().max(1);
            reservation::give_back(self.start.cast(), bytes);
        }
    }
}

/// Address space for a region: `mmap` on Unix, the allocator elsewhere.
#[cfg(unix)]
mod reservation {
    use super::HUGE_PAGE;
    use std::ptr::NonNull;

    /// A reservation of at least `bytes`, aligned to a huge page, or `None` if refused.
    pub(super) fn take(bytes: usize) -> Option<NonNull<u8>> {
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
        unmap(mapped, start - mapped);
        unmap(start + bytes, mapped + padded - (start + bytes));
        prefer_huge_pages(start, bytes);
        NonNull::new(start as *mut u8)
    }

    /// Returns a reservation made by [`take`].
    pub(super) fn give_back(start: NonNull<u8>, bytes: usize) {
        unmap(start.as_ptr() as usize, bytes);
    }

    /// Moves the first `bytes` of the reservation at `from` to the start of the larger one
    /// at `to`, and gives the old one back.
    pub(super) fn move_into(from: NonNull<u8>, bytes: usize, to: NonNull<u8>) {
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
            if moved != libc::MAP_FAILED {
                return;
            }
        }
        // SAFETY: two distinct reservations of this module, each at least `bytes` long.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to.as_ptr(), bytes) };
        give_back(from, bytes);
    }

    fn unmap(address: usize, bytes: usize) {
        if bytes > 0 {
            // SAFETY: only ranges of this module's own mappings, no longer referenced, are
            // unmapped.
            unsafe { libc::munmap(address as *mut libc::c_void, bytes) };
        }
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

    pub(super) fn give_back(start: NonNull<u8>, bytes: usize) {
        // SAFETY: `start` came from `take(bytes)` with this layout.
        unsafe { dealloc(start.as_ptr(), layout(bytes).expect("taken with it")) };
    }

    pub(super) fn move_into(from: NonNull<u8>, bytes: usize, to: NonNull<u8>) {
        // SAFETY: two distinct allocations of this module, each at least `bytes` long.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to.as_ptr(), bytes) };
        give_back(from, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_stay_where_they_were_written_as_the_region_fills() {
        let mut region = Region::new(1 << 20);
        region.push(7u64).unwrap();
        let first = &region[0] as *const u64;
        for i in 0..(1 << 20) - 1 {
            region.push(i).unwrap();
        }
        assert_eq!(&region[0] as *const u64, first);
        assert_eq!(region.push(0), Err(0), "a full region refuses");
        assert_eq!(region.len(), 1 << 20);
    }

    #[test]
    fn a_region_that_outgrows_its_reservation_moves_its_nodes_intact() {
        let mut region = Region::with_first_reservation(10_000, 1 << 12);
        for i in 0..10_000u64 {
            region.push(i).unwrap();
            if i == 511 {
                assert_eq!(region.capacity, 512, "the first reservation is 4 KiB");
            }
        }
        assert_eq!(
            region.capacity, 10_000,
            "doubled, then cut to what it may hold"
        );
        assert!(region.iter().copied().eq(0..10_000));
        assert_eq!(region.push(0), Err(0));
    }

    #[test]
    fn prefaults_cover_every_huge_page_past_the_first_once_ahead_of_its_nodes() {
        let mut region = Region::new(5 * HUGE_PAGE / 64);
        let mut asked = Vec::new();
        for i in 0..5 * HUGE_PAGE / 64 {
            region.push([0u8; 64]).unwrap();
            if let Some(prefault) = region.take_prefault() {
                let written = (i + 1) * 64;
                let ahead = prefault.address - region.address();
                assert!(
                    ahead > written && ahead - written <= AHEAD,
                    "{ahead} at {written}"
                );
                asked.push((ahead, prefault.bytes));
                prefault.run();
            }
        }
        let pages: Vec<_> = (1..5).map(|page| (page * HUGE_PAGE, HUGE_PAGE)).collect();
        assert_eq!(asked, pages);
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
