//! Timer groups (docs/contract.md, "Timer groups"): each timer's drop exactly once, the
//! group's drop exactly once and after all of them, once closed; callbacks and drops that
//! call back into their group; stale and foreign ids; shutdown with open groups; and a
//! randomized model of the whole life cycle on a virtual clock.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use timerwheel_core::{BoxTask, Error, GroupId, PeriodMode, Runtime, TimerId};

const MS: Duration = Duration::from_millis(1);

fn virtual_runtime() -> Arc<Runtime> {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200);
    Arc::new(Runtime::builder().virtual_clock(start).build().unwrap())
}

/// What happened, in order.
type Log = Arc<Mutex<Vec<String>>>;

/// Logs `name` when dropped, then runs `then`.
struct OnDrop<F: FnMut()> {
    log: Log,
    name: String,
    then: F,
}

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        self.log.lock().unwrap().push(format!("drop {}", self.name));
        (self.then)();
    }
}

fn on_drop(log: &Log, name: &str) -> OnDrop<fn()> {
    OnDrop {
        log: Arc::clone(log),
        name: name.into(),
        then: || {},
    }
}

/// A task that logs its runs as `name` and its drop as `drop name`.
fn logged(log: &Log, name: &str) -> BoxTask {
    let guard = on_drop(log, name);
    Box::new(move |_| {
        guard
            .log
            .lock()
            .unwrap()
            .push(format!("run {}", guard.name))
    })
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

fn group(rt: &Runtime, log: &Log) -> GroupId {
    rt.group_create(Box::new(on_drop(log, "group"))).unwrap()
}

#[test]
fn the_group_drop_follows_every_timer_drop_and_runs_once() {
    let rt = virtual_runtime();
    let log = Log::default();
    let g = group(&rt, &log);
    rt.group_add(g, 10 * MS, logged(&log, "once")).ok().unwrap();
    let every = (5 * MS, 5 * MS, PeriodMode::FixedRate);
    rt.group_add_periodic(g, every.0, every.1, every.2, logged(&log, "every"))
        .ok()
        .unwrap();
    rt.group_add_at(g, rt.now() + 60 * MS, logged(&log, "at"))
        .ok()
        .unwrap();
    rt.group_close(g).unwrap();
    rt.advance(10 * MS).unwrap();
    assert!(!entries(&log).contains(&"drop group".into()), "timers left");
    rt.group_delete(g).unwrap();
    let log = entries(&log);
    assert_eq!(log.last().unwrap(), "drop group", "{log:?}");
    for name in ["drop once", "drop every", "drop at", "drop group"] {
        assert_eq!(
            log.iter().filter(|e| *e == name).count(),
            1,
            "{name}: {log:?}"
        );
    }
    assert_eq!(rt.group_delete(g), Err(Error::NotFound));
    assert_eq!(rt.group_count(), 0);
}

#[test]
fn a_session_whose_only_timer_fired_can_still_add_the_next() {
    let rt = virtual_runtime();
    let log = Log::default();
    let g = group(&rt, &log);
    rt.group_add(g, MS, logged(&log, "first")).ok().unwrap();
    rt.advance(5 * MS).unwrap();
    assert_eq!(entries(&log), ["run first", "drop first"]);
    rt.group_add(g, MS, logged(&log, "next")).ok().unwrap();
    rt.advance(5 * MS).unwrap();
    rt.group_close(g).unwrap();
    assert_eq!(entries(&log)[2..], ["run next", "drop next", "drop group"]);
}

#[test]
fn a_closed_group_refuses_timers_and_hands_the_task_back_untouched() {
    let rt = virtual_runtime();
    let log = Log::default();
    let g = group(&rt, &log);
    rt.group_add(g, Duration::from_secs(1), logged(&log, "kept"))
        .ok()
        .unwrap();
    rt.group_close(g).unwrap();
    let refused = rt.group_add(g, MS, logged(&log, "refused")).unwrap_err();
    assert_eq!(refused.error, Error::GroupClosed);
    assert_eq!(rt.group_close(g), Err(Error::GroupClosed));
    assert!(entries(&log).is_empty(), "nothing dropped by the refusal");
    drop(refused.task);
    let added = rt.stats().added;
    assert_eq!(added, 1, "the refused timer is not counted");
    rt.advance(Duration::from_secs(2)).unwrap();
    assert_eq!(
        entries(&log),
        ["drop refused", "run kept", "drop kept", "drop group"]
    );
}

#[test]
fn stale_foreign_and_mistaken_ids_find_nothing_and_change_nothing() {
    let (rt, other) = (virtual_runtime(), virtual_runtime());
    let log = Log::default();
    let g = group(&rt, &log);
    let timer = rt.group_add(g, MS, logged(&log, "t")).ok().unwrap();
    let theirs = other.group_create(Box::new(())).unwrap();
    // Another runtime's group, a timer id as a group id, a group id as a timer id.
    let as_group = GroupId::from_u64(timer.as_u64()).unwrap();
    let as_timer = TimerId::from_u64(g.as_u64()).unwrap();
    for wrong in [theirs, as_group] {
        assert_eq!(rt.group_close(wrong), Err(Error::NotFound));
        assert_eq!(rt.group_delete(wrong), Err(Error::NotFound));
        let refused = rt.group_add(wrong, MS, Box::new(|_| {})).unwrap_err();
        assert_eq!(refused.error, Error::NotFound);
    }
    assert_eq!(other.group_delete(g), Err(Error::NotFound));
    assert_eq!(rt.cancel(as_timer), Err(Error::NotFound));
    assert!(rt.is_pending(timer), "untouched");
    rt.group_delete(g).unwrap();
    // Stale: the group ended; a new group takes its slot.
    let again = group(&rt, &log);
    assert_ne!(again, g);
    assert_eq!(rt.group_close(g), Err(Error::NotFound));
    assert_eq!(
        rt.group_add(g, MS, Box::new(|_| {})).unwrap_err().error,
        Error::NotFound
    );
    assert_eq!(rt.group_count(), 1);
    assert_eq!(other.group_count(), 1);
}

#[test]
fn a_periodic_callback_that_deletes_its_own_group_ends_it_when_it_returns() {
    let rt = virtual_runtime();
    let log = Log::default();
    let g = group(&rt, &log);
    rt.group_add(g, Duration::from_secs(60), logged(&log, "idle"))
        .ok()
        .unwrap();
    let (inner_rt, inner_log) = (Arc::clone(&rt), Arc::clone(&log));
    let guard = on_drop(&log, "charge");
    let charge = Box::new(move |_| {
        let _ = &guard;
        let deleted = inner_rt.group_delete(g);
        let still = entries(&inner_log).contains(&"drop group".into());
        inner_log
            .lock()
            .unwrap()
            .push(format!("run charge: {deleted:?}, group dropped: {still}"));
    });
    rt.group_add_periodic(g, MS, MS, PeriodMode::FixedRate, charge)
        .ok()
        .unwrap();
    rt.advance(10 * MS).unwrap();
    assert_eq!(
        entries(&log),
        [
            "drop idle",
            "run charge: Ok(()), group dropped: false",
            "drop charge",
            "drop group"
        ]
    );
}

#[test]
fn closing_from_a_callback_ends_the_group_after_that_timers_drop() {
    let rt = virtual_runtime();
    let log = Log::default();
    let g = group(&rt, &log);
    let inner_rt = Arc::clone(&rt);
    let guard = on_drop(&log, "last");
    rt.group_add(
        g,
        MS,
        Box::new(move |_| {
            let _ = &guard;
            assert_eq!(inner_rt.group_close(g), Ok(()));
        }),
    )
    .ok()
    .unwrap();
    rt.advance(5 * MS).unwrap();
    assert_eq!(entries(&log), ["drop last", "drop group"]);
}

#[test]
fn a_group_drop_may_call_back_into_the_runtime_and_into_its_own_group() {
    let rt = virtual_runtime();
    let log = Log::default();
    let (inner_rt, inner_log) = (Arc::clone(&rt), Arc::clone(&log));
    let own = Arc::new(Mutex::new(None::<GroupId>));
    let own_id = Arc::clone(&own);
    let data = OnDrop {
        log: Arc::clone(&log),
        name: "group".into(),
        then: move || {
            let g = own_id.lock().unwrap().unwrap();
            let rt = &inner_rt;
            let add = rt.group_add(g, MS, Box::new(|_| {})).map_err(|r| r.error);
            let next = rt.group_create(Box::new(())).map_err(|r| r.error);
            let timer = rt.after(MS, |_| {}).map(|t| t.cancel());
            inner_log.lock().unwrap().push(format!(
                "{add:?} {:?} {:?} {:?} {timer:?}",
                rt.group_close(g),
                rt.group_delete(g),
                next.map(|n| rt.group_delete(n))
            ));
        },
    };
    let g = rt.group_create(Box::new(data)).unwrap();
    *own.lock().unwrap() = Some(g);
    rt.group_add(g, MS, logged(&log, "t")).ok().unwrap();
    rt.group_close(g).unwrap();
    rt.advance(5 * MS).unwrap();
    assert_eq!(
        entries(&log),
        [
            "run t",
            "drop t",
            "drop group",
            "Err(NotFound) Err(NotFound) Err(NotFound) Ok(Ok(())) Ok(true)"
        ]
    );
    assert_eq!(rt.group_count(), 0);
}

#[test]
fn shutdown_drops_open_groups_after_their_timers() {
    let log = Log::default();
    let rt = Runtime::builder().manual(true).build().unwrap();
    let g = group(&rt, &log);
    let empty = rt.group_create(Box::new(on_drop(&log, "empty"))).unwrap();
    rt.group_add(g, Duration::from_secs(60), logged(&log, "a"))
        .ok()
        .unwrap();
    rt.group_add(g, Duration::from_secs(60), logged(&log, "b"))
        .ok()
        .unwrap();
    assert_eq!(rt.shutdown(), Ok(2));
    let log = entries(&log);
    assert_eq!(log.len(), 4, "{log:?}");
    assert!(log[..2].contains(&"drop a".into()) && log[..2].contains(&"drop b".into()));
    assert!(log[2..].contains(&"drop group".into()) && log[2..].contains(&"drop empty".into()));
    assert_eq!(rt.group_close(empty), Err(Error::Shutdown));
}

#[test]
fn the_rust_group_cancels_its_timers_when_dropped_and_close_lets_them_run() {
    let rt = Runtime::builder().manual(true).build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&dropped);
    let session = rt.group_with(on_drop_count(counted)).unwrap();
    let idle = session.after(Duration::from_secs(60), |_| {}).unwrap();
    let charge = session.every(Duration::from_secs(1), |_| {}).unwrap();
    let handle = session.handle();
    drop(session);
    assert!(!idle.is_active() && !charge.is_active());
    assert_eq!(dropped.load(SeqCst), 1);
    assert_eq!(handle.after(MS, |_| {}).err(), Some(Error::NotFound));

    let kept = rt.group().unwrap();
    let timer = kept.after(Duration::ZERO, |_| {}).unwrap();
    let handle = kept.handle();
    kept.close().unwrap();
    assert!(timer.is_active(), "close cancels nothing");
    assert_eq!(handle.after(MS, |_| {}).err(), Some(Error::GroupClosed));
    std::thread::sleep(2 * MS);
    assert_eq!(rt.poll(), Ok(1));
    assert_eq!(rt.group_count(), 0);
}

