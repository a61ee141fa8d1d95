//! Rules checked by reading the sources (as rust-analyzer's tidy tests do): every server a
//! test starts listens on 127.0.0.1, on a port the system picks, and is stopped by its handle;
//! credentials and signatures compare only in constant time, which no behaviour test can tell.

#[cfg(test)]
mod rules {
    use std::path::Path;

    /// Every `.rs` and `.mjs` file under `dir`, as (path relative to `tests/`, text).
    fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "mjs") {
                let name = path.strip_prefix(crate::process::repo_root().join("tests")).unwrap().display().to_string();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    #[test]
    fn every_server_a_test_starts_listens_on_loopback_on_an_ephemeral_port_and_stops_with_its_handle() {
        let mut files = Vec::new();
        for dir in ["src", "bin", "it", "support", "benches", "soak_small"] {
            sources(&crate::process::repo_root().join("tests").join(dir), &mut files);
        }
        let mut problems = Vec::new();
        for (path, text) in files.iter().filter(|(path, _)| path != "src/tidy.rs") {
            for (n, line) in text.lines().enumerate() {
                let at = format!("{path}:{}", n + 1);
                if line.contains("0.0.0.0") || line.contains("[::]") {
                    problems.push(format!("{at}: every address: {}", line.trim()));
                }
                if let Some((_, argument)) = line.split_once("TcpListener::bind(") {
                    if !argument.starts_with("\"127.0.0.1:0\"") {
                        problems.push(format!("{at}: a listener not on 127.0.0.1:0: {}", line.trim()));
                    }
                }
            }
        }
        // The servers other programs run are told to listen on 127.0.0.1 (on a port just
        // picked by the system, `free_port`), and each handle stops its server when dropped.
        let text_of = |path: &str| files.iter().find(|(p, _)| p == path).map(|(_, t)| t.as_str()).unwrap_or("");
        for (path, told) in [
            ("src/ministack.rs", r#".env("BIND_HOST", "127.0.0.1")"#),
            ("src/ministack.rs", "impl Drop for Ministack"),
            ("src/postgres.rs", "-h 127.0.0.1 -p {port}"),
            ("src/postgres.rs", "impl Drop for Postgres"),
            ("support/edge-runner.mjs", r#"host: "127.0.0.1""#),
            ("support/edge-runner.mjs", "port: 0,"),
            ("src/edge.rs", "impl Drop for Edge"),
            ("src/stub_http.rs", "impl Drop for StubServer"),
            ("src/proxy.rs", "impl Drop for FaultProxy"),
            ("src/worker.rs", "impl Drop for PollerProcess"),
        ] {
            if !text_of(path).contains(told) {
                problems.push(format!("{path}: no `{told}`"));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// The attribute lines right above `item` in `text`.
    fn attributes_of<'a>(text: &'a str, item: &str) -> Vec<&'a str> {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.starts_with(item)).unwrap_or_else(|| panic!("no `{item}`"));
        lines[..at].iter().rev().take_while(|l| l.starts_with("#[") || l.starts_with("///")).copied().collect()
    }

    /// The text of `impl_line`'s block, up to the first line that is just `}`.
    fn block<'a>(text: &'a str, impl_line: &str) -> Option<&'a str> {
        let start = text.find(impl_line)?;
        let end = text[start..].find("\n}\n").map_or(text.len(), |e| start + e);
        Some(&text[start..end])
    }

    #[test]
    fn credentials_and_signatures_compare_only_in_constant_time() {
        let shared = crate::process::repo_root().join("shared/src");
        let secret = std::fs::read_to_string(shared.join("secret.rs")).unwrap();
        let auth = std::fs::read_to_string(shared.join("auth.rs")).unwrap();
        let mut problems = Vec::new();
        for (text, item) in
            [(&secret, "pub struct Credential"), (&secret, "pub struct SigningSecret"), (&auth, "struct Tag")]
        {
            if attributes_of(text, item).iter().any(|l| l.starts_with("#[derive") && l.contains("PartialEq")) {
                problems.push(format!("`{item}` derives PartialEq: `==` would not be constant time"));
            }
        }
        // `==` on a credential or a signing secret is the constant-time comparison.
        for item in ["impl PartialEq for Credential", "impl PartialEq for SigningSecret"] {
            if !block(&secret, item).is_some_and(|b| b.contains("ct_eq")) {
                problems.push(format!("no `{item}` comparing with ct_eq"));
            }
        }
        // A computed signature has no `==` at all; its one comparison is ct_eq.
        if auth.contains("impl PartialEq for Tag") || !block(&auth, "impl Tag").is_some_and(|b| b.contains("ct_eq")) {
            problems.push("`Tag` must compare only through ct_eq, with no PartialEq".into());
        }
        // Bearer tokens, Basic pairs and custom header values all go through `matches_any`, which
        // compares the presented value's digest with every accepted one, in constant time and
        // without stopping at the first match (no `==`, no short-circuit).
        match block(&secret, "pub fn matches_any") {
            None => problems.push("no `pub fn matches_any` in secret.rs".into()),
            Some(body) => {
                if !body.contains("ct_eq") {
                    problems.push("`matches_any` must compare with ct_eq".into());
                }
                for early in ["==", "!=", "||", "&&", ".any(", ".find(", ".position(", "return", "break", "?;"] {
                    if body.contains(early) {
                        problems.push(format!(
                            "`matches_any` holds `{early}`: it would not compare every value in constant time"
                        ));
                    }
                }
            }
        }
        for check in ["fn check_bearer", "fn check_basic", "fn check_header"] {
            match block_in_impl(&auth, check) {
                Some(body) if body.contains("matches_any(") => {
                    // ... and through nothing else: no other comparison beside it.
                    for other in ["==", "!=", "||", ".eq(", "contains(", "starts_with(", "ct_eq"] {
                        if body.contains(other) {
                            problems.push(format!("auth.rs `{check}` compares with `{other}` beside matches_any"));
                        }
                    }
                }
                _ => problems.push(format!("auth.rs `{check}` must compare through matches_any")),
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// The text of the method `fn_line` inside an impl, up to its closing line `    }`.
    fn block_in_impl<'a>(text: &'a str, fn_line: &str) -> Option<&'a str> {
        let start = text.find(fn_line)?;
        let end = text[start..].find("\n    }\n").map_or(text.len(), |e| start + e);
        Some(&text[start..end])
    }
}
