//! The private cluster of the harness, the schema's explicit creation and versions, and
//! connection errors that keep the connection string's secrets.

use std::net::TcpStream;

use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::{check_schema, create_schema, migrate, ConnectOptions, FleetError, Node};

fn connect(server: &TestServer) -> postgres::Client {
    ConnectOptions::parse(&server.conninfo())
        .and_then(|o| o.connect())
        .expect("the test server")
}

#[test]
fn the_cluster_is_removed_after_a_panicking_test() {
    let (dir, port) = std::thread::spawn(|| {
        let server = TestServer::start();
        let seen = (server.data_dir(), server.port());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _server = server;
            panic!("a failing test");
        }));
        assert!(result.is_err());
        seen
    })
    .join()
    .unwrap();
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server still listens on {port}"
    );
}

#[test]
fn a_database_without_the_schema_is_a_clear_error_and_stays_empty() {
    let server = TestServer::start();
    let mut client = connect(&server);
    assert_eq!(check_schema(&mut client), Err(FleetError::NoSchema));
    let error = Node::join(connect(&server), "a", timerwheel_fleet::DEFAULT_TTL)
        .err()
        .unwrap();
    assert_eq!(error, FleetError::NoSchema);
    assert!(error.to_string().contains("create_schema"), "{error}");
    assert_eq!(migrate(&mut client), Err(FleetError::NoSchema));
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'tw_fleet%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "a check created tables");
}

#[test]
fn create_schema_makes_256_free_shards_once() {
    let server = TestServer::start();
    let mut client = connect(&server);
    create_schema(&mut client, timerwheel_fleet::DEFAULT_SHARDS).unwrap();
    assert_eq!(check_schema(&mut client), Ok(256));
    // A second call (another node) finds it and changes nothing.
    create_schema(&mut client, 16).unwrap();
    assert_eq!(check_schema(&mut client), Ok(256));
    let free: i64 = client
        .query_one(
            "SELECT count(*) FROM tw_fleet_shards WHERE owner IS NULL AND epoch = 0",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(free, 256);
    assert!(matches!(
        create_schema(&mut connect(&server), 0),
        Err(FleetError::Invalid(_))
    ));
}

#[test]
fn another_schema_version_is_refused_and_left_as_it_is() {
    let server = TestServer::start();
    let mut client = connect(&server);
    create_schema(&mut client, 4).unwrap();
    client
        .batch_execute("UPDATE tw_fleet_meta SET version = 99")
        .unwrap();
    let expected = Err(FleetError::SchemaVersion {
        found: 99,
        expected: timerwheel_fleet::SCHEMA_VERSION,
    });
    assert_eq!(check_schema(&mut client), expected);
    assert_eq!(migrate(&mut client), expected.map(|_| ()));
    let version: i32 = client
        .query_one("SELECT version FROM tw_fleet_meta", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 99);
}

#[test]
fn a_bad_password_does_not_show_in_the_error() {
    let server = TestServer::start();
    let mut admin = connect(&server);
    admin
        .batch_execute("CREATE ROLE billing LOGIN PASSWORD 'the-right-one'")
        .unwrap();
    // Password authentication for this role (the cluster trusts the others).
    let hba = server.data_dir().join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("host all billing 127.0.0.1/32 scram-sha-256\n{rules}"),
    )
    .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));

    let secret = "Wr0ng-pa55word";
    for conninfo in [
        format!(
            "host=127.0.0.1 port={} user=billing dbname=timerwheel password={secret}",
            server.port()
        ),
        format!(
            "postgresql://billing:{secret}@127.0.0.1:{}/timerwheel",
            server.port()
        ),
    ] {
        let error = ConnectOptions::parse(&conninfo)
            .and_then(|o| o.connect())
            .err()
            .expect("a wrong password is refused");
        let text = format!("{error} / {error:?}");
        assert!(matches!(error, FleetError::Connect(_)), "{text}");
        assert!(text.contains("password"), "no reason given: {text}");
        assert!(!text.contains(secret), "{text}");
        assert!(!text.contains(&conninfo), "{text}");
    }
    let right = format!(
        "host=127.0.0.1 port={} user=billing dbname=timerwheel password=the-right-one",
        server.port()
    );
    ConnectOptions::parse(&right).unwrap().connect().unwrap();
}