struct CountDrop(Arc<AtomicUsize>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn on_drop_count(count: Arc<AtomicUsize>) -> CountDrop {
    CountDrop(count)
}

// ---- The randomized model ----------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Create,
    Add {
        group: usize,
        delay_ms: u64,
    },
    AddPeriodic {
        group: usize,
        period_ms: u64,
    },
    /// A one-shot whose callback closes (false) or deletes (true) its own group.
    AddSelfEnding {
        group: usize,
        delay_ms: u64,
        delete: bool,
    },
    Cancel {
        timer: usize,
    },
    Close {
        group: usize,
    },
    Delete {
        group: usize,
    },
    Advance {
        ms: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Create),
        6 => (0..8usize, 0..20u64).prop_map(|(group, delay_ms)| Op::Add { group, delay_ms }),
        2 => (0..8usize, 1..10u64).prop_map(|(group, period_ms)| Op::AddPeriodic { group, period_ms }),
        1 => (0..8usize, 0..20u64, any::<bool>())
            .prop_map(|(group, delay_ms, delete)| Op::AddSelfEnding { group, delay_ms, delete }),
        3 => (0..64usize).prop_map(|timer| Op::Cancel { timer }),
        2 => (0..8usize).prop_map(|group| Op::Close { group }),
        1 => (0..8usize).prop_map(|group| Op::Delete { group }),
        4 => (0..15u64).prop_map(|ms| Op::Advance { ms }),
    ]
}

