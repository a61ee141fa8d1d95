//! A private PostgreSQL server per test: `initdb` in a folder of the test's own, listening on
//! 127.0.0.1 and an ephemeral port, run as the `postgres` user (the server refuses root).
//!
//! The folder is under `/tmp`, not the checkout: the `postgres` user must be able to reach it,
//! and a checkout may sit below a folder only root can enter.

use std::path::PathBuf;
use std::process::Command;

use std::os::unix::fs::PermissionsExt;

use crate::process::{free_port, wait_until};

/// A running server, stopped by `pg_ctl stop` (its PID file) on drop.
pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    data: PathBuf,
    dir: PathBuf,
    /// With [`Postgres::start_tls`]: the PEM file of the test CA that signed the server's
    /// certificate (for `localhost` only).
    pub ca_file: Option<PathBuf>,
}

/// The folder with `initdb` and `pg_ctl` (Debian puts them under /usr/lib/postgresql/<major>/bin).
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.filter_map(Result::ok).map(|e| e.path().join("bin")).filter(|p| p.join("initdb").exists()).collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().expect("PostgreSQL is not installed: run `make setup`")
}

fn as_postgres(program: &std::path::Path) -> Command {
    let mut command = Command::new("runuser");
    command.args(["-u", "postgres", "--"]).arg(program).current_dir("/");
    command
}

/// A new folder for one server, owned by `postgres`, under a base anyone may traverse.
fn server_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = PathBuf::from("/tmp/webhook-receiver-it");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = base.join(format!("postgres-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sockets")).unwrap();
    let status = Command::new("chown").arg("-R").arg("postgres:postgres").arg(&dir).status().unwrap();
    assert!(status.success(), "chown of {} failed", dir.display());
    dir
}

/// Makes a test CA and a server certificate it signs, for the name `localhost` only (so that
/// `127.0.0.1` is a name the certificate does not hold), in
/// `dir`: `ca.crt`, `server.crt`, `server.key`.
pub fn make_certificates(dir: &std::path::Path) {
    let run = |args: &[&str]| {
        let output = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs (make setup)");
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=webhook-receiver test CA", "-keyout", "ca.key"];
    ca.extend(ec);
    ca.extend([
        "-out",
        "ca.crt",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    run(&ca);
    let mut csr = vec!["req", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr"];
    csr.extend(ec);
    run(&csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
}

impl Postgres {
    /// A server that speaks plain TCP.
    pub fn start() -> Postgres {
        Postgres::start_with(false)
    }

    /// A server that accepts only TLS connections (`hostssl`), with a certificate from a test
    /// CA ([`Postgres::ca_file`]).
    pub fn start_tls() -> Postgres {
        Postgres::start_with(true)
    }

    fn start_with(tls: bool) -> Postgres {
        let bin = bin_dir();
        let dir = server_dir();
        let data = dir.join("data");
        let sockets = dir.join("sockets");
        let output = as_postgres(&bin.join("initdb"))
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data)
            .output()
            .unwrap();
        assert!(output.status.success(), "initdb failed: {}", String::from_utf8_lossy(&output.stderr));
        let port = free_port();
        let mut options = format!("-h 127.0.0.1 -p {port} -k {} -c fsync=off", sockets.display());
        let mut ca_file = None;
        if tls {
            let certs = dir.join("certs");
            std::fs::create_dir_all(&certs).unwrap();
            make_certificates(&certs);
            let status = Command::new("chown").arg("-R").arg("postgres:postgres").arg(&certs).status().unwrap();
            assert!(status.success());
            std::fs::set_permissions(certs.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                certs.join("server.crt").display(),
                certs.join("server.key").display()
            ));
            // TLS or nothing: plain TCP finds no pg_hba.conf line.
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
            )
            .unwrap();
            ca_file = Some(certs.join("ca.crt"));
        }
        let output = as_postgres(&bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .args(["-o", &options, "-l"])
            .arg(dir.join("server.log"))
            .args(["-w", "start"])
            .output()
            .unwrap();
        assert!(output.status.success(), "pg_ctl start failed: {}", String::from_utf8_lossy(&output.stdout));
        let server = Postgres { port, bin, data, dir, ca_file };
        wait_until("postgres", 20, || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        server
    }

    /// A URL for the `postgres` database as the `postgres` user.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The same, by the name the test certificate holds.
    pub fn url_by_name(&self) -> String {
        format!("postgres://postgres@localhost:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
