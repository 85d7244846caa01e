//! One node of a fleet, as a process (a [`Runner`]): the tests and the benchmark start
//! several, kill, stop and resume them. It reports each step on stdout, one line each:
//!
//! ```text
//! acquired SHARD EPOCH | released SHARD | lost SHARD
//! fire KEY NAME OCCURRENCE_MS VERSION SHARD EPOCH LATE_US
//! ack ok COUNT | ack refused SHARD EPOCH
//! error MESSAGE | reconnected
//! ```
//!
//! Usage: `fleet-node NAME TTL_MS [--hold-acks] [--poll-ms MS] [--window-ms MS]`, the
//! connection string in `TW_FLEET_CONNINFO` (never on the command line, where `ps` shows
//! it). It handles the timers named `charge` and `idle`: a fire is reported, and
//! acknowledged at once, or with `--hold-acks` when a line `ack` comes on stdin. `LATE_US`
//! is how long after its occurrence the handler got it, on this node's wall clock. End of
//! stdin: a planned leave.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use timerwheel_core::durable::Ack;
use timerwheel_fleet::{ConnectOptions, Fire, FleetError, FleetToken, NodeEvent, Runner, Settings};

/// The timer names it handles.
const HANDLERS: [&str; 2] = ["charge", "idle"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: fleet-node NAME TTL_MS [--hold-acks] [--poll-ms MS] [--window-ms MS]");
        std::process::exit(2);
    }
    let settings = Settings {
        ttl: Duration::from_millis(args[2].parse().expect("TTL_MS")),
        poll: option_ms(&args, "--poll-ms").unwrap_or(Settings::default().poll),
        window: option_ms(&args, "--window-ms").unwrap_or(Settings::default().window),
        ..Settings::default()
    };
    let hold_acks = args.iter().any(|a| a == "--hold-acks");
    if let Err(error) = run(&args[1], settings, hold_acks) {
        say(&format!("error {error}"));
        std::process::exit(1);
    }
}

fn option_ms(args: &[String], flag: &str) -> Option<Duration> {
    let at = args.iter().position(|a| a == flag)?;
    let ms = args.get(at + 1)?.parse().expect("a number of ms");
    Some(Duration::from_millis(ms))
}

fn run(name: &str, settings: Settings, hold_acks: bool) -> Result<(), FleetError> {
    let conninfo = std::env::var("TW_FLEET_CONNINFO").unwrap_or_default();
    let options = ConnectOptions::parse(&conninfo)?;
    let held: Arc<Mutex<Vec<FleetToken>>> = Arc::default();
    let mut builder = Runner::builder()
        .settings(settings)
        .observer(|event| say(&line_of(event)));
    for handler in HANDLERS {
        builder = builder.handler(handler, report_fire(hold_acks, Arc::clone(&held)));
    }
    let runner = builder.start(&options, name)?;
    for line in std::io::stdin().lock().lines() {
        if line.as_deref().is_ok_and(|l| l == "ack") {
            let tokens = std::mem::take(&mut *held.lock().unwrap());
            let _ = runner.ack(&tokens); // each shard's outcome is reported by the observer
        }
    }
    runner.leave()
}

/// The handler of each name: reports the fire; holds its token with `hold_acks`.
fn report_fire(
    hold_acks: bool,
    held: Arc<Mutex<Vec<FleetToken>>>,
) -> impl Fn(&Fire) -> Ack + Send + Sync + 'static {
    move |fire: &Fire| {
        let t = &fire.token;
        let late_us = wall_clock_us() - i128::from(t.occurrence_ms) * 1000;
        say(&format!(
            "fire {} {} {} {} {} {} {late_us}",
            t.key, t.name, t.occurrence_ms, t.version, t.shard, t.shard_epoch
        ));
        if hold_acks {
            held.lock().unwrap().push(t.clone());
            Ack::Later
        } else {
            Ack::Now
        }
    }
}

fn wall_clock_us() -> i128 {
    let since_epoch = std::time::UNIX_EPOCH.elapsed().unwrap_or_default();
    since_epoch.as_micros() as i128
}

fn line_of(event: &NodeEvent) -> String {
    match event {
        NodeEvent::Acquired(shard, epoch) => format!("acquired {shard} {epoch}"),
        NodeEvent::Released(shard) => format!("released {shard}"),
        NodeEvent::Lost(shard) => format!("lost {shard}"),
        NodeEvent::Acked(n) => format!("ack ok {n}"),
        NodeEvent::AckRefused(shard, epoch) => format!("ack refused {shard} {epoch}"),
        NodeEvent::Error(message) => format!("error {message}"),
        NodeEvent::Reconnected => "reconnected".into(),
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