/// What the model knows of a group; shared with the callbacks and drops it watches.
#[derive(Default)]
struct ModelGroup {
    closed: bool,
    drops: usize,
    /// Indices into `Model::timer_drops` of its timers.
    timers: Vec<usize>,
    /// Whether every timer of the group had been dropped when the group's drop ran.
    dropped_after_timers: bool,
}

#[derive(Default)]
struct Model {
    groups: Vec<(GroupId, ModelGroup)>,
    timer_drops: Vec<usize>,
    timers: Vec<(TimerId, usize)>,
}

type Shared = Arc<Mutex<Model>>;

impl Model {
    fn ended(&self, group: usize) -> bool {
        let g = &self.groups[group].1;
        g.closed && g.timers.iter().all(|&t| self.timer_drops[t] == 1)
    }

    fn expected_add(&self, group: usize) -> Result<(), Error> {
        match (self.ended(group), self.groups[group].1.closed) {
            (true, _) => Err(Error::NotFound),
            (false, true) => Err(Error::GroupClosed),
            (false, false) => Ok(()),
        }
    }
}

/// A task in `group` (model index) that counts its drop as timer `timer`, and runs
/// `on_run` when it fires.
fn model_task(
    model: &Shared,
    group: usize,
    on_run: impl FnMut() + Send + 'static,
) -> (BoxTask, usize) {
    let timer = {
        let mut m = model.lock().unwrap();
        m.timer_drops.push(0);
        let timer = m.timer_drops.len() - 1;
        m.groups[group].1.timers.push(timer);
        timer
    };
    let shared = Arc::clone(model);
    let guard = OnDrop {
        log: Log::default(),
        name: String::new(),
        then: move || shared.lock().unwrap().timer_drops[timer] += 1,
    };
    let mut on_run = on_run;
    (
        Box::new(move |_| {
            let _ = &guard;
            on_run();
        }),
        timer,
    )
}

