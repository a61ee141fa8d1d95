//! Replays the seed corpus (and anything fuzzing found and was kept) through every target's
//! checks, on stable: the regression half of fuzzing, in `make test`.

use std::path::Path;

/// Each target's corpus must hold at least this many inputs, so a missing or emptied
/// directory fails instead of passing with nothing checked.
const MIN_SEEDS: usize = 8;

#[test]
fn every_corpus_file_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, check) in fuzz::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a corpus entry").path())
            .collect();
        files.sort();
        assert!(files.len() >= MIN_SEEDS, "{name}: {} inputs, want at least {MIN_SEEDS}", files.len());
        let mut taken = std::collections::BTreeSet::new();
        for file in files {
            let data = std::fs::read(&file).expect("a corpus file reads");
            match std::panic::catch_unwind(|| check(&data)) {
                Ok(path) => taken.insert(path),
                Err(_) => panic!("{name}: {} fails its check", file.display()),
            };
        }
        // The seeds reach every path the target names, so the checks on each path ran.
        let (_, paths) = fuzz::PATHS.iter().find(|(target, _)| target == name).expect("every target names its paths");
        let all: std::collections::BTreeSet<&str> = paths.iter().copied().collect();
        assert_eq!(taken, all, "{name}: the paths the corpus takes");
    }
}

/// The framing the header-carrying targets share.
#[test]
fn framing_splits_headers_from_the_body() {
    let (headers, body) = fuzz::framed(b"A: 1\nb:2\nno colon\n\n{\"x\":1}\n\nrest");
    assert_eq!(headers.get("a"), Some("1"));
    assert_eq!(headers.get("B"), Some("2"));
    assert_eq!(body, b"{\"x\":1}\n\nrest");
    let (headers, body) = fuzz::framed(b"no blank line");
    assert_eq!(headers.get("no blank line"), None);
    assert_eq!(body, b"no blank line");
}

/// Every registered profile's example delivery, signed with the fuzz credentials as its
/// `SenderAuth` says (by the core), passes the `receive` target's checks and is stored (the
/// oracle judges the signature with an HMAC of its own): a new profile's example meets the
/// fuzz checks with no test written for it. Its hostile seeds are `seeds.py`'s, per profile.
#[test]
fn every_registered_profile_s_example_is_stored_by_the_receive_target() {
    use shared::profile::registry::sender;
    use shared::profile::sender::SenderAuth;
    use shared::profile::Profile;
    for profile in Profile::ALL {
        let example = sender(profile).example("fuzz-example-1", "an answer");
        let mut headers: Vec<(String, String)> =
            example.headers.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
        let secret = shared::secret::SigningSecret::parse(fuzz::SIGNING_SECRET).unwrap();
        let form = shared::secret::SigningSecret::plain(fuzz::FORM_SECRET).unwrap();
        match sender(profile).auth() {
            SenderAuth::StaticForms => headers.push(("Authorization".into(), format!("Bearer {}", fuzz::BEARER))),
            SenderAuth::StandardWebhooks { .. } => {
                let id = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("webhook-id")).unwrap().1.clone();
                let timestamp = (fuzz::NOW_MILLIS / 1000).to_string();
                let signature = shared::auth::signature_header(&secret, &id, &timestamp, &example.body);
                headers.extend([("webhook-timestamp".into(), timestamp), ("webhook-signature".into(), signature)]);
            }
            SenderAuth::BodySigned { scheme, .. } => {
                let config = shared::auth::BodySignature::new(scheme, vec![]);
                let others = shared::headers::Headers::new(headers.clone());
                let now = fuzz::NOW_MILLIS;
                headers.extend(shared::auth::body_signature_headers(&config, &form, &others, &example.body, now));
            }
        }
        let mut data: Vec<u8> = headers.iter().flat_map(|(n, v)| format!("{n}: {v}\n").into_bytes()).collect();
        data.push(b'\n');
        data.extend_from_slice(&example.body);
        let want = if profile == Profile::StaticForms { "stored" } else { "stored_by_another_profile" };
        assert_eq!(fuzz::receive_delivery(&data), want, "{profile:?}");
    }
}
