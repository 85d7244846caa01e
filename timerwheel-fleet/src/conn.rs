//! Connecting: a libpq-style connection string (key=value or URL) with its TLS settings
//! passed through, and errors that never repeat the string or its password.
//!
//! TLS, as libpq does it: `sslmode=disable` is plain text; `prefer` (the default) and
//! `require` encrypt without checking the certificate; `verify-ca` and `verify-full`
//! (key=value form) check it against `sslrootcert` (or the system's roots), `verify-full`
//! also the host name (the `tls` module). `sslcert`/`sslkey` (client certificates) are refused with a clear
//! error rather than ignored.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use postgres::config::SslMode;
use postgres::{Client, Config};

use crate::error::{describe, FleetError, Result};
use crate::tls::{self, Verify};

/// A parsed connection string. Its `Debug` shows no password.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    config: Config,
    verify: Verify,
    root_cert: Option<String>,
    /// Connection attempts given up at the timeout and still waiting for the server (all
    /// the clones of these options together).
    abandoned: Arc<AtomicUsize>,
}

/// At most this many attempts given up at the timeout wait for a paused server at once;
/// past it an attempt fails at once.
const MAX_ABANDONED: usize = 4;

impl ConnectOptions {
    /// Parses `conninfo`; an error names the problem, never the string's secrets.
    pub fn parse(conninfo: &str) -> Result<Self> {
        let mut verify = Verify::Nothing;
        let mut root_cert = None;
        let mut rest = Vec::new();
        if conninfo.contains("://") {
            rest.push(conninfo.to_owned());
        } else {
            for pair in conninfo.split_whitespace() {
                match pair.split_once('=') {
                    Some(("sslmode", "verify-ca")) => verify = Verify::Chain,
                    Some(("sslmode", "verify-full")) => verify = Verify::Full,
                    Some(("sslrootcert", path)) => root_cert = Some(path.to_owned()),
                    Some(("sslcert" | "sslkey", _)) => {
                        return Err(FleetError::Connect(
                            "client certificates (sslcert, sslkey) are not supported".into(),
                        ))
                    }
                    _ => rest.push(pair.to_owned()),
                }
            }
        }
        if verify != Verify::Nothing {
            rest.push("sslmode=require".into());
        }
        let config = Config::from_str(&rest.join(" "))
            .map_err(|e| FleetError::Connect(redact(&e.to_string(), conninfo)))?;
        Ok(Self {
            config,
            verify,
            root_cert,
            abandoned: Arc::default(),
        })
    }

    /// Whether the connection is to be encrypted at all.
    pub fn tls_required(&self) -> bool {
        self.config.get_ssl_mode() == SslMode::Require
    }

    /// These options with connection attempts cut off after `limit` (unless the string set
    /// a shorter `connect_timeout`): a server that does not answer (stopped, or its
    /// postmaster paused: the socket connects, the startup waits) is an error after
    /// `limit`, not a wait without end.
    pub fn with_connect_timeout(&self, limit: Duration) -> Self {
        let mut options = self.clone();
        if options
            .config
            .get_connect_timeout()
            .is_none_or(|set| *set > limit)
        {
            options.config.connect_timeout(limit);
        }
        options
    }

    /// These options with every session ended by the server once it sat `limit` idle inside
    /// a transaction (`idle_in_transaction_session_timeout`, added to the string's
    /// `options`): a node stopped inside a transaction (SIGSTOP, a long pause) holds the
    /// rows it read `FOR SHARE` (its fence) or updated, and another node's lease tick would
    /// wait on them for as long as it stays stopped.
    pub fn with_idle_transaction_limit(&self, limit: Duration) -> Self {
        let mut options = self.clone();
        let setting = format!(
            "-c idle_in_transaction_session_timeout={}",
            limit.as_millis().max(1)
        );
        let combined = match options.config.get_options() {
            Some(given) if !given.is_empty() => format!("{given} {setting}"),
            _ => setting,
        };
        options.config.options(&combined);
        options
    }