fn forget_timer(model: &Shared, group: usize, timer: usize) {
    let mut m = model.lock().unwrap();
    m.groups[group].1.timers.retain(|&t| t != timer);
}

fn apply(rt: &Arc<Runtime>, model: &Shared, op: Op) {
    let groups = model.lock().unwrap().groups.len();
    let pick = |g: usize| (groups > 0).then(|| g % groups);
    match op {
        Op::Create => {
            let index = groups;
            let shared = Arc::clone(model);
            let data = OnDrop {
                log: Log::default(),
                name: String::new(),
                then: move || {
                    let mut m = shared.lock().unwrap();
                    let all = m.groups[index]
                        .1
                        .timers
                        .iter()
                        .all(|&t| m.timer_drops[t] == 1);
                    let g = &mut m.groups[index].1;
                    g.drops += 1;
                    g.dropped_after_timers = all;
                },
            };
            // Registered first: the drop may only run after the model knows the group.
            let mut m = model.lock().unwrap();
            m.groups
                .push((GroupId::from_u64(1).unwrap(), ModelGroup::default()));
            drop(m);
            let id = rt.group_create(Box::new(data)).unwrap();
            model.lock().unwrap().groups[index].0 = id;
        }
        Op::Add { group, delay_ms }
        | Op::AddPeriodic {
            group,
            period_ms: delay_ms,
        } => {
            let Some(group) = pick(group) else { return };
            let periodic = matches!(op, Op::AddPeriodic { .. });
            let (id, expected) = {
                let m = model.lock().unwrap();
                (m.groups[group].0, m.expected_add(group))
            };
            let (task, timer) = model_task(model, group, || {});
            let delay = Duration::from_millis(delay_ms);
            let added = match periodic {
                false => rt.group_add(id, delay, task),
                true => rt.group_add_periodic(id, delay, delay, PeriodMode::FixedDelay, task),
            };
            check_add(model, group, timer, added, expected);
        }
        Op::AddSelfEnding {
            group,
            delay_ms,
            delete,
        } => {
            let Some(group) = pick(group) else { return };
            let (id, expected) = {
                let m = model.lock().unwrap();
                (m.groups[group].0, m.expected_add(group))
            };
            let (inner_rt, shared) = (Arc::clone(rt), Arc::clone(model));
            let (task, timer) = model_task(model, group, move || {
                let already = shared.lock().unwrap().groups[group].1.closed;
                shared.lock().unwrap().groups[group].1.closed = true;
                let result = match delete {
                    true => inner_rt.group_delete(id),
                    false => inner_rt.group_close(id),
                };
                let expected = if already && !delete {
                    Err(Error::GroupClosed)
                } else {
                    Ok(())
                };
                assert_eq!(result, expected, "from its own callback, delete: {delete}");
            });
            let added = rt.group_add(id, Duration::from_millis(delay_ms), task);
            check_add(model, group, timer, added, expected);
        }
        Op::Cancel { timer } => {
            let timers = model.lock().unwrap().timers.clone();
            if timers.is_empty() {
                return;
            }
            let (id, index) = timers[timer % timers.len()];
            let pending = model.lock().unwrap().timer_drops[index] == 0;
            assert_eq!(rt.cancel(id).is_ok(), pending, "cancel of a timer");
            assert_eq!(model.lock().unwrap().timer_drops[index], 1);
        }
        Op::Close { group } => {
            let Some(group) = pick(group) else { return };
            let (id, expected) = {
                let m = model.lock().unwrap();
                let expected = match (m.ended(group), m.groups[group].1.closed) {
                    (true, _) => Err(Error::NotFound),
                    (false, true) => Err(Error::GroupClosed),
                    (false, false) => Ok(()),
                };
                (m.groups[group].0, expected)
            };
            model.lock().unwrap().groups[group].1.closed = true;
            assert_eq!(rt.group_close(id), expected, "close");
        }
        Op::Delete { group } => {
            let Some(group) = pick(group) else { return };
            let (id, ended) = {
                let m = model.lock().unwrap();
                (m.groups[group].0, m.ended(group))
            };
            model.lock().unwrap().groups[group].1.closed = true;
            let expected = if ended { Err(Error::NotFound) } else { Ok(()) };
            assert_eq!(rt.group_delete(id), expected, "delete");
            assert!(model.lock().unwrap().ended(group), "every timer dropped");
        }
        Op::Advance { ms } => {
            rt.advance(Duration::from_millis(ms)).unwrap();
        }
    }
    check(&model.lock().unwrap());
}

