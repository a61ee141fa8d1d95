//! What every helper of the suite stands on: the repository's root, free ports, waiting for a
//! server, private folders, the clock, and the stream worker's binary.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `ready` every 50 ms for up to `seconds`; panics with `what` if it never holds.
pub fn wait_until(what: &str, seconds: u64, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{what} was not ready within {seconds} s");
}

/// A private folder under `target/`, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = repo_root().join("target/it-tmp").join(format!("{prefix}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The stream worker's binary, from the target folder this test binary was built into (so
/// `CARGO_TARGET_DIR` and the profile are respected). Cargo sets `CARGO_BIN_EXE_<name>` only
/// for a package's own tests, and this suite is its own package, so the path is derived here;
/// it panics when the binary is missing or older than the sources it is built from (a stale
/// binary would test yesterday's code): `cargo build -p stream-worker` first, as `make test` does.
pub fn stream_worker_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // <target>/<profile>/deps/it-<hash>  ->  <target>/<profile>/stream-worker
    let binary = exe.parent().and_then(Path::parent).unwrap().join("stream-worker");
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is missing: `cargo build -p stream-worker` first", binary.display()));
    let root = repo_root();
    for sources in ["stream-worker/src", "shared/src"] {
        if let Some(newer) = newer_than(&root.join(sources), built) {
            panic!("{} is older than {}: `cargo build -p stream-worker` first", binary.display(), newer.display());
        }
    }
    binary
}

/// A file under `dir` modified after `time`, if any.
fn newer_than(dir: &Path, time: std::time::SystemTime) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = newer_than(&path, time) {
                return Some(found);
            }
        } else if entry.metadata().and_then(|m| m.modified()).is_ok_and(|m| m > time) {
            return Some(path);
        }
    }
    None
}

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}
