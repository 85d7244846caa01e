//! A fleet node that runs timers: it holds leases on some shards ([`Node`]), keeps a wake-up
//! in a [`Runtime`]'s wheel for every due millisecond of its shards' timers within the near
//! window, pages the window forward as time moves, and when the wheel wakes it (the lead,
//! [`Settings::lead`], before a due point) claims what falls due within the lead in
//! PostgreSQL (fenced by each shard's epoch) and hands each fire, at its due time, to the
//! handler registered under the timer's name.
//!
//! **The store decides, the wheel only wakes.** A fire is delivered only after its claim
//! committed under the shard's lease, and while the node still holds it: a node that lost
//! a lease (taken over, expired, or cut off from the database) cannot claim, and hands over
//! nothing of that shard it claimed ahead; after losing contact for the TTL less the lead
//! it stops claiming altogether. Adds, resets and deletes from other
//! nodes change rows; an add or a reset also notifies its shard and due time, which puts a
//! wake-up in the owner's wheel. A wake-up that finds nothing due claims nothing.
//!
//! Threads: the *driver* ticks the leases every renew interval (a fifth of the TTL), takes
//! over the unacknowledged fires of the shards it acquires (delivered again under the new
//! epoch) and pages the window in; the *firer* waits for a wake-up from the wheel or the
//! poll interval, whichever comes first, and claims in batches until nothing falls due
//! within the lead, and hands each fire over at its due time; the
//! *listener* (`LISTEN tw_fleet`) schedules the points other nodes notify. Each thread has
//! its own connection and opens it again when it breaks.
//!
//! **Bounds.** A timer inside the loaded window fires at its due time plus the wake-up's
//! lateness when its claim (a transaction) takes less than the lead. A timer added or
//! reset by another node that falls due before the window's loaded edge (it was not there
//! when that part was paged in) is woken by its notification; one whose notification was
//! lost (the listener was reconnecting) is claimed by the poll: at most `poll` late (500
//! ms by default). Due times are read on this node's wall clock: a clock
//! ahead of the others by `s` fires up to `s` early, so the clocks are assumed
//! NTP-synchronised (a few ms); leases never depend on them (they are judged on the
//! database's clock). Periodic points missed while a shard had no owner are each delivered,
//! oldest first, or with [`Settings::missed`] `Coalesce` one fire for the latest of them.
//!
//! Not the core's `Sink`: a durable store of the core owns its timers in memory and hands a
//! fire to its handler before the fire is committed. Here PostgreSQL owns them (other nodes
//! change them) and a fire must be claimed under the lease before it is delivered.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use timerwheel_core::durable::{Ack, MissedPoints};
use timerwheel_core::{BoxTask, Config, Runtime};

use crate::changes::{Change, Status, Writer, DEFAULT_BUFFER};
use crate::error::{FleetError, Result};
use crate::lease::{Node, Rebalance, MIN_TTL};
use crate::store::{
    ack, ack_and_claim, due_points, take_over_fires, unacked_fires, Claim, Fire, FleetToken,
    NewTimer, CHANNEL,
};
use crate::{ConnectOptions, Key};

/// The shortest a node's connection attempt may take before it is given up.
const LEAST_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A handler of fleet timers: given the fire (its token carries the shard's epoch) and the
/// payload; [`Ack::Now`] acknowledges it at once, [`Ack::Later`] leaves it to
/// [`Runner::ack`].
pub type FleetHandler = Arc<dyn Fn(&Fire) -> Ack + Send + Sync>;

/// What a node did, for logs and tests (never a connection string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// A shard acquired under a new epoch.
    Acquired(i32, i64),
    /// A shard handed back for another node.
    Released(i32),
    /// A shard lost (its lease moved on or expired).
    Lost(i32),
    /// Fires of one shard acknowledged.
    Acked(u64),
    /// An acknowledgement refused: the lease of the shard moved past the epoch.
    AckRefused(i32, i64),
    /// An error (the connection broke, a fire with no handler, ...).
    Error(String),
    /// A connection opened again after it broke.
    Reconnected,
}

type Observer = Arc<dyn Fn(&NodeEvent) + Send + Sync>;