fn check_add(
    model: &Shared,
    group: usize,
    timer: usize,
    added: Result<TimerId, timerwheel_core::Rejected<BoxTask>>,
    expected: Result<(), Error>,
) {
    match added {
        Ok(id) => {
            assert_eq!(expected, Ok(()), "added to a group that takes none");
            model.lock().unwrap().timers.push((id, timer));
        }
        Err(rejected) => {
            assert_eq!(Err(rejected.error), expected, "add refused");
            forget_timer(model, group, timer);
            let task = rejected.task;
            drop(task); // the model's drop counter of a timer it forgot: harmless
        }
    }
}

/// After every step: drops at most once; a group's drop ran exactly when it ended, and
/// after its timers' drops.
fn check(m: &Model) {
    assert!(
        m.timer_drops.iter().all(|&d| d <= 1),
        "a timer dropped twice"
    );
    for (index, (_, g)) in m.groups.iter().enumerate() {
        assert_eq!(g.drops, usize::from(m.ended(index)), "group {index}'s drop");
        if g.drops == 1 {
            assert!(
                g.dropped_after_timers,
                "group {index} dropped before a timer"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn groups_follow_the_model(ops in prop::collection::vec(op(), 1..120)) {
        let rt = virtual_runtime();
        let model = Shared::default();
        for op in ops {
            apply(&rt, &model, op);
        }
        let stats = rt.stats();
        prop_assert_eq!(stats.added, stats.fired_one_shot + stats.cancelled + stats.pending);
        let alive = {
            let m = model.lock().unwrap();
            (0..m.groups.len()).filter(|&i| !m.ended(i)).count()
        };
        prop_assert_eq!(rt.group_count(), alive);
        rt.shutdown().unwrap();
        let m = model.lock().unwrap();
        prop_assert!(m.timer_drops.iter().all(|&d| d == 1), "every timer dropped once");
        prop_assert!(m.groups.iter().all(|(_, g)| g.drops == 1 && g.dropped_after_timers));
    }
}
