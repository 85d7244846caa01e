//! A private PostgreSQL cluster for tests, benchmarks and the demo: `initdb` in a temporary
//! directory, `pg_ctl` on a free loopback port, one database; stopped and removed when the
//! [`TestServer`] is dropped, also when a test fails or panics (the drop runs on unwind).
//!
//! The server binaries come from the Debian packages that `make deps` installs
//! (`/usr/lib/postgresql/<version>/bin`, or `initdb` and `pg_ctl` on `PATH`). PostgreSQL
//! refuses to run as root: as root the cluster runs as the `postgres` system user.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// The database every [`TestServer`] creates.
pub const DATABASE: &str = "timerwheel";
/// Its superuser (trust authentication on loopback: a test cluster only).
pub const USER: &str = "timerwheel";

/// A running private cluster; dropping it stops the server and removes its directory.
pub struct TestServer {
    dir: TempDir,
    port: u16,
    bin: PathBuf,
}

impl TestServer {
    /// Creates, starts and prepares a cluster; panics with the tool's output if a step
    /// fails (a test cannot go on without it).
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// As [`start`](Self::start), with `name=value` server settings (`ssl=on`, ...).
    pub fn start_with(settings: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("timerwheel-pg-")
            .tempdir()
            .expect("a temporary directory");
        let server = TestServer {
            port: free_port(),
            bin: server_bin(),
            dir,
        };
        server.give_to_server_user(server.dir.path());
        server.run("initdb", &server.initdb_args());
        server.configure(settings);
        server.run("pg_ctl", &server.pg_ctl_args("start"));
        server.create_database();
        server
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A key=value connection string to its database.
    pub fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user={USER} dbname={DATABASE}",
            self.port
        )
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Stops the server at once (`immediate`: as a crash would) and starts it again.
    pub fn restart(&self) {
        self.stop();
        self.start_again();
    }

    /// Stops the server at once (`immediate`: as a crash would); its port refuses
    /// connections until [`start_again`](Self::start_again).
    pub fn stop(&self) {
        self.run("pg_ctl", &self.pg_ctl_args("stop"));
    }

    /// Starts the stopped server again (after its crash recovery).
    pub fn start_again(&self) {
        self.run("pg_ctl", &self.pg_ctl_args("start"));
    }

    fn initdb_args(&self) -> Vec<String> {
        let data = self.data_dir().display().to_string();
        [
            "-D",
            &data,
            "-A",
            "trust",
            "-U",
            USER,
            "-E",
            "UTF8",
            "--no-sync",
        ]
        .map(String::from)
        .to_vec()
    }

    fn pg_ctl_args(&self, action: &str) -> Vec<String> {
        let data = self.data_dir().display().to_string();
        let log = self.dir.path().join("server.log").display().to_string();
        let mut args: Vec<String> = ["-D", &data, "-l", &log, "-w", "-t", "60", action]
            .map(String::from)
            .to_vec();
        if action == "stop" {
            args.extend(["-m", "immediate"].map(String::from));
        }
        args
    }

    /// Loopback only, the chosen port, a socket directory inside the cluster's directory,
    /// and `settings`.
    fn configure(&self, settings: &[&str]) {
        let mut conf = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
             fsync = off\nmax_connections = 200\n",
            self.port,
            self.dir.path().display()
        );
        for setting in settings {
            conf.push_str(setting);
            conf.push('\n');
        }
        let path = self.data_dir().join("postgresql.conf");
        let mut text = std::fs::read_to_string(&path).expect("postgresql.conf");
        text.push_str(&conf);
        std::fs::write(&path, text).expect("postgresql.conf written");
    }

    fn create_database(&self) {
        let conninfo = format!(
            "host=127.0.0.1 port={} user={USER} dbname=postgres",
            self.port
        );
        let mut client =
            postgres::Client::connect(&conninfo, postgres::NoTls).expect("the test server");
        client
            .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
            .expect("CREATE DATABASE");
    }

    /// Runs a server tool, as the `postgres` user when we are root.
    fn run(&self, tool: &str, args: &[String]) {
        let program = self.bin.join(tool);
        let output = if is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&program)
                .args(args)
                .output()
        } else {
            Command::new(&program).args(args).output()
        };
        let output = output.unwrap_or_else(|e| panic!("{}: {e}", program.display()));
        check(tool, &output, &self.dir.path().join("server.log"));
    }

    fn give_to_server_user(&self, dir: &Path) {
        if is_root() {
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir)
                .status()
                .expect("chown");
            assert!(status.success(), "chown postgres {}", dir.display());
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let program = self.bin.join("pg_ctl");
        let args = self.pg_ctl_args("stop");
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        // The directory goes with `self.dir` after this; a failed stop leaves nothing to do.
        let _ = command.args(args).output();
    }
}

fn check(tool: &str, output: &Output, log: &Path) {
    if !output.status.success() {
        panic!(
            "{tool} failed ({}):\n{}{}\nserver log:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
}

/// The directory of `initdb` and `pg_ctl`: `$TW_PG_BIN`, else the newest
/// `/usr/lib/postgresql/*/bin`, else the one on `PATH`.
fn server_bin() -> PathBuf {
    find_server_bin().expect("PostgreSQL's initdb not found: run `make deps`")
}

/// Whether PostgreSQL's server programs are installed (`TW_PG_BIN`, a Debian version
/// directory, or `initdb` on PATH): a [`TestServer`] can start.
pub fn server_installed() -> bool {
    find_server_bin().is_some()
}

fn find_server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TW_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort();
    if let Some(bin) = versions.pop() {
        return Some(bin);
    }
    which("initdb").and_then(|p| p.parent().map(Path::to_path_buf))
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(tool))
        .find(|path| path.exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}