    /// How long a connection attempt may take (the string's `connect_timeout`, else a
    /// minute).
    pub fn connect_timeout(&self) -> Duration {
        self.config
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(60))
    }

    /// Opens a connection; an error carries PostgreSQL's reason, without the password.
    /// With a `connect_timeout`, the whole attempt (the socket and the startup) ends at
    /// it: the client's own timeout covers only the socket, and a paused postmaster
    /// accepts the socket and never answers. The attempt then goes on in a thread of its
    /// own (its connection closed if it comes); at most four of them wait at once, past
    /// which an attempt fails at once.
    pub fn connect(&self) -> Result<Client> {
        let Some(limit) = self.config.get_connect_timeout().copied() else {
            return self.connect_now();
        };
        if self.abandoned.load(Ordering::SeqCst) >= MAX_ABANDONED {
            return Err(no_answer(limit));
        }
        let (sender, receiver) = mpsc::channel();
        let gave_up = Arc::new(Mutex::new(false));
        let (options, waiter) = (self.clone(), Arc::clone(&gave_up));
        std::thread::Builder::new()
            .name("timerwheel-fleet-connect".into())
            .spawn(move || {
                let connected = options.connect_now();
                if *waiter.lock().unwrap_or_else(|p| p.into_inner()) {
                    options.abandoned.fetch_sub(1, Ordering::SeqCst); // its client dropped
                } else {
                    let _ = sender.send(connected);
                }
            })
            .map_err(|e| FleetError::Connect(format!("a thread: {e}")))?;
        if let Ok(connected) = receiver.recv_timeout(limit) {
            return connected;
        }
        // Under the lock: either the attempt ended and sent its result, or it will see
        // that nobody waits and count itself out.
        let mut gave_up = gave_up.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(connected) = receiver.try_recv() {
            return connected;
        }
        *gave_up = true;
        self.abandoned.fetch_add(1, Ordering::SeqCst);
        Err(no_answer(limit))
    }

    fn connect_now(&self) -> Result<Client> {
        let tls = tls::connector(self.verify, self.root_cert.as_deref())?;
        self.config
            .connect(tls)
            .map_err(|e| FleetError::Connect(self.redact_password(&describe(&e))))
    }

    fn redact_password(&self, message: &str) -> String {
        match self.config.get_password() {
            Some(password) if !password.is_empty() => {
                message.replace(&*String::from_utf8_lossy(password), "***")
            }
            _ => message.to_owned(),
        }
    }
}

fn no_answer(limit: Duration) -> FleetError {
    FleetError::Connect(format!("the server did not answer within {limit:?}"))
}

/// `message` without `conninfo` and without any `password=` value or URL password in it.
fn redact(message: &str, conninfo: &str) -> String {
    let mut clean = message.replace(conninfo, "***");
    for secret in passwords(conninfo) {
        if !secret.is_empty() {
            clean = clean.replace(secret, "***");
        }
    }
    clean
}

/// The password values a connection string may hold (key=value or URL user info).
fn passwords(conninfo: &str) -> Vec<&str> {
    let mut found: Vec<&str> = conninfo
        .split_whitespace()
        .filter_map(|pair| pair.strip_prefix("password="))
        .map(|v| v.trim_matches('\''))
        .collect();
    if let Some((_, after)) = conninfo.split_once("://") {
        if let Some((userinfo, _)) = after.split_once('@') {
            if let Some((_, password)) = userinfo.split_once(':') {
                found.push(password);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_string_names_no_password() {
        for conninfo in [
            "host=h port=notaport password=s3cr3t-word",
            "host=h password=s3cr3t-word bogus_option=1",
            "postgresql://u:s3cr3t-word@h:notaport/db",
        ] {
            let error = ConnectOptions::parse(conninfo).unwrap_err();
            let text = format!("{error} {error:?}");
            assert!(matches!(error, FleetError::Connect(_)), "{text}");
            assert!(!text.contains("s3cr3t-word"), "{text}");
        }
    }

    #[test]
    fn options_debug_hides_the_password() {
        let options = ConnectOptions::parse("host=h password=s3cr3t-word").unwrap();
        assert!(!format!("{options:?}").contains("s3cr3t-word"));
    }

    #[test]
    fn verify_modes_require_tls_and_client_certs_are_refused() {
        let options = ConnectOptions::parse("host=h sslmode=verify-full").unwrap();
        assert!(options.tls_required());
        assert_eq!(options.verify, Verify::Full);
        assert!(ConnectOptions::parse("host=h sslcert=/c sslkey=/k").is_err());
    }
}