#[test]
fn tls_settings_pass_through() {
    let server = TestServer::start();
    let plain = format!("{} sslmode=require", server.conninfo());
    // The server has no TLS: require is refused, not downgraded.
    let error = ConnectOptions::parse(&plain).unwrap().connect().err();
    assert!(matches!(error, Some(FleetError::Connect(_))), "{error:?}");
    // prefer goes on in plain text.
    let preferred = format!("{} sslmode=prefer", server.conninfo());
    assert_eq!(uses_tls(preferred), Ok(false));
    let disabled = format!("{} sslmode=disable", server.conninfo());
    let mut client = ConnectOptions::parse(&disabled).unwrap().connect().unwrap();
    let ssl: bool = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(!ssl);
}

/// A self-signed certificate for `localhost` in a directory the server can read.
fn certificate(dir: &std::path::Path, name: &str) -> (String, String) {
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let status = std::process::Command::new("openssl")
        .args([
            "req",
            "-new",
            "-x509",
            "-days",
            "1",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .args(["-addext", "subjectAltName=DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl");
    assert!(status.success());
    (cert.display().to_string(), key.display().to_string())
}

/// A certificate for `localhost` signed by the authority `ca` (the files of
/// [`certificate`]), as a server outside tests has: not itself an authority.
fn signed_certificate(dir: &std::path::Path, ca: &(String, String)) -> (String, String) {
    let (csr, cert, key) = (
        dir.join("signed.csr"),
        dir.join("signed.crt"),
        dir.join("signed.key"),
    );
    let run = |args: &[&std::ffi::OsStr]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl");
        assert!(status.success(), "openssl {args:?}");
    };
    run(&[
        "req".as_ref(),
        "-new".as_ref(),
        "-nodes".as_ref(),
        "-subj".as_ref(),
        "/CN=localhost".as_ref(),
        "-addext".as_ref(),
        "subjectAltName=DNS:localhost".as_ref(),
        "-keyout".as_ref(),
        key.as_os_str(),
        "-out".as_ref(),
        csr.as_os_str(),
    ]);
    run(&[
        "x509".as_ref(),
        "-req".as_ref(),
        "-days".as_ref(),
        "1".as_ref(),
        "-copy_extensions".as_ref(),
        "copy".as_ref(),
        "-in".as_ref(),
        csr.as_os_str(),
        "-CA".as_ref(),
        ca.0.as_ref(),
        "-CAkey".as_ref(),
        ca.1.as_ref(),
        "-out".as_ref(),
        cert.as_os_str(),
    ]);
    (cert.display().to_string(), key.display().to_string())
}

/// Who signed the certificate of a [`TlsServer`].
#[derive(PartialEq)]
enum Issuer {
    /// The server itself: its own certificate is the root.
    SelfSigned,
    /// An authority, whose certificate is the root.
    Authority,
}

/// A private cluster with TLS on, its certificate for `localhost`; `cert` is the root that
/// verifies it, `other` the root of another server. The directory holds the files.
struct TlsServer {
    server: TestServer,
    cert: String,
    other: String,
    _dir: tempfile::TempDir,
}

impl TlsServer {
    fn start(issuer: Issuer) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (root, root_key) = certificate(dir.path(), "server");
        let (other, _) = certificate(dir.path(), "other");
        let (cert, key) = match issuer {
            Issuer::SelfSigned => (root.clone(), root_key),
            Issuer::Authority => signed_certificate(dir.path(), &(root.clone(), root_key)),
        };
        if std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout
            == b"0\n"
        {
            let status = std::process::Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        }
        let server = TestServer::start_with(&[
            "ssl = on",
            &format!("ssl_cert_file = '{cert}'"),
            &format!("ssl_key_file = '{key}'"),
        ]);
        Self {
            server,
            cert: root,
            other,
            _dir: dir,
        }
    }

    /// A connection string to it by the host name `host`.
    fn conninfo(&self, host: &str) -> String {
        format!(
            "host={host} port={} user=timerwheel dbname=timerwheel",
            self.server.port()
        )
    }
}

/// Whether the connection `conninfo` opens is encrypted.
fn uses_tls(conninfo: String) -> Result<bool, FleetError> {
    let mut client = ConnectOptions::parse(&conninfo)?.connect()?;
    Ok(client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0))
}

