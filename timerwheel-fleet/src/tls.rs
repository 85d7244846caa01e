//! TLS in pure Rust (rustls with the ring provider) for the connections of [`crate::conn`]:
//! nothing for a C, Go or Python program to link, the system's roots read at run time.
//!
//! The server's certificate is checked as the `sslmode` asks: not at all (`prefer`,
//! `require`: the handshake's signatures still are), its chain (`verify-ca`: any name), or
//! its chain and the host name (`verify-full`). The roots are `sslrootcert`'s (a PEM file),
//! or the system's when it is absent or `system`. As with libpq, a server certificate that
//! is itself one of the roots (a self-signed one, `openssl req -x509`'s, which the standard
//! checks refuse as a CA used for a server) is trusted as it is, within its dates.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres_rustls::MakeRustlsConnect;
use x509_cert::der::Decode;

use crate::error::{FleetError, Result};

/// How the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verify {
    /// Encrypted when asked, the certificate not checked (libpq's `prefer`, `require`).
    Nothing,
    /// The certificate's chain (`verify-ca`).
    Chain,
    /// The chain and the host name (`verify-full`).
    Full,
}

/// The `sslrootcert` value that names the system's roots (as libpq 16 spells it).
const SYSTEM_ROOTS: &str = "system";

/// The TLS side of a connection: certificates checked as `verify` says, against the roots
/// of `root_cert` (a PEM file) or of the system.
pub(crate) fn connector(verify: Verify, root_cert: Option<&str>) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match verify {
        Verify::Nothing => Arc::new(AnyCertificate(Arc::clone(&provider))),
        Verify::Chain => Arc::new(Checked::new(root_cert, &provider, false)?),
        Verify::Full => Arc::new(Checked::new(root_cert, &provider, true)?),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(setup_error)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn setup_error(error: impl std::fmt::Display) -> FleetError {
    FleetError::Connect(format!("TLS setup: {error}"))
}

/// The certificates of the PEM file `path`; one at least.
fn file_roots(path: &str) -> Result<Vec<CertificateDer<'static>>> {
    let unreadable = |e: rustls_pki_types::pem::Error| {
        FleetError::Connect(format!("sslrootcert unreadable: {e}"))
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(unreadable)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(unreadable)?;
    if certs.is_empty() {
        return Err(FleetError::Connect(
            "sslrootcert: no certificate in the file".into(),
        ));
    }
    Ok(certs)
}

/// The system's roots (its certificate store, `SSL_CERT_FILE` or `SSL_CERT_DIR`), read now.
fn system_roots() -> Result<Vec<CertificateDer<'static>>> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        let reason = found.errors.first().map(ToString::to_string);
        return Err(FleetError::Connect(format!(
            "no system root certificates to verify the server with ({}); set sslrootcert",
            reason.as_deref().unwrap_or("none found")
        )));
    }
    Ok(found.certs)
}

/// `require`: any certificate is taken, but the handshake's signatures are checked (the
/// server holds the key of the certificate it showed).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca` and `verify-full`: the standard checks against the roots (a certificate for
/// another name taken unless `check_name`), and a server certificate that is one of the
/// roots trusted as it is.
#[derive(Debug)]
struct Checked {
    webpki: Arc<WebPkiServerVerifier>,
    roots: Vec<CertificateDer<'static>>,
    check_name: bool,
}

impl Checked {
    /// The checks against the roots of `root_cert` (a PEM file, or the system's).
    fn new(
        root_cert: Option<&str>,
        provider: &Arc<CryptoProvider>,
        check_name: bool,
    ) -> Result<Self> {
        let roots = match root_cert {
            Some(path) if path != SYSTEM_ROOTS => file_roots(path)?,
            _ => system_roots()?,
        };
        let mut store = RootCertStore::empty();
        store.add_parsable_certificates(roots.iter().cloned());
        let webpki =
            WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(provider))
                .build()
                .map_err(setup_error)?;
        Ok(Self {
            webpki,
            roots,
            check_name,
        })
    }

    /// A server certificate that is one of the roots: within its dates, and for the name
    /// when asked.
    fn check_root(
        &self,
        cert: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let parsed = x509_cert::Certificate::from_der(cert)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let validity = parsed.tbs_certificate.validity;
        let now = now.as_secs();
        if now < validity.not_before.to_unix_duration().as_secs() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet,
            ));
        }
        if now > validity.not_after.to_unix_duration().as_secs() {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        }
        if self.check_name {
            verify_server_name(&ParsedCertificate::try_from(cert)?, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        if self.roots.iter().any(|root| root == end_entity) {
            return self.check_root(end_entity, server_name, now);
        }
        // The chain is checked before the name: a name mismatch means a good chain.
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            checked => checked,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
