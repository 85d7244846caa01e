//! The sized structs of the C ABI with arbitrary sizes and bytes (the `arbitrary` crate):
//! `tw_config` through `tw_config_check` and `tw_create`, `tw_stats` through `tw_get_stats`
//! and `tw_get_stats_recent`, and the `tw_timer_info` that `tw_export` fills.
//!
//! Each struct lives in an allocation of exactly the bytes its size says (the layout of
//! 0.2.0 for a size of 0; the size field at least), so that AddressSanitizer sees a read
//! past them; a struct the library writes is followed by canary bytes, so that a write past
//! its size is seen on stable too. Every call returns a clear status and never crashes; a
//! config is refused by `tw_create` exactly when `tw_config_check` refuses it, and then
//! nothing changes (`*out` untouched); the library never writes the caller's config;
//! `tw_get_stats*` write whole fields only, no byte past the size (and store it), and
//! nothing at all when they refuse. Shared by the fuzz target `sized_structs` and its
//! stable replay.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::Cell;
use std::ffi::c_void;
use std::mem::offset_of;
use std::ptr;

use arbitrary::{Arbitrary, Unstructured};
use timerwheel::{
    tw_add, tw_advance, tw_clock, tw_config, tw_config_check, tw_config_init, tw_create,
    tw_destroy, tw_export, tw_get_stats, tw_get_stats_recent, tw_now_ms, tw_stats, tw_status,
    tw_timer_id, tw_timer_info, tw_wheel,
};

const SIZE_FIELD: usize = size_of::<usize>();
/// The layouts a size of 0 stands for (0.2.0's, docs/c.md "ABI policy").
const CONFIG_FIRST_SIZE: usize = offset_of!(tw_config, virtual_start_unix_ms) + size_of::<i64>();
const STATS_FIRST_SIZE: usize = offset_of!(tw_stats, callback_panics) + size_of::<u64>();
/// Bytes a caller's struct may have past this library's in a scenario.
const MAX_EXTRA: usize = 64;
/// Bytes after a struct the library writes, which must stay as they were.
const CANARY: usize = 32;
const CANARY_BYTE: u8 = 0xA5;
/// Most timers, and most stats calls, of one scenario.
const MAX_TIMERS: u8 = 16;
const MAX_STATS_CALLS: usize = 16;

/// A caller's size: 0, too small for the size field, or anything up to past this
/// library's struct.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Size {
    Zero,
    Exact,
    Any(u16),
}

impl Size {
    fn bytes(self, ours: usize) -> usize {
        match self {
            Size::Zero => 0,
            Size::Exact => ours,
            Size::Any(n) => usize::from(n) % (ours + MAX_EXTRA + 1),
        }
    }
}