#[test]
fn tls_is_used_and_verified_as_the_string_asks() {
    let tls = TlsServer::start(Issuer::SelfSigned);
    let (base, cert, other) = (tls.conninfo("localhost"), &tls.cert, &tls.other);
    // A self-signed certificate and no root: encrypted, not verified.
    assert_eq!(uses_tls(format!("{base} sslmode=require")), Ok(true));
    assert_eq!(uses_tls(format!("{base} sslmode=prefer")), Ok(true));
    assert_eq!(uses_tls(format!("{base} sslmode=disable")), Ok(false));
    assert_eq!(
        uses_tls(format!("{base} sslmode=verify-full sslrootcert={cert}")),
        Ok(true)
    );
    assert_eq!(
        uses_tls(format!("{base} sslmode=verify-ca sslrootcert={cert}")),
        Ok(true)
    );
    for refused in [
        format!("{base} sslmode=verify-full sslrootcert={other}"),
        format!("{base} sslmode=verify-ca sslrootcert={other}"),
        // The system's roots do not hold a self-signed certificate.
        format!("{base} sslmode=verify-full"),
        format!("{base} sslmode=verify-ca sslrootcert=system"),
    ] {
        let error = uses_tls(refused.clone());
        assert!(
            matches!(error, Err(FleetError::Connect(_))),
            "{refused}: {error:?}"
        );
    }
}

#[test]
fn verify_ca_takes_a_certificate_for_another_name_verify_full_does_not() {
    let tls = TlsServer::start(Issuer::SelfSigned);
    // The certificate names localhost, not 127.0.0.1.
    let (base, cert) = (tls.conninfo("127.0.0.1"), &tls.cert);
    assert_eq!(
        uses_tls(format!("{base} sslmode=verify-ca sslrootcert={cert}")),
        Ok(true)
    );
    assert_eq!(uses_tls(format!("{base} sslmode=require")), Ok(true));
    let secret = "pa55-in-the-string";
    let conninfo = format!("{base} sslmode=verify-full sslrootcert={cert} password={secret}");
    let error = uses_tls(conninfo.clone()).unwrap_err();
    let text = format!("{error} / {error:?}");
    assert!(matches!(error, FleetError::Connect(_)), "{text}");
    assert!(text.contains("certificate"), "no reason given: {text}");
    assert!(
        !text.contains(secret) && !text.contains(&conninfo),
        "{text}"
    );
}

#[test]
fn a_certificate_from_an_authority_is_checked_by_chain_and_name() {
    let tls = TlsServer::start(Issuer::Authority);
    let (ca, other) = (&tls.cert, &tls.other);
    let (by_name, by_address) = (tls.conninfo("localhost"), tls.conninfo("127.0.0.1"));
    for (conninfo, expected) in [
        (
            format!("{by_name} sslmode=verify-full sslrootcert={ca}"),
            true,
        ),
        (
            format!("{by_address} sslmode=verify-full sslrootcert={ca}"),
            false,
        ),
        (
            format!("{by_address} sslmode=verify-ca sslrootcert={ca}"),
            true,
        ),
        (
            format!("{by_name} sslmode=verify-ca sslrootcert={other}"),
            false,
        ),
        (format!("{by_address} sslmode=require"), true),
    ] {
        let used = uses_tls(conninfo.clone());
        match expected {
            true => assert_eq!(used, Ok(true), "{conninfo}"),
            false => assert!(
                matches!(used, Err(FleetError::Connect(_))),
                "{conninfo}: {used:?}"
            ),
        }
    }
}

#[test]
fn an_unusable_sslrootcert_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.crt");
    std::fs::write(&empty, "no certificate here\n").unwrap();
    let missing = dir.path().join("missing.crt");
    for (path, reason) in [(&empty, "no certificate"), (&missing, "unreadable")] {
        let conninfo = format!(
            "host=127.0.0.1 port=1 sslmode=verify-full sslrootcert={}",
            path.display()
        );
        let error = ConnectOptions::parse(&conninfo)
            .unwrap()
            .connect()
            .err()
            .unwrap();
        assert!(error.to_string().contains(reason), "{error}");
    }
}
