//! Reaching a JetStream spool: where it lives ([`StoreUrl`], `nats://HOST:PORT/NAME`) and how to
//! connect to it ([`ConnectOptions`], [`AsyncJetStreamSpool::connect`]).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use async_nats::jetstream;

use super::{AsyncJetStreamSpool, JsError};

/// The default NATS port, used when a server in a [`StoreUrl`] names none.
pub const DEFAULT_PORT: u16 = 4222;

/// A malformed store URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// The URL starts with neither `nats://` nor `tls://`.
    #[error("a store URL starts with nats:// or tls:// (got {0:?})")]
    Scheme(String),
    /// No `/NAME` after the servers.
    #[error("a store URL ends with /NAME, the spool's name (nats://HOST:PORT/NAME)")]
    MissingName,
    /// The spool's name is not `[A-Za-z0-9_-]+` (it is used in subjects and stream names).
    #[error("the spool's name {0:?} must be letters, digits, '_' or '-'")]
    BadName(String),
    /// A server entry is empty (`nats://a:1,,b:2/x`) or there is none.
    #[error("a store URL names at least one server HOST:PORT, and no empty one")]
    NoServer,
    /// A host is not a DNS name, an IPv4 address or a bracketed IPv6 address.
    #[error("bad server host {0:?}")]
    BadHost(String),
    /// A port is not a number in 1..=65535.
    #[error("bad server port {0:?}")]
    BadPort(String),
    /// The URL carries a user or password (`nats://user:pass@host`): they would end up in
    /// logs and process lists; use a credentials or NKey seed file ([`ConnectOptions`]).
    #[error("credentials do not belong in a store URL; use a credentials or NKey seed file")]
    CredentialsInUrl,
}

/// Where a JetStream spool lives: `nats://HOST:PORT[,HOST2:PORT2...]/NAME` or the same with
/// `tls://` (TLS required on every server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// Whether TLS is required (`tls://`).
    pub tls: bool,
    /// The servers, `(host, port)`; an IPv6 host is kept without its brackets.
    pub servers: Vec<(String, u16)>,
    /// The spool's name, `[A-Za-z0-9_-]+`.
    pub name: String,
}

/// Whether `s` is a non-empty `[A-Za-z0-9_-]+` (a spool name, an agent, a packet id: a single
/// subject token without wildcards).
#[must_use]
pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl FromStr for StoreUrl {
    type Err = UrlError;

    fn from_str(url: &str) -> Result<Self, UrlError> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("nats://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("tls://") {
            (true, r)
        } else {
            return Err(UrlError::Scheme(url.split("://").next().unwrap_or(url).to_string()));
        };
        let (hosts, name) = rest.split_once('/').ok_or(UrlError::MissingName)?;
        if name.is_empty() {
            return Err(UrlError::MissingName);
        }
        if !is_token(name) {
            return Err(UrlError::BadName(name.to_string()));
        }
        if hosts.contains('@') {
            return Err(UrlError::CredentialsInUrl);
        }
        let mut servers = Vec::new();
        for entry in hosts.split(',') {
            if entry.is_empty() {
                return Err(UrlError::NoServer);
            }
            servers.push(parse_server(entry)?);
        }
        Ok(StoreUrl { tls, servers, name: name.to_string() })
    }
}

fn parse_server(entry: &str) -> Result<(String, u16), UrlError> {
    let (host, port) = if let Some(v6) = entry.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| UrlError::BadHost(entry.to_string()))?;
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
            return Err(UrlError::BadHost(entry.to_string()));
        }
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':').ok_or_else(|| UrlError::BadPort(p.to_string()))?)),
        }
    } else {
        match entry.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (entry, None),
        }
    };
    let dns = |h: &str| {
        !h.is_empty()
            && h.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    };
    if !entry.starts_with('[') && !dns(host) {
        return Err(UrlError::BadHost(host.to_string()));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(UrlError::BadPort(p.to_string())),
        },
    };
    Ok((host.to_string(), port))
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<String> = self
            .server_addresses()
            .into_iter()
            .map(|s| s.split("://").nth(1).unwrap_or_default().to_string())
            .collect();
        write!(f, "{}://{}/{}", if self.tls { "tls" } else { "nats" }, servers.join(","), self.name)
    }
}

