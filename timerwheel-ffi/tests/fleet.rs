//! The fleet through the C ABI (tw_fleet_*), called as a C program calls it, against a
//! private PostgreSQL (one cluster for the file: `fleet_against_postgres` runs its parts in
//! order on it).

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use timerwheel::fleet::*;
use timerwheel::{tw_missed_points, tw_status, TW_ACK_LATER, TW_DURABLE_REPLACE};
use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::{add_timer, create_schema, shard_of, ConnectOptions, NewTimer};

/// What a handler was given: the token (its name copied) and the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fired {
    key: u64,
    name: String,
    occurrence_unix_ms: i64,
    version: i64,
    shard: i32,
    epoch: i64,
    payload: Vec<u8>,
}

impl Fired {
    /// The token to acknowledge it with (`name` must outlive it).
    fn token(&self, name: &CStr) -> tw_fleet_token {
        tw_fleet_token {
            key: self.key,
            name: name.as_ptr(),
            occurrence_unix_ms: self.occurrence_unix_ms,
            version: self.version,
            shard: self.shard,
            epoch: self.epoch,
        }
    }
}

/// A handler that records its fires in the `Mutex<Vec<Fired>>` at `ctx` and leaves the ack
/// to the test.
unsafe extern "C" fn record(
    token: *const tw_fleet_token,
    payload: *const c_void,
    len: usize,
    ctx: *mut c_void,
) -> i32 {
    // SAFETY: the library passes a valid token and payload for the call; `ctx` is the
    // test's Mutex, alive until the node is destroyed.
    let (token, fired) = unsafe { (&*token, &*ctx.cast::<Mutex<Vec<Fired>>>()) };
    let payload = match len {
        0 => Vec::new(),
        // SAFETY: valid for `len` bytes during the call.
        _ => unsafe { std::slice::from_raw_parts(payload.cast::<u8>(), len) }.to_vec(),
    };
    fired.lock().unwrap().push(Fired {
        key: token.key,
        // SAFETY: NUL-terminated, valid during the call.
        name: unsafe { CStr::from_ptr(token.name) }
            .to_str()
            .unwrap()
            .to_owned(),
        occurrence_unix_ms: token.occurrence_unix_ms,
        version: token.version,
        shard: token.shard,
        epoch: token.epoch,
        payload,
    });
    TW_ACK_LATER
}

/// A node (created, its handler `charge` recording into `fired`), not joined.
fn node(settings: Option<&tw_fleet_settings>, fired: &Mutex<Vec<Fired>>) -> *mut tw_fleet {
    let mut f = ptr::null_mut();
    let settings = settings.map_or(ptr::null(), ptr::from_ref);
    // SAFETY: valid arguments, as C passes them.
    unsafe {
        assert_eq!(tw_fleet_create(settings, &mut f), tw_status::TW_OK);
        let ctx = ptr::from_ref(fired).cast_mut().cast();
        let name = c"charge".as_ptr();
        assert_eq!(
            tw_fleet_handler_register(f, name, Some(record), ctx),
            tw_status::TW_OK
        );
    }
    f
}

/// Short leases and a fast poll: the tests stay short.
fn quick() -> tw_fleet_settings {
    let mut s = std::mem::MaybeUninit::uninit();
    // SAFETY: writable for one tw_fleet_settings.
    let mut s = unsafe {
        tw_fleet_settings_init(s.as_mut_ptr());
        s.assume_init()
    };
    s.ttl_ms = 2_000;
    s.window_ms = 10_000;
    s.poll_ms = 100;
    s
}

fn join(f: *mut tw_fleet, conninfo: &str, name: &CStr) -> tw_status {
    let conninfo = CString::new(conninfo).unwrap();
    // SAFETY: a live node and NUL-terminated strings.
    unsafe { tw_fleet_join(f, conninfo.as_ptr(), name.as_ptr()) }
}