/// Settings of a [`Runner`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The lease TTL (renewed every fifth of it).
    pub ttl: Duration,
    /// How far ahead the wheel holds wake-ups.
    pub window: Duration,
    /// The longest wait between two claims (bounds the delay of adds from other nodes).
    pub poll: Duration,
    /// Timers claimed per transaction.
    pub batch: i64,
    /// Listens for adds and resets from other nodes (LISTEN/NOTIFY); without it they wait
    /// for the poll when they fall due behind the window's loaded edge.
    pub listen: bool,
    /// The bound of the buffer of changes made through the node ([`Runner::add`], ...)
    /// while PostgreSQL does not answer: past it a change is refused
    /// ([`FleetError::BufferFull`]).
    pub buffer: usize,
    /// The points a periodic timer missed (its shard had no owner, the node was behind):
    /// each delivered, oldest first (the default), or one fire for the latest of them.
    pub missed: MissedPoints,
    /// How far ahead of its due time a timer is claimed: the wheel wakes the node `lead`
    /// before a due point, the claim takes what falls due within `lead`, and each fire is
    /// handed over at its due time (never before), so the claim's transaction is off the
    /// fire's path as long as it takes less than `lead`. A fire is handed over only while
    /// its lease is held: a claim requires every lease to last `lead` more, and the node
    /// claims nothing once a TTL less `lead` passed since its last renewal. A delete or a
    /// reset made within `lead` before a timer's due time finds it claimed, as if it had
    /// fired: the fire is delivered. The default, 50 ms, covers the claim's transaction
    /// under the bench's 1,000 fires a second on three nodes: with the claim on the fire's
    /// path, one run measured a lateness of p99 29.7 ms and at most 51.5 ms; with a lead
    /// of 30 ms p99 9.1 ms (at most 25.7 ms), of 50 ms p99 6.6 ms (at most 12.3 ms).
    /// Must be under half the TTL.
    pub lead: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ttl: crate::DEFAULT_TTL,
            window: Duration::from_secs(60),
            poll: Duration::from_millis(500),
            batch: 500,
            listen: true,
            buffer: DEFAULT_BUFFER,
            missed: MissedPoints::Each,
            lead: Duration::from_millis(50),
        }
    }
}

/// Registers handlers, then starts a [`Runner`].
#[derive(Clone, Default)]
pub struct RunnerBuilder {
    settings: Settings,
    handlers: HashMap<String, FleetHandler>,
    observer: Option<Observer>,
}

impl RunnerBuilder {
    /// A builder with the default [`Settings`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Registers `handler` for the timers named `name` (a later one replaces it).
    pub fn handler(
        mut self,
        name: &str,
        handler: impl Fn(&Fire) -> Ack + Send + Sync + 'static,
    ) -> Self {
        self.handlers.insert(name.to_owned(), Arc::new(handler));
        self
    }

    /// Whether a handler is registered as `name`.
    pub fn has_handler(&self, name: &str) -> bool {
        self.handlers.contains_key(name)
    }