impl StoreUrl {
    /// The servers as client URLs (`nats://HOST:PORT` or `tls://HOST:PORT`, IPv6 bracketed).
    #[must_use]
    pub fn server_addresses(&self) -> Vec<String> {
        let scheme = if self.tls { "tls" } else { "nats" };
        self.servers
            .iter()
            .map(|(h, p)| if h.contains(':') { format!("{scheme}://[{h}]:{p}") } else { format!("{scheme}://{h}:{p}") })
            .collect()
    }

    /// The chain's subject, `warrant.NAME.chain`.
    #[must_use]
    pub fn chain_subject(&self) -> String {
        format!("warrant.{}.chain", self.name)
    }

    /// The chain's stream, `warrant_NAME_chain`.
    #[must_use]
    pub fn chain_stream(&self) -> String {
        format!("warrant_{}_chain", self.name)
    }

    /// The packets' and receipts' stream, `warrant_NAME_spool`.
    #[must_use]
    pub fn spool_stream(&self) -> String {
        format!("warrant_{}_spool", self.name)
    }

    /// The subject of `agent`'s packets, `warrant.NAME.packets.AGENT`.
    #[must_use]
    pub fn packet_subject(&self, agent: &str) -> String {
        format!("warrant.{}.packets.{agent}", self.name)
    }

    /// The subject of `agent`'s receipts, `warrant.NAME.receipts.AGENT`.
    #[must_use]
    pub fn receipt_subject(&self, agent: &str) -> String {
        format!("warrant.{}.receipts.{agent}", self.name)
    }

    /// The decisions' KV bucket, `warrant_NAME_decisions`.
    #[must_use]
    pub fn decisions_bucket(&self) -> String {
        format!("warrant_{}_decisions", self.name)
    }

    /// The uses bucket, `warrant_NAME_uses`: the single-use claims of approvals and grants and
    /// the gate's rate-limited runs (`uses/` of a directory spool), each key created once.
    #[must_use]
    pub fn uses_bucket(&self) -> String {
        format!("warrant_{}_uses", self.name)
    }
}

/// How to connect: credentials, TLS, timeouts. Every path is read when connecting; a file that
/// cannot be read is an error ([`JsError::Connect`]).
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// A NATS credentials file (`.creds`: a user JWT and its NKey seed).
    pub credentials_file: Option<PathBuf>,
    /// A file holding a user NKey seed (`SU…`), for servers configured with `nkey:` users.
    pub nkey_seed_file: Option<PathBuf>,
    /// CA certificates (PEM) to trust for the servers' TLS certificates.
    pub tls_ca: Option<PathBuf>,
    /// A client certificate and its key (PEM), for servers that verify clients.
    pub tls_client_cert: Option<(PathBuf, PathBuf)>,
    /// The prefix of this connection's reply subjects (default `_INBOX`). An agent user is
    /// allowed to subscribe to its own prefix only (`_INBOX_AGENT`, docs/distributed.md), so
    /// it cannot read the replies of others.
    pub inbox_prefix: Option<String>,
    /// Limit for connecting and for each request, publish acknowledgement or read (default 10 s).
    pub timeout: Duration,
    /// A name for the connection, shown by the server's monitoring.
    pub client_name: Option<String>,
}

/// NATS connection variables that cannot be used ([`ConnectOptions::from_env`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// One of `NATS_CERT` and `NATS_KEY` without the other.
    #[error("NATS_CERT and NATS_KEY go together: set both or neither")]
    CertWithoutKey,
    /// `NATS_TIMEOUT` that is not seconds from 0.1 to 600.
    #[error("NATS_TIMEOUT={0:?}: give seconds from 0.1 to 600")]
    Timeout(String),
}

impl ConnectOptions {
    /// The options the NATS command-line tools take from the environment: `NATS_CREDS` (a
    /// credentials file), `NATS_NKEY` (a file holding a user NKey seed), `NATS_CA` (CA
    /// certificates), `NATS_CERT` and `NATS_KEY` (a client certificate and its key, both or
    /// neither), `NATS_TIMEOUT` (seconds, default 10), and `NATS_INBOX_PREFIX` (the prefix of
    /// reply subjects, for a user whose permissions allow replies there only, as an agent's in
    /// `docs/distributed.md`). Unset or empty variables are absent.
    ///
    /// # Errors
    /// `NATS_CERT` without `NATS_KEY` (or the reverse), or a `NATS_TIMEOUT` that is not a
    /// number of seconds from 0.1 to 600.
    pub fn from_env() -> Result<Self, EnvError> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let tls_client_cert = match (var("NATS_CERT"), var("NATS_KEY")) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err(EnvError::CertWithoutKey),
        };
        let timeout = match std::env::var("NATS_TIMEOUT").ok().filter(|v| !v.is_empty()) {
            None => Duration::from_secs(10),
            Some(t) => t
                .parse::<f64>()
                .ok()
                .filter(|s| (0.1..=600.0).contains(s))
                .map(Duration::from_secs_f64)
                .ok_or_else(|| EnvError::Timeout(t.clone()))?,
        };
        Ok(ConnectOptions {
            credentials_file: var("NATS_CREDS"),
            nkey_seed_file: var("NATS_NKEY"),
            tls_ca: var("NATS_CA"),
            tls_client_cert,
            timeout,
            client_name: Some("warrant".into()),
            inbox_prefix: std::env::var("NATS_INBOX_PREFIX").ok().filter(|v| !v.is_empty()),
        })
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            credentials_file: None,
            nkey_seed_file: None,
            tls_ca: None,
            tls_client_cert: None,
            inbox_prefix: None,
            timeout: Duration::from_secs(10),
            client_name: None,
        }
    }
}

