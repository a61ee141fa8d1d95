//! Headless Chromium, driven through chromedriver (the one `make test` installs) with
//! fantoccini: a browser for the console's tests, on 127.0.0.1 and an ephemeral port, stopped
//! by its own PID when its handle drops.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

use crate::http::send;
use crate::process::{free_port, wait_until, TempDir};

pub struct Browser {
    pub client: Client,
    _driver: Driver,
    _profile: TempDir,
}

/// chromedriver, in a process group of its own with the Chromium it starts: dropped (a test
/// that ends, or fails before `stop`), the whole group is killed.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Browser {
    /// Starts chromedriver (`CHROMEDRIVER`, else /usr/bin/chromedriver) and a headless Chromium
    /// session with a profile of its own.
    pub async fn start() -> Browser {
        let driver_path = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let port = free_port();
        // It listens on the loopback addresses alone (`--allowed-ips` would make it listen on
        // every interface).
        let driver = Command::new(&driver_path)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{driver_path}: {e} (make setup installs chromium-driver)"));
        let driver = Driver(driver);
        let status = format!("http://127.0.0.1:{port}/status");
        wait_until("chromedriver", 20, || send("GET", &status, &[], b"").is_some_and(|a| a.status == 200));
        let profile = TempDir::new("chromium");
        let capabilities = json!({
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--window-size=1280,900", format!("--user-data-dir={}", profile.0.display())]
            }
        });
        let serde_json::Value::Object(capabilities) = capabilities else { unreachable!() };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session through chromedriver");
        Browser { client, _driver: driver, _profile: profile }
    }

    /// Ends the session (Chromium quits), then chromedriver stops when the handle drops.
    pub async fn stop(self) {
        let _ = self.client.clone().close().await;
    }

    /// Waits (up to 90 s) until the address bar passes `check`: a click returns before the
    /// navigation it starts has finished. Panics saying `what`, with the page.
    pub async fn until_url(&self, what: &str, check: impl Fn(&str) -> bool) {
        for _ in 0..900 {
            if self.client.current_url().await.is_ok_and(|url| check(url.as_str())) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("{what}: not within 90 s; at {:?}: {}", self.client.current_url().await, self.source().await);
    }

    /// The page's source.
    pub async fn source(&self) -> String {
        self.client.source().await.expect("the page's source")
    }
}