    /// Called with every [`NodeEvent`], from the node's threads.
    pub fn observer(mut self, observer: impl Fn(&NodeEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Joins the fleet as `name` and starts firing the timers of the shards it gets.
    pub fn start(self, options: &ConnectOptions, name: &str) -> Result<Runner> {
        let s = self.settings;
        if s.ttl < MIN_TTL
            || s.window < s.ttl / 2
            || s.poll.is_zero()
            || s.batch < 1
            || s.lead >= s.ttl / 2
        {
            return Err(FleetError::Invalid(format!("runner settings {s:?}")));
        }
        // A server that accepts nothing is an error after a TTL (at least a few seconds: a
        // loaded machine took over a second to answer a short test TTL's reconnect), not
        // a wait without end. Leases, not connection attempts, stop the firing.
        // Every connection of the node (its lease ticks, claims, acks, writes) is ended by the
        // server after a TTL idle inside a transaction: a node stopped inside one would keep
        // the shard rows it fenced locked, and no other node could take its shards.
        let options = &options
            .with_connect_timeout(s.ttl.max(LEAST_CONNECT_TIMEOUT))
            .with_idle_transaction_limit(s.ttl);
        let node = Node::join(options.connect()?, name, s.ttl)?;
        let runtime = Arc::new(
            Runtime::<BoxTask>::new(Config::default())
                .map_err(|e| FleetError::Invalid(format!("the wheel: {}", e.message())))?,
        );
        let state = Arc::new(State {
            name: name.to_owned(),
            options: options.clone(),
            settings: s,
            handlers: self.handlers,
            observer: self.observer,
            leases: Mutex::new(Leases::default()),
            wake: Arc::new(Wake::default()),
            stop: AtomicBool::new(false),
            unsure: AtomicBool::new(false),
            delivered: Mutex::default(),
            ahead: Mutex::default(),
            writer: Writer::new(options.clone(), s.buffer),
        });
        let firer_client = options.connect()?;
        let app = Mutex::new(options.connect()?);
        // Every connection before the first thread: a join refused midway leaves none running.
        let listener_client = match s.listen {
            true => {
                let mut client = options.connect()?;
                client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
                Some(client)
            }
            false => None,
        };
        let driver = {
            let (state, runtime) = (Arc::clone(&state), Arc::clone(&runtime));
            std::thread::Builder::new()
                .name("timerwheel-fleet-driver".into())
                .spawn(move || drive(&state, &runtime, node))
                .map_err(|e| FleetError::Invalid(format!("a thread: {e}")))?
        };
        let firer = {
            let (state, runtime) = (Arc::clone(&state), Arc::clone(&runtime));
            std::thread::Builder::new()
                .name("timerwheel-fleet-firer".into())
                .spawn(move || fire_loop(&state, &runtime, firer_client))
                .map_err(|e| FleetError::Invalid(format!("a thread: {e}")))?
        };
        let listener = match listener_client {
            Some(client) => {
                let (state, runtime) = (Arc::clone(&state), Arc::clone(&runtime));
                let spawned = std::thread::Builder::new()
                    .name("timerwheel-fleet-listener".into())
                    .spawn(move || listen(&state, &runtime, client));
                Some(spawned.map_err(|e| FleetError::Invalid(format!("a thread: {e}")))?)
            }
            None => None,
        };
        Ok(Runner {
            state,
            runtime,
            app,
            driver: Some(driver),
            firer: Some(firer),
            listener,
        })
    }
}

/// A running fleet node. [`leave`](Self::leave) hands its shards over at once; dropping it
/// leaves too (errors ignored).
pub struct Runner {
    state: Arc<State>,
    runtime: Arc<Runtime<BoxTask>>,
    app: Mutex<Client>,
    driver: Option<JoinHandle<Node>>,
    firer: Option<JoinHandle<()>>,
    listener: Option<JoinHandle<()>>,
}

impl Runner {
    /// A builder: settings and handlers, then start.
    pub fn builder() -> RunnerBuilder {
        RunnerBuilder::new()
    }

    /// Acknowledges `tokens`, shard by shard: a shard whose lease moved past a token's epoch
    /// refuses its tokens (they are delivered again by its new owner); returns how many
    /// were acknowledged, or the first refusal once every shard was tried.
    pub fn ack(&self, tokens: &[FleetToken]) -> Result<u64> {
        let mut app = lock(&self.app);
        if app.is_closed() {
            *app = self.state.options.connect()?;
        }
        let acked = self.state.ack_by_shard(&mut app, tokens);
        if acked.is_err() && app.is_closed() {
            // The server restarted since the connection's last use: an ack is by token
            // (once however often it is made), so once more on a new connection.
            *app = self.state.options.connect()?;
            return self.state.ack_by_shard(&mut app, tokens);
        }
        acked
    }

    /// Adds `timer` (see [`crate::changes`]: written, or buffered while PostgreSQL does not
    /// answer, or refused past the buffer's bound).
    pub fn add(&self, timer: &NewTimer<'_>) -> Result<Status> {
        self.change(Change::add(timer))
    }

    /// Moves the next deadline of the timer (key, name) to `due_ms`, as [`Runner::add`].
    pub fn reset(&self, key: Key, name: &str, due_ms: i64) -> Result<Status> {
        let name = name.to_owned();
        self.change(Change::Reset { key, name, due_ms })
    }

    /// Removes the timer (key, name), as [`Runner::add`].
    pub fn delete(&self, key: Key, name: &str) -> Result<Status> {
        let name = name.to_owned();
        self.change(Change::Delete { key, name })
    }

    /// Writes a change: see [`crate::changes`].
    pub fn change(&self, change: Change) -> Result<Status> {
        self.state
            .writer
            .apply(change, &|event| self.state.report(event))
    }

    /// Writes the buffered changes now: [`FleetError::Unreachable`] (with how many wait)
    /// when PostgreSQL does not answer.
    pub fn flush_changes(&self) -> Result<()> {
        self.state.writer.flush(&|event| self.state.report(event))
    }

    /// Whether a handler is registered as `name` on this node.
    pub fn has_handler(&self, name: &str) -> bool {
        self.state.handlers.contains_key(name)
    }

    /// Changes waiting in the buffer.
    pub fn pending_changes(&self) -> usize {
        self.state.writer.pending()
    }

    /// The shards it may claim now, with their epochs: none once the TTL less the lead
    /// ([`Settings::lead`]) passed since its last renewal.
    pub fn firing(&self) -> Vec<(i32, i64)> {
        self.state.firing()
    }

    /// Wake-ups in its wheel now (one per due millisecond within the window).
    pub fn wake_ups(&self) -> usize {
        lock(&self.state.wake.scheduled).len()
    }

    /// The wheel it runs on.
    pub fn runtime(&self) -> &Runtime<BoxTask> {
        &self.runtime
    }

    /// Writes the changes still buffered, stops firing and hands every shard back (free at
    /// once for the others). When PostgreSQL does not answer it leaves all the same and
    /// returns the flush's error: what stayed in the buffer is lost. To keep it, call
    /// [`flush_changes`](Self::flush_changes) until it succeeds first, as the bindings'
    /// leave does (they refuse to leave while changes wait).
    pub fn leave(mut self) -> Result<()> {
        let flushed = self.flush_changes();
        let left = self.stop().map_or(Ok(()), |node| self.state.leave(node));
        flushed.and(left)
    }

    fn stop(&mut self) -> Option<Node> {
        self.state.stop.store(true, Ordering::SeqCst);
        self.state.wake.poke();
        for thread in [self.firer.take(), self.listener.take()]
            .into_iter()
            .flatten()
        {
            let _ = thread.join();
        }
        self.driver.take().and_then(|driver| driver.join().ok())
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(node) = self.stop() {
            let _ = self.state.leave(node);
        }
    }
}

/// The leases as the driver last renewed them.
#[derive(Default)]
struct Leases {
    held: BTreeMap<i32, i64>,
    /// When the last renewal began (its leases end a TTL after a moment later than this).
    renewed_at: Option<Instant>,
}

/// The wheel's wake-ups: one per due millisecond, and the firer's signal.
#[derive(Default)]
struct Wake {
    scheduled: Mutex<BTreeSet<i64>>,
    due: Mutex<bool>,
    signal: Condvar,
}

impl Wake {
    fn poke(&self) {
        *lock(&self.due) = true;
        self.signal.notify_one();
    }

    /// Waits for a poke or `timeout`; whether it was poked (and clears it).
    fn wait(&self, timeout: Duration) -> bool {
        let due = lock(&self.due);
        let (mut due, _) = self
            .signal
            .wait_timeout_while(due, timeout, |due| !*due)
            .unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *due)
    }
}

/// What the node's threads share.
struct State {
    name: String,
    options: ConnectOptions,
    settings: Settings,
    handlers: HashMap<String, FleetHandler>,
    observer: Option<Observer>,
    leases: Mutex<Leases>,
    wake: Arc<Wake>,
    stop: AtomicBool,
    /// Set when a claim or an ack failed midway: whether it committed is unknown, so the
    /// firer reads the unacknowledged fires of its shards again.
    unsure: AtomicBool,
    /// The fires handed to a handler and not acknowledged yet, under the epochs they were
    /// delivered with, and whether the handler said [`Ack::Now`]: a fire read again under
    /// the same epoch (after a broken connection) is acknowledged again if so, and never
    /// handed to its handler twice. Only the leases it holds: bounded by their fires.
    delivered: Mutex<HashMap<FleetToken, bool>>,
    /// The fires claimed (or read again) and not handed over yet, by due time: the firer
    /// hands each over once it is due.
    ahead: Mutex<BTreeMap<(i64, FleetToken), Fire>>,
    /// The changes made through the node, and their buffer.
    writer: Writer,
}

impl State {
    fn report(&self, event: NodeEvent) {
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn lead_ms(&self) -> i64 {
        self.settings.lead.as_millis() as i64
    }

    /// The leases to claim under: none once the TTL less the lead passed since the last
    /// renewal began (what it claims falls due within the lead).
    fn firing(&self) -> Vec<(i32, i64)> {
        let leases = lock(&self.leases);
        match leases.renewed_at {
            Some(at) if at.elapsed() + self.settings.lead < self.settings.ttl => {
                leases.held.iter().map(|(s, e)| (*s, *e)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Whether the lease of `token` is still the node's: held under its epoch, and less than
    /// the TTL since the last renewal began.
    fn holds(&self, token: &FleetToken) -> bool {
        let leases = lock(&self.leases);
        let live = leases
            .renewed_at
            .is_some_and(|at| at.elapsed() < self.settings.ttl);
        live && leases.held.get(&token.shard) == Some(&token.shard_epoch)
    }

    /// Forgets `shard` at once (a claim found its lease moved); the next tick confirms it.
    fn forget(&self, shard: i32) {
        lock(&self.leases).held.remove(&shard);
    }

    /// Keeps `fires` for the firer, which hands each over at its due time.
    fn queue(&self, fires: Vec<Fire>) {
        let mut ahead = lock(&self.ahead);
        for fire in fires {
            ahead.insert((fire.token.occurrence_ms, fire.token.clone()), fire);
        }
    }

    /// How long until the earliest fire kept falls due (`None` when none is kept).
    fn until_next_due(&self) -> Option<Duration> {
        let ahead = lock(&self.ahead);
        let ((due, _), _) = ahead.first_key_value()?;
        Some(
            from_ms(*due)
                .duration_since(SystemTime::now())
                .unwrap_or_default(),
        )
    }

    /// The fires kept that are due by this node's wall clock, earliest first.
    fn take_due(&self) -> Vec<Fire> {
        let now = now_ms();
        let mut ahead = lock(&self.ahead);
        let mut due = Vec::new();
        while let Some(entry) = ahead.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        due
    }

    /// Hands the fires now due to their handlers, each only while its lease is the node's
    /// (one that is not stays unacknowledged for the shard's owner, and the node reads its
    /// shards' unacknowledged fires again); returns the tokens to acknowledge.
    fn hand_over_due(&self) -> Vec<FleetToken> {
        let mut done = Vec::new();
        for fire in self.take_due() {
            if !self.holds(&fire.token) {
                self.unsure.store(true, Ordering::SeqCst);
            } else if self.hand_over(&fire) {
                done.push(fire.token);
            }
        }
        done
    }

    /// Hands `fire` to its handler, once per epoch; whether to acknowledge it: its handler
    /// said [`Ack::Now`], now or at an earlier delivery.
    fn hand_over(&self, fire: &Fire) -> bool {
        let earlier = lock(&self.delivered).get(&fire.token).copied();
        match (earlier, self.handlers.get(&fire.token.name)) {
            (Some(acked_now), _) => acked_now,
            (None, Some(handler)) => {
                let acked_now = handler(fire) == Ack::Now;
                lock(&self.delivered).insert(fire.token.clone(), acked_now);
                acked_now
            }
            (None, None) => {
                self.report(NodeEvent::Error(format!(
                    "no handler is registered as {:?}: the fire stays unacknowledged",
                    fire.token.name
                )));
                false
            }
        }
    }

    /// Acknowledges `tokens` now ([`Self::ack_by_shard`]); a failure other than a refusal
    /// makes the node unsure of what committed.
    fn ack_now(&self, client: &mut Client, tokens: &[FleetToken]) {
        if let Err(error) = self.ack_by_shard(client, tokens) {
            if !matches!(error, FleetError::Fenced { .. }) {
                self.unsure.store(true, Ordering::SeqCst);
                self.report(NodeEvent::Error(error.to_string()));
            }
        }
    }

    /// `tokens` were acknowledged (`n` fire records deleted) along with a claim.
    fn acked_with_claim(&self, tokens: &[FleetToken], n: u64) {
        if !tokens.is_empty() {
            self.settled(tokens);
            self.report(NodeEvent::Acked(n));
        }
    }

    /// Acknowledges `tokens` in one transaction; when a shard refuses, shard by shard, so
    /// that the others' are acknowledged (one transaction per shard only then).
    fn ack_by_shard(&self, client: &mut Client, tokens: &[FleetToken]) -> Result<u64> {
        if tokens.is_empty() {
            return Ok(0);
        }
        match ack(client, &self.name, tokens) {
            Ok(n) => {
                self.settled(tokens);
                self.report(NodeEvent::Acked(n));
                return Ok(n);
            }
            Err(FleetError::Fenced { .. }) => {}
            Err(other) => return Err(other),
        }
        let mut by_shard: BTreeMap<i32, Vec<FleetToken>> = BTreeMap::new();
        for token in tokens {
            by_shard.entry(token.shard).or_default().push(token.clone());
        }
        let (mut acked, mut refused) = (0, None);
        for group in by_shard.values() {
            match ack(client, &self.name, group) {
                Ok(n) => {
                    acked += n;
                    self.settled(group);
                    self.report(NodeEvent::Acked(n));
                }
                Err(FleetError::Fenced { shard, epoch }) => {
                    self.settled(group); // the shard's next owner delivers them again
                    self.report(NodeEvent::AckRefused(shard, epoch));
                    refused.get_or_insert(FleetError::Fenced { shard, epoch });
                }
                Err(other) => return Err(other),
            }
        }
        refused.map_or(Ok(acked), Err)
    }

    /// Forgets `tokens` delivered: acknowledged, or refused for good.
    fn settled(&self, tokens: &[FleetToken]) {
        let mut delivered = lock(&self.delivered);
        for token in tokens {
            delivered.remove(token);
        }
    }

    /// The node's planned leave, over a new connection if the driver's broke.
    fn leave(&self, node: Node) -> Result<()> {
        node.leave_reconnecting(|| self.options.connect())
    }

    /// A new connection, every 100 ms until the server answers (or the node stops).
    fn reconnect(&self, mut reconnect: impl FnMut(Client) -> Result<()>) {
        while !self.stopped() {
            std::thread::sleep(Duration::from_millis(100));
            match self.options.connect().and_then(&mut reconnect) {
                Ok(()) => return,
                Err(error) => self.report(NodeEvent::Error(error.to_string())),
            }
        }
    }
}

/// The driver: ticks the leases, takes over, pages the window in; returns the node at stop.
fn drive(state: &State, runtime: &Runtime<BoxTask>, mut node: Node) -> Node {
    let mut window = Window::default();
    while !state.stopped() {
        let began = Instant::now();
        match node.tick() {
            Ok(change) => {
                let acquired = change.acquired.clone();
                renewed(state, &node, change, began);
                take_over(state, &mut node, &acquired);
                window.page_in(state, runtime, &mut node, &acquired);
                // The server answers: the changes buffered while it did not are written,
                // for half a renew interval at most (the rest at the next tick).
                let budget = node.renew_interval() / 2;
                state.writer.flush_for(budget, &|event| state.report(event));
            }
            Err(error) => {
                state.report(NodeEvent::Error(error.to_string()));
                if node.client().is_closed() {
                    state.reconnect(|client| node.reconnect(client));
                    state.report(NodeEvent::Reconnected);
                }
            }
        }
        let next = began + node.renew_interval();
        while !state.stopped() && Instant::now() < next {
            std::thread::sleep(Duration::from_millis(10).min(next - Instant::now()));
        }
    }
    node
}

/// Publishes a tick's leases and reports what changed.
fn renewed(state: &State, node: &Node, change: Rebalance, began: Instant) {
    {
        let mut leases = lock(&state.leases);
        leases.held = node.held().clone();
        leases.renewed_at = Some(began);
        // A fire of a lease it no longer holds is delivered again by the shard's owner.
        let held = &leases.held;
        lock(&state.delivered).retain(|t, _| held.get(&t.shard) == Some(&t.shard_epoch));
    }
    for (shard, epoch) in change.acquired {
        state.report(NodeEvent::Acquired(shard, epoch));
    }
    change
        .released
        .into_iter()
        .for_each(|s| state.report(NodeEvent::Released(s)));
    change
        .lost
        .into_iter()
        .for_each(|s| state.report(NodeEvent::Lost(s)));
}

/// Delivers again, under the new epochs, the unacknowledged fires of the shards acquired.
fn take_over(state: &State, node: &mut Node, acquired: &[(i32, i64)]) {
    for &(shard, epoch) in acquired {
        match take_over_fires(node.client(), &state.name, shard, epoch) {
            Ok(fires) => {
                state.queue(fires);
                state.wake.poke();
            }
            Err(error) => {
                state.unsure.store(true, Ordering::SeqCst);
                state.report(NodeEvent::Error(error.to_string()));
            }
        }
    }
}

/// How far the window is loaded: every due millisecond of the shards held before `edge` has
/// a wake-up (or had one that ran).
#[derive(Default)]
struct Window {
    edge: Option<i64>,
}

impl Window {
    /// Loads the shards just acquired up to the edge, then every shard up to now + window.
    fn page_in(
        &mut self,
        state: &State,
        runtime: &Runtime<BoxTask>,
        node: &mut Node,
        acquired: &[(i32, i64)],
    ) {
        let until = now_ms().saturating_add(state.settings.window.as_millis() as i64);
        let held: Vec<(i32, i64)> = node.held().iter().map(|(s, e)| (*s, *e)).collect();
        let edge = match self.edge {
            Some(edge) => {
                load(state, runtime, node, acquired, (i64::MIN, edge));
                edge
            }
            None => i64::MIN,
        };
        self.edge = Some(load(state, runtime, node, &held, (edge, until)));
    }
}

/// Schedules a wake-up for each due millisecond of `shards` in `range`; returns how far
/// it got (the range's end, or short of it when the limit cut the read).
fn load(
    state: &State,
    runtime: &Runtime<BoxTask>,
    node: &mut Node,
    shards: &[(i32, i64)],
    (from, until): (i64, i64),
) -> i64 {
    if shards.is_empty() {
        return until;
    }
    let limit = state.settings.window.as_millis().max(1) as i64;
    let points = match due_points(node.client(), &state.name, shards, (from, until), limit) {
        Ok(points) => points,
        Err(error) => {
            state.report(NodeEvent::Error(error.to_string()));
            return from;
        }
    };
    let reached = match points.last() {
        Some(last) if points.len() as i64 == limit => last + 1,
        _ => until,
    };
    schedule(state, runtime, points);
    reached
}

/// A wake-up in the wheel at each of `points` (ms) that has none yet.
fn schedule(state: &State, runtime: &Runtime<BoxTask>, points: impl IntoIterator<Item = i64>) {
    let mut scheduled = lock(&state.wake.scheduled);
    for ms in points {
        if scheduled.insert(ms) {
            let wake = Arc::clone(&state.wake);
            let task: BoxTask = Box::new(move |_| {
                lock(&wake.scheduled).remove(&ms);
                wake.poke();
            });
            if runtime
                .add_at(from_ms(ms.saturating_sub(state.lead_ms())), task)
                .is_err()
            {
                scheduled.remove(&ms);
            }
        }
    }
}

/// The listener: an add or a reset committed by any node for a shard it fires, due within
/// the window, gets a wake-up as soon as its notification comes. After a reconnect the
/// notifications sent meanwhile are gone: it wakes the firer, whose claim finds what is due
/// (and the poll what falls due later).
fn listen(state: &State, runtime: &Runtime<BoxTask>, mut client: Client) {
    while !state.stopped() {
        let heard = next_notices(&mut client, Duration::from_millis(100));
        match heard {
            Ok(notices) => {
                let horizon = now_ms().saturating_add(state.settings.window.as_millis() as i64);
                let firing: BTreeSet<i32> = state.firing().iter().map(|(s, _)| *s).collect();
                let points = notices
                    .into_iter()
                    .filter(|(shard, due)| firing.contains(shard) && *due < horizon)
                    .map(|(_, due)| due);
                schedule(state, runtime, points);
            }
            Err(error) => {
                state.report(NodeEvent::Error(error.to_string()));
                if client.is_closed() {
                    state.reconnect(|mut c| {
                        c.batch_execute(&format!("LISTEN {CHANNEL}"))?;
                        client = c;
                        Ok(())
                    });
                    state.wake.poke();
                }
            }
        }
    }
}

/// The (shard, due_ms) notifications: the first to come within `timeout`, with those that
/// came along with it (none waits for a later one).
fn next_notices(client: &mut Client, timeout: Duration) -> Result<Vec<(i32, i64)>> {
    let mut incoming = client.notifications();
    let Some(first) = incoming.timeout_iter(timeout).next()? else {
        return Ok(Vec::new());
    };
    let mut notices = vec![first];
    let mut pending = incoming.iter();
    while let Some(notice) = pending.next()? {
        notices.push(notice);
    }
    Ok(notices
        .iter()
        .filter_map(|notice| {
            let (shard, due) = notice.payload().split_once(' ')?;
            Some((shard.parse().ok()?, due.parse().ok()?))
        })
        .collect())
}

/// The firer: hands each fire over at its due time, and claims what falls due within the
/// lead whenever the wheel wakes it, at least every `poll`. The acknowledgements of what it
/// handed over go with the claim, or alone when it does not claim.
fn fire_loop(state: &State, runtime: &Runtime<BoxTask>, mut client: Client) {
    let mut claimed_at = Instant::now();
    while !state.stopped() {
        let poll = state.settings.poll.saturating_sub(claimed_at.elapsed());
        let poked = state
            .wake
            .wait(state.until_next_due().map_or(poll, |d| d.min(poll)));
        let acks = state.hand_over_due();
        let claiming = poked || claimed_at.elapsed() >= state.settings.poll;
        let done = redeliver_if_unsure(state, &mut client).and_then(|()| match claiming {
            true => {
                claimed_at = Instant::now();
                claim_all(state, runtime, &mut client, acks)
            }
            false => {
                state.ack_now(&mut client, &acks);
                Ok(())
            }
        });
        if let Err(error) = done {
            state.unsure.store(true, Ordering::SeqCst);
            state.report(NodeEvent::Error(error.to_string()));
            if client.is_closed() {
                state.reconnect(|c| {
                    client = c;
                    Ok(())
                });
            }
        }
    }
}

/// After a claim or an ack that failed midway, delivers the unacknowledged fires of the
/// shards it holds again (with their tokens: at least once).
fn redeliver_if_unsure(state: &State, client: &mut Client) -> Result<()> {
    let held = state.firing();
    if held.is_empty() || !state.unsure.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    match unacked_fires(client, &state.name, &held) {
        Ok(fires) => {
            state.queue(fires);
            Ok(())
        }
        // A shard moved on (its new owner delivers its fires): the others, once it is gone.
        Err(FleetError::Fenced { shard, .. }) => {
            state.forget(shard);
            state.unsure.store(true, Ordering::SeqCst);
            Ok(())
        }
        Err(other) => Err(other),
    }
}

/// Claims in batches until nothing of the shards it may fire falls due within the lead,
/// handing over after each batch what is due already. `acks` (of fires handed over) and
/// those of each batch are acknowledged in the next batch's transaction (one fence for
/// both), the last ones alone. A periodic timer's next point gets its wake-up here: it
/// was not in the store when its part of the window was paged in.
fn claim_all(
    state: &State,
    runtime: &Runtime<BoxTask>,
    client: &mut Client,
    mut acks: Vec<FleetToken>,
) -> Result<()> {
    let mut held = state.firing();
    let claimed = loop {
        if held.is_empty() || state.stopped() {
            break Ok(());
        }
        // Acks of a lease it does not claim under go alone (refused if it moved on).
        let (kept, stray): (Vec<_>, Vec<_>) = acks
            .into_iter()
            .partition(|t| held.contains(&(t.shard, t.shard_epoch)));
        state.ack_now(client, &stray);
        acks = kept;
        let claim = Claim {
            now_ms: now_ms(),
            lead_ms: state.lead_ms(),
            limit: state.settings.batch,
            missed: state.settings.missed,
        };
        match ack_and_claim(client, &state.name, &held, &acks, claim) {
            Ok((acked, fires)) => {
                state.acked_with_claim(&acks, acked);
                let horizon = now_ms().saturating_add(state.settings.window.as_millis() as i64);
                let next = fires.iter().filter_map(|f| f.next_ms);
                schedule(state, runtime, next.filter(|ms| *ms < horizon));
                let full = fires.len() as i64 == state.settings.batch;
                state.queue(fires);
                acks = state.hand_over_due();
                if !full {
                    break Ok(());
                }
            }
            // Its acks go alone at the next pass, or at the end (and are refused: its next
            // owner delivers them again).
            Err(FleetError::Fenced { shard, .. }) => {
                state.forget(shard);
                held.retain(|(s, _)| *s != shard);
            }
            Err(other) => break Err(other),
        }
    };
    state.ack_now(client, &acks);
    claimed
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn from_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}