/// How long one server of several has to answer a connection before the next is tried.
const PER_SERVER_CONNECT: Duration = Duration::from_secs(1);

/// How often a connection pings its server.
const PING_INTERVAL: Duration = Duration::from_secs(2);

impl AsyncJetStreamSpool {
    /// Connects to the servers of `url`, in order; with several, each has a second (or
    /// `opts.timeout`, if shorter) to answer before the next is tried. Creates nothing: see [`setup`](Self::setup).
    ///
    /// # Errors
    /// [`JsError::Connect`] when no server answers within `opts.timeout`, a file cannot be read,
    /// or TLS or authentication fails.
    pub async fn connect(url: &StoreUrl, opts: &ConnectOptions) -> Result<Self, JsError> {
        let servers = url.server_addresses().join(",");
        let fail = |message: String| JsError::Connect { servers: servers.clone(), message };
        // Each server in turn, in the order given; with several, each gets at most a second, so a
        // server that accepts and never answers (stopped, hung) costs a second, not the whole
        // timeout, before the next is tried.
        let per_server =
            if url.server_addresses().len() > 1 { opts.timeout.min(PER_SERVER_CONNECT) } else { opts.timeout };
        let mut o = async_nats::ConnectOptions::new()
            .connection_timeout(per_server)
            // A server that hangs with the connection open (stopped, overloaded) answers no
            // ping: after two unanswered the client moves to the next server, within seconds,
            // not the two minutes of the default interval.
            .ping_interval(PING_INTERVAL)
            .request_timeout(Some(opts.timeout))
            .retain_servers_order();
        if let Some(path) = &opts.credentials_file {
            o = o
                .credentials_file(path)
                .await
                .map_err(|e| fail(format!("credentials file {}: {e}", path.display())))?;
        }
        if let Some(path) = &opts.nkey_seed_file {
            let seed =
                std::fs::read_to_string(path).map_err(|e| fail(format!("NKey seed file {}: {e}", path.display())))?;
            o = o.nkey(seed.trim().to_string());
        }
        if let Some(ca) = &opts.tls_ca {
            o = o.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &opts.tls_client_cert {
            o = o.add_client_certificate(cert.clone(), key.clone());
        }
        if url.tls {
            o = o.require_tls(true);
        }
        if let Some(prefix) = &opts.inbox_prefix {
            o = o.custom_inbox_prefix(prefix);
        }
        if let Some(name) = &opts.client_name {
            o = o.name(name);
        }
        // The server answers a request its permissions refuse with an asynchronous `-ERR`, not a
        // reply: without this, the request would wait for the whole timeout.
        let (denials_tx, denials) = tokio::sync::watch::channel(Denial::default());
        o = o.event_callback(move |event| {
            if let async_nats::Event::ServerError(async_nats::ServerError::Other(message)) = &event
                && let Some(denial) = Denial::of(message)
            {
                denials_tx.send_modify(|d| *d = Denial { count: d.count + 1, ..denial });
            }
            std::future::ready(())
        });
        let addrs: Vec<async_nats::ServerAddr> = url
            .server_addresses()
            .iter()
            .map(|s| s.parse::<async_nats::ServerAddr>().map_err(|e| fail(format!("{s}: {e}"))))
            .collect::<Result<_, _>>()?;
        let client = tokio::time::timeout(opts.timeout, o.connect(addrs))
            .await
            .map_err(|_| fail(format!("no answer within {:?}", opts.timeout)))?
            .map_err(|e| fail(e.to_string()))?;
        let js = jetstream::ContextBuilder::new().timeout(opts.timeout).build(client.clone());
        Ok(AsyncJetStreamSpool {
            url: url.clone(),
            js,
            client,
            timeout: opts.timeout,
            denials,
            buckets: Default::default(),
        })
    }
}

/// The last request or subscription the server's permissions refused (`-ERR 'Permissions
/// Violation for Publish to "SUBJECT"'`, or `for Subscription to`), and how many so far.
#[derive(Debug, Clone, Default)]
pub(super) struct Denial {
    /// Permission violations reported on this connection so far.
    pub(super) count: u64,
    /// The server's message for the last one.
    pub(super) message: String,
}

impl Denial {
    /// The denial a server error reports, or `None` for another error, or for the refused
    /// delete of a read's consumer (`forget_consumer`: an agent may not delete consumers, and
    /// that refusal stops nothing).
    fn of(message: &str) -> Option<Denial> {
        let lower = message.to_ascii_lowercase();
        (lower.contains("permissions violation") && !message.contains("$JS.API.CONSUMER.DELETE."))
            .then(|| Denial { count: 0, message: message.trim().trim_matches('\'').to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_violations_are_denials_except_a_consumer_delete() {
        let d = Denial::of("Permissions Violation for Publish to \"$JS.API.STREAM.INFO.warrant_t_chain\"")
            .expect("a denial");
        assert_eq!(d.message, "Permissions Violation for Publish to \"$JS.API.STREAM.INFO.warrant_t_chain\"");
        assert!(Denial::of("'permissions violation for subscription to \"warrant.t.chain\"'").is_some());
        assert!(
            Denial::of("Permissions Violation for Publish to \"$JS.API.CONSUMER.DELETE.s.warrant_read_1\"").is_none()
        );
        assert!(Denial::of("maximum consumers limit reached").is_none());
    }

    #[test]
    fn store_urls_parse() {
        let u: StoreUrl = "nats://127.0.0.1:4222,nats2.example:5222,[::1]:6222/main_spool-1".parse().expect("parses");
        assert!(!u.tls);
        assert_eq!(u.servers, vec![("127.0.0.1".into(), 4222), ("nats2.example".into(), 5222), ("::1".into(), 6222)]);
        assert_eq!(u.name, "main_spool-1");
        assert_eq!(u.server_addresses()[2], "nats://[::1]:6222");
        assert_eq!(u.to_string(), "nats://127.0.0.1:4222,nats2.example:5222,[::1]:6222/main_spool-1");
        let t: StoreUrl = "tls://host/x".parse().expect("parses");
        assert!(t.tls);
        assert_eq!(t.servers, vec![("host".into(), DEFAULT_PORT)]);
        assert_eq!(t.chain_subject(), "warrant.x.chain");
        assert_eq!(t.packet_subject("a1"), "warrant.x.packets.a1");
        assert_eq!(t.decisions_bucket(), "warrant_x_decisions");
    }

    #[test]
    fn malformed_store_urls_are_refused_with_the_reason() {
        let cases: &[(&str, UrlError)] = &[
            ("http://h:1/x", UrlError::Scheme("http".into())),
            ("h:1/x", UrlError::Scheme("h:1/x".into())),
            ("nats://h:1", UrlError::MissingName),
            ("nats://h:1/", UrlError::MissingName),
            ("nats://h:1/a.b", UrlError::BadName("a.b".into())),
            ("nats://h:1/a/b", UrlError::BadName("a/b".into())),
            ("nats://h:1/a*", UrlError::BadName("a*".into())),
            ("nats:///x", UrlError::NoServer),
            ("nats://h:1,,h:2/x", UrlError::NoServer),
            ("nats://h:0/x", UrlError::BadPort("0".into())),
            ("nats://h:65536/x", UrlError::BadPort("65536".into())),
            ("nats://h:+1/x", UrlError::BadPort("+1".into())),
            ("nats://h:/x", UrlError::BadPort(String::new())),
            ("nats://h_x:1/x", UrlError::BadHost("h_x".into())),
            ("nats://-h:1/x", UrlError::BadHost("-h".into())),
            ("nats://[zz]:1/x", UrlError::BadHost("[zz]:1".into())),
            ("nats://[::1]4222/x", UrlError::BadPort("4222".into())),
            ("nats://u:p@h:1/x", UrlError::CredentialsInUrl),
        ];
        for (url, want) in cases {
            assert_eq!(url.parse::<StoreUrl>().as_ref(), Err(want), "{url}");
        }
    }
}