/// tw_fleet_error's message.
fn error(f: *const tw_fleet) -> String {
    let mut buf = [0 as c_char; 1024];
    // SAFETY: a live node and a buffer of its length.
    let status = unsafe { tw_fleet_error(f, buf.as_mut_ptr(), buf.len(), ptr::null_mut()) };
    assert_eq!(status, tw_status::TW_OK);
    // SAFETY: tw_fleet_error wrote a NUL-terminated string.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

fn add(f: *mut tw_fleet, key: u64, name: &CStr, payload: &[u8], due_ms: i64) -> tw_status {
    // SAFETY: a live node, a NUL-terminated name and a payload of its length.
    unsafe {
        tw_fleet_add(
            f,
            key,
            name.as_ptr(),
            payload.as_ptr().cast(),
            payload.len(),
            due_ms,
            0,
            0,
        )
    }
}

fn destroy(f: *mut tw_fleet) {
    // SAFETY: a live node, used no more.
    assert_eq!(unsafe { tw_fleet_destroy(f) }, tw_status::TW_OK);
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Waits (generously: the machine is loaded) until `fired` holds `n` fires.
fn wait_for(fired: &Mutex<Vec<Fired>>, n: usize) -> Vec<Fired> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while fired.lock().unwrap().len() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    fired.lock().unwrap().clone()
}

fn sql(server: &TestServer, statement: &str) -> i64 {
    let mut client = ConnectOptions::parse(&server.conninfo())
        .and_then(|o| o.connect())
        .unwrap();
    client
        .query_opt(statement, &[])
        .unwrap()
        .map_or(0, |row| row.get(0))
}

const SHARDS: i32 = 4;

#[test]
fn fleet_against_postgres() {
    let server = TestServer::start();
    let conninfo = server.conninfo();
    let mut client = ConnectOptions::parse(&conninfo)
        .and_then(|o| o.connect())
        .unwrap();
    create_schema(&mut client, SHARDS).unwrap();
    a_timer_added_through_c_fires_once_with_its_token(&server);
    an_ack_after_another_node_took_the_shard_is_fenced(&server);
    a_database_without_the_schema_is_refused_clearly(&server);
    a_handler_acks_but_cannot_leave_its_own_node(&server);
    a_handler_run_by_the_join_may_call_its_node(&server);
    changes_wait_in_a_bounded_buffer_while_postgres_is_down(&server);
    missed_points_coalesce_into_the_latest_when_asked(&server);
}

fn a_timer_added_through_c_fires_once_with_its_token(server: &TestServer) {
    let fired = Mutex::new(Vec::new());
    let settings = quick();
    let f = node(Some(&settings), &fired);
    assert_eq!(join(f, &server.conninfo(), c"a"), tw_status::TW_OK);
    // A second add of a pending (key, name) is refused: checked on a timer an hour away, as
    // one due soon may have fired (and ended) before the second add, which then adds anew.
    let later = now_ms() + 3_600_000;
    assert_eq!(add(f, 70, c"charge", b"cents=25", later), tw_status::TW_OK);
    assert_eq!(
        add(f, 70, c"charge", b"again", later),
        tw_status::TW_ERR_EXISTS,
        "{}",
        error(f)
    );
    // SAFETY: a live node, a name that lives.
    let deleted = unsafe { tw_fleet_delete(f, 70, c"charge".as_ptr()) };
    assert_eq!(deleted, tw_status::TW_OK, "{}", error(f));
    let due = now_ms() + 300;
    assert_eq!(add(f, 7, c"charge", b"cents=25", due), tw_status::TW_OK);
    let got = wait_for(&fired, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    let fire = &got[0];
    let epoch = sql(
        server,
        &format!(
            "SELECT epoch FROM tw_fleet_shards WHERE shard = {}",
            fire.shard
        ),
    );
    assert_eq!(
        (fire.key, fire.name.as_str(), fire.occurrence_unix_ms),
        (7, "charge", due)
    );
    assert_eq!(fire.payload, b"cents=25");
    assert_eq!(fire.shard, shard_of(7, SHARDS));
    assert!(
        fire.epoch > 0 && fire.epoch == epoch,
        "{fire:?} epoch {epoch}"
    );
    assert!(now_ms() >= due, "never early");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(fired.lock().unwrap().len(), 1, "fired once");

    let name = CString::new(fire.name.clone()).unwrap();
    let tokens = [fire.token(&name)];
    let mut acked = 0;
    // SAFETY: a live node, one token whose name lives, a writable count.
    let status = unsafe { tw_fleet_ack(f, tokens.as_ptr(), 1, &mut acked) };
    assert_eq!((status, acked), (tw_status::TW_OK, 1), "{}", error(f));
    let unacked = sql(server, "SELECT count(*) FROM tw_fleet_fires WHERE key = 7");
    assert_eq!(unacked, 0);
    // SAFETY: a live node.
    assert_eq!(unsafe { tw_fleet_leave(f) }, tw_status::TW_OK);
    assert_eq!(
        add(f, 8, c"charge", b"", now_ms()),
        tw_status::TW_ERR_SHUTDOWN
    );
    destroy(f);
}

fn an_ack_after_another_node_took_the_shard_is_fenced(server: &TestServer) {
    let fired = Mutex::new(Vec::new());
    let f = node(Some(&quick()), &fired);
    assert_eq!(join(f, &server.conninfo(), c"a"), tw_status::TW_OK);
    assert_eq!(add(f, 9, c"charge", b"x", now_ms()), tw_status::TW_OK);
    let fire = wait_for(&fired, 1).pop().expect("a fire");
    // Another node takes the shard: the lease row moves to it under the next epoch, as an
    // acquisition after this node's lease expired would.
    sql(
        server,
        &format!(
            "UPDATE tw_fleet_shards SET owner = 'b', epoch = epoch + 1, \
             lease_until = now() + interval '1 hour' WHERE shard = {}",
            fire.shard
        ),
    );
    let name = CString::new(fire.name.clone()).unwrap();
    let tokens = [fire.token(&name)];
    let mut acked = usize::MAX;
    // SAFETY: a live node, one token whose name lives, a writable count.
    let status = unsafe { tw_fleet_ack(f, tokens.as_ptr(), 1, &mut acked) };
    assert_eq!(status, tw_status::TW_ERR_FENCED, "{}", error(f));
    assert_eq!(acked, usize::MAX, "no count on a refusal");
    assert!(
        error(f).contains(&format!("shard {}", fire.shard)),
        "{}",
        error(f)
    );
    let unacked = sql(server, "SELECT count(*) FROM tw_fleet_fires WHERE key = 9");
    assert_eq!(unacked, 1, "the fire stays for the shard's new owner");
    destroy(f);
    sql(
        server,
        "UPDATE tw_fleet_shards SET owner = NULL, lease_until = '-infinity'",
    );
}

fn a_database_without_the_schema_is_refused_clearly(server: &TestServer) {
    sql(server, "CREATE DATABASE empty");
    let fired = Mutex::new(Vec::new());
    let f = node(Some(&quick()), &fired);
    let conninfo = format!(
        "host=127.0.0.1 port={} user=timerwheel dbname=empty",
        server.port()
    );
    assert_eq!(join(f, &conninfo, c"a"), tw_status::TW_ERR_STORE);
    assert!(
        error(f).contains("no timerwheel fleet schema"),
        "{}",
        error(f)
    );
    // Still not joined: a retry against the right database works.
    assert_eq!(add(f, 1, c"charge", b"", 0), tw_status::TW_ERR_INVALID);
    assert_eq!(join(f, &server.conninfo(), c"a"), tw_status::TW_OK);
    assert_eq!(
        join(f, &server.conninfo(), c"a"),
        tw_status::TW_ERR_BUSY,
        "joined already"
    );
    let before = sql(server, "SELECT count(*) FROM tw_fleet_timers");
    assert_eq!(add(f, 1, c"nobody", b"", 0), tw_status::TW_ERR_NO_HANDLER);
    assert!(error(f).contains("nobody"), "{}", error(f));
    assert_eq!(sql(server, "SELECT count(*) FROM tw_fleet_timers"), before);
    destroy(f);
}

/// What the calling-back handler shares with the test.
struct CallBack {
    node: AtomicPtr<tw_fleet>,
    statuses: Mutex<Vec<(&'static str, tw_status)>>,
}

/// A handler that calls its own node: an ack of its token, a leave and a destroy.
unsafe extern "C" fn call_back(
    token: *const tw_fleet_token,
    _payload: *const c_void,
    _len: usize,
    ctx: *mut c_void,
) -> i32 {
    // SAFETY: `ctx` is the test's CallBack, alive until the node is destroyed.
    let shared = unsafe { &*ctx.cast::<CallBack>() };
    let f = shared.node.load(Ordering::SeqCst);
    let mut acked = 0;
    // SAFETY: a live node (the test destroys it after the handler ran) and the token the
    // library passed, valid during the call.
    let calls = unsafe {
        [
            ("ack", tw_fleet_ack(f, token, 1, &mut acked)),
            ("leave", tw_fleet_leave(f)),
            ("destroy", tw_fleet_destroy(f)),
        ]
    };
    shared.statuses.lock().unwrap().extend(calls);
    TW_ACK_LATER
}

fn a_handler_acks_but_cannot_leave_its_own_node(server: &TestServer) {
    let shared = CallBack {
        node: AtomicPtr::new(ptr::null_mut()),
        statuses: Mutex::new(Vec::new()),
    };
    let mut f = ptr::null_mut();
    let settings = quick();
    // SAFETY: valid arguments; `shared` outlives the node.
    unsafe {
        assert_eq!(tw_fleet_create(&settings, &mut f), tw_status::TW_OK);
        let ctx = ptr::from_ref(&shared).cast_mut().cast();
        let name = c"call_back".as_ptr();
        let registered = tw_fleet_handler_register(f, name, Some(call_back), ctx);
        assert_eq!(registered, tw_status::TW_OK);
    }
    shared.node.store(f, Ordering::SeqCst);
    assert_eq!(join(f, &server.conninfo(), c"c"), tw_status::TW_OK);
    assert_eq!(add(f, 11, c"call_back", b"", now_ms()), tw_status::TW_OK);
    let deadline = Instant::now() + Duration::from_secs(20);
    while shared.statuses.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let statuses = shared.statuses.lock().unwrap().clone();
    assert_eq!(
        statuses,
        [
            ("ack", tw_status::TW_OK),
            ("leave", tw_status::TW_ERR_BUSY),
            ("destroy", tw_status::TW_ERR_BUSY)
        ]
    );
    let unacked = sql(server, "SELECT count(*) FROM tw_fleet_fires WHERE key = 11");
    assert_eq!(unacked, 0, "acknowledged from inside its handler");
    destroy(f);
}

/// A node that joins takes over the unacknowledged fires of its shards and hands them to
/// its handlers while tw_fleet_join is still under way: their calls on the node work.
fn a_handler_run_by_the_join_may_call_its_node(server: &TestServer) {
    let fired = Mutex::new(Vec::new());
    let mut f = ptr::null_mut();
    let settings = quick();
    // SAFETY: valid arguments; `fired` outlives the node.
    unsafe {
        assert_eq!(tw_fleet_create(&settings, &mut f), tw_status::TW_OK);
        let ctx = ptr::from_ref(&fired).cast_mut().cast();
        let registered = tw_fleet_handler_register(f, c"call_back".as_ptr(), Some(record), ctx);
        assert_eq!(registered, tw_status::TW_OK);
    }
    assert_eq!(join(f, &server.conninfo(), c"e"), tw_status::TW_OK);
    assert_eq!(add(f, 12, c"call_back", b"", now_ms()), tw_status::TW_OK);
    assert_eq!(wait_for(&fired, 1).len(), 1);
    destroy(f); // left unacknowledged: the next owner delivers it again

    let shared = CallBack {
        node: AtomicPtr::new(ptr::null_mut()),
        statuses: Mutex::new(Vec::new()),
    };
    let mut g = ptr::null_mut();
    // SAFETY: valid arguments; `shared` outlives the node.
    unsafe {
        assert_eq!(tw_fleet_create(&settings, &mut g), tw_status::TW_OK);
        let ctx = ptr::from_ref(&shared).cast_mut().cast();
        let registered = tw_fleet_handler_register(g, c"call_back".as_ptr(), Some(call_back), ctx);
        assert_eq!(registered, tw_status::TW_OK);
    }
    shared.node.store(g, Ordering::SeqCst);
    assert_eq!(join(g, &server.conninfo(), c"e"), tw_status::TW_OK);
    let deadline = Instant::now() + Duration::from_secs(20);
    while shared.statuses.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let statuses = shared.statuses.lock().unwrap().clone();
    assert_eq!(
        statuses.first(),
        Some(&("ack", tw_status::TW_OK)),
        "{statuses:?}"
    );
    let unacked = sql(server, "SELECT count(*) FROM tw_fleet_fires WHERE key = 12");
    assert_eq!(unacked, 0, "acknowledged by the handler the take-over ran");
    destroy(g);
}

/// Last: it stops the server for a while.
fn changes_wait_in_a_bounded_buffer_while_postgres_is_down(server: &TestServer) {
    let fired = Mutex::new(Vec::new());
    let mut settings = quick();
    settings.buffer = 2;
    let f = node(Some(&settings), &fired);
    assert_eq!(join(f, &server.conninfo(), c"d"), tw_status::TW_OK);
    let later = now_ms() + 3_600_000;
    assert_eq!(add(f, 21, c"charge", b"", later), tw_status::TW_OK);
    server.stop();
    assert_eq!(
        add(f, 22, c"charge", b"", later),
        tw_status::TW_ERR_UNREACHABLE,
        "kept"
    );
    assert!(error(f).contains("1 changes wait"), "{}", error(f));
    // SAFETY: a live node and a NUL-terminated name.
    let deleted = unsafe { tw_fleet_delete(f, 21, c"charge".as_ptr()) };
    assert_eq!(deleted, tw_status::TW_ERR_UNREACHABLE, "kept");
    assert_eq!(
        add(f, 23, c"charge", b"", later),
        tw_status::TW_ERR_FULL,
        "past the bound: not kept"
    );
    assert!(!error(f).contains(&server.conninfo()), "{}", error(f));
    let mut pending = 0;
    // SAFETY: a live node and a writable count.
    let flushed = unsafe { tw_fleet_flush(f, &mut pending) };
    assert_eq!((flushed, pending), (tw_status::TW_ERR_UNREACHABLE, 2));
    // A leave would drop them: it is refused, and the node stays.
    // SAFETY: a live node.
    let left = unsafe { tw_fleet_leave(f) };
    assert_eq!(left, tw_status::TW_ERR_UNREACHABLE, "{}", error(f));
    // SAFETY: a live node and a writable count.
    let flushed = unsafe { tw_fleet_flush(f, &mut pending) };
    assert_eq!(
        (flushed, pending),
        (tw_status::TW_ERR_UNREACHABLE, 2),
        "still joined"
    );

    server.start_again();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // SAFETY: a live node; it writes the buffer before it leaves.
        let left = unsafe { tw_fleet_leave(f) };
        if left == tw_status::TW_OK || Instant::now() > deadline {
            assert_eq!(left, tw_status::TW_OK, "{}", error(f));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let count = |key| {
        sql(
            server,
            &format!("SELECT count(*) FROM tw_fleet_timers WHERE key = {key}"),
        )
    };
    // Written in order: the add of 22, then the delete of 21; the refused add of 23 never.
    assert_eq!((count(21), count(22), count(23)), (0, 1, 0));
    destroy(f);
}

/// The period of the timer whose points pass while no node holds its shard.
const PERIOD_MS: i64 = 200;

/// The points a node with `settings` fires (at least `n` of them, waited for) of a periodic
/// timer `key` added while no node held its shard, 10 and a half periods before the node
/// joins; and the time of the join.
fn points_fired_after_a_gap(
    server: &TestServer,
    settings: &tw_fleet_settings,
    key: u64,
    n: usize,
) -> (Vec<i64>, i64) {
    let mut client = ConnectOptions::parse(&server.conninfo())
        .and_then(|o| o.connect())
        .unwrap();
    let first = now_ms() - 10 * PERIOD_MS - PERIOD_MS / 2;
    let timer = NewTimer {
        key,
        name: "tick",
        payload: b"",
        due_ms: first,
        period_ms: PERIOD_MS,
        replace: false,
    };
    add_timer(&mut client, SHARDS, &timer).unwrap();
    let fired = Mutex::new(Vec::new());
    let mut f = ptr::null_mut();
    // SAFETY: valid arguments, as C passes them; `fired` outlives the node.
    unsafe {
        assert_eq!(tw_fleet_create(settings, &mut f), tw_status::TW_OK);
        let ctx = ptr::from_ref(&fired).cast_mut().cast();
        let registered = tw_fleet_handler_register(f, c"tick".as_ptr(), Some(record), ctx);
        assert_eq!(registered, tw_status::TW_OK);
    }
    let joined = now_ms();
    assert_eq!(join(f, &server.conninfo(), c"m"), tw_status::TW_OK);
    let points: Vec<i64> = wait_for(&fired, n)
        .iter()
        .map(|fire| fire.occurrence_unix_ms)
        .collect();
    destroy(f);
    for table in ["tw_fleet_fires", "tw_fleet_timers"] {
        sql(server, &format!("DELETE FROM {table} WHERE key = {key}"));
    }
    assert!(
        points
            .iter()
            .all(|p| p >= &first && (p - first) % PERIOD_MS == 0),
        "off the schedule from {first}: {points:?}"
    );
    (points, joined)
}

/// Every missed point, oldest first: the first point of the schedule, then the next ones.
fn assert_every_point(points: &[i64], joined: i64) {
    let first = points[0];
    assert!(
        first < joined - 10 * PERIOD_MS,
        "the oldest point first: {points:?}"
    );
    assert!(
        points[..11].windows(2).all(|w| w[1] == w[0] + PERIOD_MS),
        "every point, in order: {points:?}"
    );
}

fn missed_points_coalesce_into_the_latest_when_asked(server: &TestServer) {
    let mut coalesce = quick();
    coalesce.missed_points = tw_missed_points::TW_MISSED_COALESCE as u64;
    let (points, joined) = points_fired_after_a_gap(server, &coalesce, 21, 1);
    assert!(
        points[0] > joined - PERIOD_MS,
        "one fire for the latest point, none older: {points:?} (joined at {joined})"
    );

    let each = quick();
    assert_eq!(each.missed_points, tw_missed_points::TW_MISSED_EACH as u64);
    let (points, joined) = points_fired_after_a_gap(server, &each, 22, 11);
    assert_every_point(&points, joined);

    // A caller compiled before the field: its struct ends before it, and whatever follows
    // is not read; it gets every point.
    let mut older = coalesce;
    older.size = std::mem::offset_of!(tw_fleet_settings, missed_points);
    let (points, joined) = points_fired_after_a_gap(server, &older, 23, 11);
    assert_every_point(&points, joined);
}

#[test]
fn a_connection_string_never_shows_in_errors() {
    let fired = Mutex::new(Vec::new());
    let f = node(Some(&quick()), &fired);
    // Nothing listens on port 1; the password must not come back.
    let unreachable = "host=127.0.0.1 port=1 user=u password=s3cret-pw connect_timeout=2";
    assert_eq!(join(f, unreachable, c"a"), tw_status::TW_ERR_UNREACHABLE);
    assert!(
        !error(f).is_empty() && !error(f).contains("s3cret"),
        "{}",
        error(f)
    );
    let unparsable = "host=127.0.0.1 password=s3cret-pw port=notaport";
    assert_eq!(join(f, unparsable, c"a"), tw_status::TW_ERR_INVALID);
    assert!(
        !error(f).is_empty() && !error(f).contains("s3cret"),
        "{}",
        error(f)
    );
    let url = "postgresql://u:s3cret-pw@127.0.0.1:1/db?connect_timeout=2";
    assert_eq!(join(f, url, c"a"), tw_status::TW_ERR_UNREACHABLE);
    assert!(!error(f).contains("s3cret"), "{}", error(f));
    destroy(f);
}

#[test]
fn bad_arguments_are_refused_and_change_nothing() {
    let fired = Mutex::new(Vec::new());
    // SAFETY: each call as a careless C program makes it: NULLs and bad values.
    unsafe {
        assert_eq!(
            tw_fleet_create(ptr::null(), ptr::null_mut()),
            tw_status::TW_ERR_INVALID
        );
        let mut settings = quick();
        settings.size = 3;
        let mut f = ptr::null_mut();
        assert_eq!(
            tw_fleet_create(&settings, &mut f),
            tw_status::TW_ERR_INVALID
        );
        assert!(f.is_null());
        // A newer caller's struct: a setting this library does not know is refused, not
        // dropped; zeros past its fields are accepted.
        #[repr(C)]
        struct Newer {
            settings: tw_fleet_settings,
            unknown: u64,
        }
        let mut newer = Newer {
            settings: quick(),
            unknown: 1,
        };
        newer.settings.size = size_of::<Newer>();
        // The whole struct, as C passes it (a pointer to its first field).
        let whole = |n: &Newer| ptr::from_ref(n).cast::<tw_fleet_settings>();
        let created = tw_fleet_create(whole(&newer), &mut f);
        assert_eq!(created, tw_status::TW_ERR_INVALID);
        newer.unknown = 0;
        assert_eq!(tw_fleet_create(whole(&newer), &mut f), tw_status::TW_OK);
        assert_eq!(tw_fleet_destroy(f), tw_status::TW_OK);
        tw_fleet_settings_init(ptr::null_mut());
        for policy in [tw_missed_points::TW_MISSED_COALESCE as u64 + 1, 1 << 32] {
            let mut unknown_policy = quick();
            unknown_policy.missed_points = policy;
            f = ptr::null_mut();
            let created = tw_fleet_create(&unknown_policy, &mut f);
            assert_eq!(created, tw_status::TW_ERR_INVALID, "missed_points {policy}");
            assert!(f.is_null(), "nothing created");
        }

        let f = node(None, &fired);
        let ctx = ptr::null_mut();
        let charge = c"charge".as_ptr();
        assert_eq!(
            tw_fleet_handler_register(ptr::null_mut(), charge, Some(record), ctx),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_handler_register(f, ptr::null(), Some(record), ctx),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_handler_register(f, c"".as_ptr(), Some(record), ctx),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_handler_register(f, c"other".as_ptr(), None, ctx),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_handler_register(f, charge, Some(record), ctx),
            tw_status::TW_ERR_INVALID,
            "registered already"
        );
        assert_eq!(
            tw_fleet_join(f, ptr::null(), c"a".as_ptr()),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_join(f, c"host=127.0.0.1".as_ptr(), ptr::null()),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_join(f, c"host=127.0.0.1".as_ptr(), c"".as_ptr()),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            add(f, 1, c"charge", b"", 0),
            tw_status::TW_ERR_INVALID,
            "not joined"
        );
        assert!(error(f).contains("tw_fleet_join"), "{}", error(f));
        assert_eq!(
            tw_fleet_add(f, 1, charge, ptr::null(), 3, 0, 0, 0),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_add(f, 1, charge, ptr::null(), 0, 0, u64::MAX, 0),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_add(f, 1, charge, ptr::null(), 0, 0, 0, TW_DURABLE_REPLACE << 1),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(
            tw_fleet_ack(f, ptr::null(), 2, ptr::null_mut()),
            tw_status::TW_ERR_INVALID
        );
        assert_eq!(tw_fleet_leave(f), tw_status::TW_ERR_INVALID, "not joined");
        assert_eq!(tw_fleet_leave(ptr::null_mut()), tw_status::TW_ERR_INVALID);
        assert_eq!(
            tw_fleet_error(ptr::null(), ptr::null_mut(), 0, ptr::null_mut()),
            tw_status::TW_ERR_INVALID
        );
        // A TTL under 100 ms: refused at the join, before any connection.
        let mut short = quick();
        short.ttl_ms = 10;
        let g = node(Some(&short), &fired);
        assert_eq!(
            join(g, "host=127.0.0.1 port=1 connect_timeout=1", c"a"),
            tw_status::TW_ERR_INVALID,
            "{}",
            error(g)
        );
        destroy(g);
        destroy(f);
        assert_eq!(tw_fleet_destroy(ptr::null_mut()), tw_status::TW_ERR_INVALID);
    }
    assert!(fired.lock().unwrap().is_empty());
}
