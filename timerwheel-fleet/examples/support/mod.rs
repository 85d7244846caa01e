//! What the benchmarks share: a connection to the private server, `fleet-node` processes,
//! the wall clock in ms.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::ConnectOptions;

/// Starts `fleet-node NAME TTL_MS` (built beside the examples) on `server`; its stdin piped
/// (its end: a planned leave), its stdout to `stdout`.
pub fn spawn_node(server: &TestServer, name: &str, ttl: Duration, stdout: Stdio) -> Child {
    let bin = std::env::current_exe()
        .unwrap()
        .parent()
        .and_then(|examples| examples.parent())
        .unwrap()
        .join("fleet-node");
    Command::new(bin)
        .args([name, &ttl.as_millis().to_string()])
        .env("TW_FLEET_CONNINFO", server.conninfo())
        .stdin(Stdio::piped())
        .stdout(stdout)
        .spawn()
        .expect("fleet-node (cargo build --release -p timerwheel-fleet --bins)")
}

pub fn connect(server: &TestServer) -> postgres::Client {
    ConnectOptions::parse(&server.conninfo())
        .and_then(|o| o.connect())
        .expect("the server")
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
