//! A private PostgreSQL cluster for the bindings' tests (Python, Go): started with the fleet
//! schema, its connection string printed on stdout, stopped and removed when stdin ends
//! (the test closed it, or exited).
//!
//! Usage: `fleet-test-server [SHARDS]` (4 by default). Prints one line, `conninfo STRING`,
//! once the server answers; or, when PostgreSQL is not installed, `unavailable REASON` and
//! exits with status 3 (the tests skip with that reason). Then each line on stdin is one
//! SQL statement (the tests' view of the tables, and what another node would do), answered
//! by one line: `ok VALUE` (the first column of the first row, empty if none) or `error
//! MESSAGE`; or `\stop` (the server stops at once, as a crash would) and `\start` (it
//! starts again), answered `ok `.

use std::io::{BufRead, Write};

use postgres::{Client, SimpleQueryMessage};

use timerwheel_fleet::server::{server_installed, TestServer};
use timerwheel_fleet::{create_schema, ConnectOptions};

fn main() {
    let shards = match std::env::args().nth(1).map(|n| n.parse::<i32>()) {
        None => 4,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: fleet-test-server [SHARDS]");
            std::process::exit(2);
        }
    };
    if !server_installed() {
        println!("unavailable PostgreSQL's initdb not found (make deps installs it)");
        std::process::exit(3);
    }
    let server = TestServer::start();
    let connected = connect(&server);
    let mut client = match connected.and_then(|mut c| create_schema(&mut c, shards).map(|()| c)) {
        Ok(client) => client,
        Err(error) => {
            eprintln!("fleet-test-server: the schema: {error}");
            std::process::exit(1);
        }
    };
    println!("conninfo {}", server.conninfo());
    // Until the test is done with it: its end of the pipe closes when it exits, too.
    let mut out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(statement) = line else { break };
        let answer = match statement.as_str() {
            "\\stop" => {
                server.stop();
                "ok ".to_owned()
            }
            "\\start" => {
                server.start_again();
                match connect(&server) {
                    Ok(fresh) => {
                        client = fresh;
                        "ok ".to_owned()
                    }
                    Err(error) => format!("error {error}"),
                }
            }
            _ => run(&mut client, &statement),
        };
        if writeln!(out, "{}", answer.replace('\n', " ")).is_err() || out.flush().is_err() {
            break;
        }
    }
    drop(server);
}

fn connect(server: &TestServer) -> timerwheel_fleet::Result<Client> {
    ConnectOptions::parse(&server.conninfo()).and_then(|o| o.connect())
}

/// `ok VALUE` or `error MESSAGE` for one statement.
fn run(client: &mut Client, statement: &str) -> String {
    match client.simple_query(statement) {
        Ok(messages) => {
            let first = messages.iter().find_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("").to_owned()),
                _ => None,
            });
            format!("ok {}", first.unwrap_or_default())
        }
        Err(error) => format!("error {}", timerwheel_fleet::FleetError::from(error)),
    }
}