/// A config's bytes past its size field: `tw_config_init`'s on a virtual clock with some
/// bytes changed (mostly accepted), or raw bytes (mostly refused).
#[derive(Arbitrary, Debug)]
enum ConfigBytes {
    Init { patches: Vec<(u8, u8)> },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Window {
    InRange(u16),
    Any(u64),
}

impl Window {
    fn ms(self) -> u64 {
        match self {
            Window::InRange(n) => 1_000 + u64::from(n) % 59_001,
            Window::Any(n) => n,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct StatsCall {
    size: Size,
    /// What the struct holds before the call, past its size field.
    fill: u8,
    recent: Option<Window>,
}

#[derive(Arbitrary, Debug)]
struct Scenario {
    config_size: Size,
    config: ConfigBytes,
    timers: u8,
    advance_ms: u16,
    stats: Vec<StatsCall>,
}

/// Zeroed bytes, aligned for the structs, of exactly the length asked for, and then
/// `canary` bytes of `CANARY_BYTE`.
struct Buffer {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
}

impl Buffer {
    fn new(len: usize, canary: usize) -> Buffer {
        let layout = Layout::from_size_align(len + canary, 8).expect("a small layout");
        // SAFETY: the layout is never empty: `len` holds the size field at least.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        let mut buffer = Buffer { ptr, len, layout };
        buffer.bytes_mut()[len..].fill(CANARY_BYTE);
        buffer
    }

    /// The struct's bytes and the canary after them.
    fn bytes(&self) -> &[u8] {
        // SAFETY: the allocation holds `layout.size()` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `self` is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    fn set_size_field(&mut self, size: usize) {
        self.bytes_mut()[..SIZE_FIELD].copy_from_slice(&size.to_ne_bytes());
    }

    /// `tw_config.store_path`, where the buffer holds it, NULL: a pointer of arbitrary bytes
    /// is not a C caller's mistake the library can see, only a crash (a NULL path is
    /// refused when durability asks for one).
    fn set_store_path_null(&mut self) {
        let at = offset_of!(tw_config, store_path);
        let width = size_of::<*const std::ffi::c_char>();
        if let Some(field) = self.bytes_mut().get_mut(at..at + width) {
            field.fill(0);
        }
    }

    fn size_field(&self) -> usize {
        usize::from_ne_bytes(self.bytes()[..SIZE_FIELD].try_into().expect("8 bytes"))
    }

    fn field<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let bytes = self.bytes().get(offset..offset + N)?;
        (offset + N <= self.len).then(|| bytes.try_into().expect("N bytes"))
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// The bytes a struct of `size` takes: the 0.2.0 layout for 0, the size field at least.
fn allocation(size: usize, first_size: usize) -> usize {
    match size {
        0 => first_size,
        size => size.max(SIZE_FIELD),
    }
}

fn config_buffer(size: Size, bytes: &ConfigBytes) -> Buffer {
    let size = size.bytes(size_of::<tw_config>());
    let mut buffer = Buffer::new(allocation(size, CONFIG_FIRST_SIZE), 0);
    // SAFETY: tw_config is numbers and a pointer, all valid zeroed; tw_config_init fills every field.
    let mut init: tw_config = unsafe { std::mem::zeroed() };
    // SAFETY: `init` is a local tw_config.
    unsafe { tw_config_init(&mut init) };
    init.clock = tw_clock::TW_CLOCK_VIRTUAL as u32;
    // SAFETY: tw_config is repr(C) without padding: integers and one pointer (store_path,
    // NULL here).
    let init_bytes = unsafe {
        std::slice::from_raw_parts(ptr::from_ref(&init).cast::<u8>(), size_of::<tw_config>())
    };
    let len = buffer.len;
    let body = &mut buffer.bytes_mut()[SIZE_FIELD..len];
    match bytes {
        ConfigBytes::Init { patches } => {
            let known = body.len().min(init_bytes.len() - SIZE_FIELD);
            body[..known].copy_from_slice(&init_bytes[SIZE_FIELD..SIZE_FIELD + known]);
            for &(at, value) in patches {
                if let Some(byte) = body.get_mut(usize::from(at)) {
                    *byte = value;
                }
            }
        }
        ConfigBytes::Raw(raw) => body.iter_mut().zip(raw).for_each(|(b, r)| *b = *r),
    }
    buffer.set_size_field(size);
    buffer.set_store_path_null();
    buffer
}

/// Whether the wheel `buffer` configures starts no thread: a virtual clock or `manual`, as
/// far as the size covers them (the fields past it take their defaults: neither).
fn starts_no_thread(buffer: &Buffer) -> bool {
    let size = match buffer.size_field() {
        0 => CONFIG_FIRST_SIZE,
        size => size,
    };
    let covered = |offset: usize| offset + 4 <= size;
    let u32_at = |offset: usize| buffer.field::<4>(offset).map(u32::from_ne_bytes);
    let clock = offset_of!(tw_config, clock);
    let manual = offset_of!(tw_config, manual);
    (covered(clock) && u32_at(clock) == Some(tw_clock::TW_CLOCK_VIRTUAL as u32))
        || (covered(manual) && u32_at(manual).is_some_and(|m| m != 0))
}

/// `tw_config_check` and, for a wheel without threads, `tw_create` with the scenario's
/// config: they agree, a refusal leaves `*out` alone, the config's bytes stay as they were.
/// The wheel created, if any.
fn create(scenario: &Scenario) -> Option<*mut tw_wheel> {
    let buffer = config_buffer(scenario.config_size, &scenario.config);
    let before = buffer.bytes().to_vec();
    let cfg = buffer.ptr.cast::<tw_config>();
    // SAFETY: `cfg` is readable for the bytes its size says (or the 0.2.0 layout for 0).
    let refused = !unsafe { tw_config_check(cfg) }.is_null();
    let size = buffer.size_field();
    if (1..SIZE_FIELD).contains(&size) {
        assert!(refused, "a size of {size} cannot hold the size field");
    }
    let extra = buffer.bytes().get(size_of::<tw_config>()..buffer.len);
    if extra.is_some_and(|extra| extra.iter().any(|&b| b != 0)) {
        assert!(refused, "a byte this library does not know is set");
    }
    let wheel = starts_no_thread(&buffer).then(|| {
        let untouched = ptr::NonNull::<tw_wheel>::dangling().as_ptr();
        let mut out = untouched;
        // SAFETY: as for tw_config_check; `out` is a local.
        let status = unsafe { tw_create(cfg, &mut out) };
        if refused {
            assert_eq!(
                status,
                tw_status::TW_ERR_INVALID,
                "check refused, create did not"
            );
            assert_eq!(out, untouched, "a refused config wrote *out");
            None
        } else {
            assert_eq!(status, tw_status::TW_OK, "check accepted, create did not");
            assert!(!out.is_null() && out != untouched);
            Some(out)
        }
    });
    assert_eq!(
        buffer.bytes(),
        &before[..],
        "the library wrote the caller's config"
    );
    // SAFETY: `out` NULL is refused without reading `cfg` further than tw_create does.
    let status = unsafe { tw_create(cfg, ptr::null_mut()) };
    assert_eq!(status, tw_status::TW_ERR_INVALID, "out NULL");
    if let Some(Some(wheel)) = wheel {
        check_virtual_start(&buffer, wheel);
    }
    wheel.flatten()
}

/// A virtual wheel's clock starts at the config's `virtual_start_unix_ms` (0 when the size
/// does not cover it).
fn check_virtual_start(buffer: &Buffer, wheel: *mut tw_wheel) {
    let offset = offset_of!(tw_config, virtual_start_unix_ms);
    let size = allocation(buffer.size_field(), CONFIG_FIRST_SIZE);
    let clock = offset_of!(tw_config, clock);
    let virtual_clock =
        buffer.field::<4>(clock).map(u32::from_ne_bytes) == Some(tw_clock::TW_CLOCK_VIRTUAL as u32);
    if !virtual_clock || clock + 4 > size {
        return;
    }
    let start = match buffer.field::<8>(offset).filter(|_| offset + 8 <= size) {
        Some(bytes) => i64::from_ne_bytes(bytes),
        None => 0,
    };
    // SAFETY: a live wheel.
    assert_eq!(
        unsafe { tw_now_ms(wheel) },
        start,
        "the virtual clock's start: {:?}",
        buffer.bytes()
    );
}

unsafe extern "C" fn never_runs(_: u64, _: *mut c_void) {}

/// A virtual wheel with `count` timers, a second and more away, none run by `advance_ms`.
fn virtual_wheel(count: u8, advance_ms: u16) -> *mut tw_wheel {
    // SAFETY: tw_config is numbers and a pointer, all valid zeroed; tw_config_init fills every field.
    let mut cfg: tw_config = unsafe { std::mem::zeroed() };
    let mut wheel = ptr::null_mut();
    // SAFETY: `cfg` and `wheel` are locals.
    unsafe {
        tw_config_init(&mut cfg);
        cfg.clock = tw_clock::TW_CLOCK_VIRTUAL as u32;
        assert_eq!(tw_create(&cfg, &mut wheel), tw_status::TW_OK);
    }
    for n in 0..count {
        let mut id: tw_timer_id = 0;
        let delay = 70_000 + u64::from(n);
        // SAFETY: a live wheel; the callback ignores its argument; `id` is a local.
        let status = unsafe {
            tw_add(
                wheel,
                delay,
                Some(never_runs),
                ptr::null_mut(),
                None,
                &mut id,
            )
        };
        assert_eq!(status, tw_status::TW_OK);
    }
    let mut ran = 0;
    // SAFETY: a live wheel; `ran` is a local.
    assert_eq!(
        unsafe { tw_advance(wheel, u64::from(advance_ms), &mut ran) },
        tw_status::TW_OK
    );
    assert_eq!(ran, 0);
    wheel
}

/// One `tw_get_stats` or `tw_get_stats_recent` with the call's size and bytes.
fn stats(wheel: *mut tw_wheel, call: StatsCall, timers: u8) {
    let size = call.size.bytes(size_of::<tw_stats>());
    let len = allocation(size, STATS_FIRST_SIZE);
    let mut buffer = Buffer::new(len, CANARY);
    buffer.bytes_mut()[SIZE_FIELD..len].fill(call.fill);
    buffer.set_size_field(size);
    let before = buffer.bytes().to_vec();
    let out = buffer.ptr.cast::<tw_stats>();
    // SAFETY: `out` is writable for the bytes its size says (0.2.0's for 0).
    let status = unsafe {
        match call.recent {
            None => tw_get_stats(wheel, out),
            Some(window) => tw_get_stats_recent(wheel, window.ms(), out),
        }
    };
    let window_ok = call
        .recent
        .is_none_or(|w| (1_000..=60_000).contains(&w.ms()));
    if (1..SIZE_FIELD).contains(&size) || !window_ok {
        assert_eq!(
            status,
            tw_status::TW_ERR_INVALID,
            "size {size}, {:?}",
            call.recent
        );
        assert_eq!(buffer.bytes(), &before[..], "a refused call wrote");
        return;
    }
    assert_eq!(status, tw_status::TW_OK, "size {size}");
    let asked = if size == 0 { STATS_FIRST_SIZE } else { size };
    let whole = SIZE_FIELD + (asked.min(size_of::<tw_stats>()) - SIZE_FIELD) / 8 * 8;
    assert_eq!(buffer.size_field(), whole, "the bytes written, of {asked}");
    assert_eq!(
        buffer.bytes()[whole..],
        before[whole..],
        "a write past {whole} bytes"
    );
    let u64_at = |offset: usize| buffer.field::<8>(offset).map(u64::from_ne_bytes);
    let timers = u64::from(timers);
    let pending = u64_at(offset_of!(tw_stats, pending)).filter(|_| whole > SIZE_FIELD);
    assert!(
        pending.is_none_or(|p| p == timers),
        "pending {pending:?} of {timers}"
    );
    if call.recent.is_none() {
        let added = u64_at(offset_of!(tw_stats, added)).filter(|_| whole >= 24);
        assert!(
            added.is_none_or(|a| a == timers),
            "added {added:?} of {timers}"
        );
    }
}

thread_local! {
    static EXPORTED: Cell<u64> = const { Cell::new(0) };
}

unsafe extern "C" fn check_info(_: *mut c_void, info: *const tw_timer_info) {
    // SAFETY: tw_export passes a valid tw_timer_info for the call.
    let info = unsafe { &*info };
    assert_eq!(
        info.size,
        size_of::<tw_timer_info>(),
        "the size of tw_timer_info"
    );
    assert_ne!(info.id, 0);
    EXPORTED.set(EXPORTED.get() + 1);
}

/// `tw_export` hands each timer in a `tw_timer_info` of this library's size.
fn export(wheel: *mut tw_wheel, timers: u8) {
    EXPORTED.set(0);
    let mut running = usize::MAX;
    // SAFETY: a live wheel; the function reads only its info; `running` is a local.
    let status = unsafe { tw_export(wheel, Some(check_info), ptr::null_mut(), &mut running) };
    assert_eq!(status, tw_status::TW_OK);
    assert_eq!((EXPORTED.get(), running), (u64::from(timers), 0));
}

/// Decodes `data` into a scenario and runs it; panics on any broken invariant.
pub fn run(data: &[u8]) {
    let Ok(scenario) = Scenario::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if let Some(wheel) = create(&scenario) {
        // SAFETY: a wheel created here, destroyed once.
        assert_eq!(unsafe { tw_destroy(wheel) }, tw_status::TW_OK);
    }
    let timers = scenario.timers % (MAX_TIMERS + 1);
    let wheel = virtual_wheel(timers, scenario.advance_ms);
    for &call in scenario.stats.iter().take(MAX_STATS_CALLS) {
        stats(wheel, call, timers);
    }
    // SAFETY: stats refuse a NULL wheel or struct without touching anything.
    unsafe {
        let mut s: tw_stats = std::mem::zeroed();
        s.size = size_of::<tw_stats>();
        assert_eq!(tw_get_stats(ptr::null(), &mut s), tw_status::TW_ERR_INVALID);
        assert_eq!(
            tw_get_stats(wheel, ptr::null_mut()),
            tw_status::TW_ERR_INVALID
        );
    }
    export(wheel, timers);
    // SAFETY: the wheel made above, destroyed once.
    assert_eq!(unsafe { tw_destroy(wheel) }, tw_status::TW_OK);
}
