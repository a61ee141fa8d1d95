//! The command line: what to run, from the arguments, with a usage text for anything else.

use std::time::Duration;

use shared::profile::Profile;
use shared::receipt::ReceiptStatus;

/// The usage text, printed with every argument error.
pub const USAGE: &str = "\
usage:
  stream-worker                                  run as the Lambda function
  stream-worker poll                             poll the table's stream (local mode)
  stream-worker reconcile --older-than <age> [--scan] [--force] [--json]
                                                 settle receipts still RECEIVED after <age>
                                                 (over 1h, the stream's maximum record age,
                                                 unless --force)
  stream-worker receipts list [--status RECEIVED|COMPLETED|FAILED] [--since <time|age>] [--json]
  stream-worker receipts show <submissionId> [--profile <name>] [--payload] [--json]
  stream-worker receipts redrive (<submissionId> [--profile <name>] | --status FAILED) [--wait <age>] [--force] [--json]
<age>: a number and a unit, s, m, h or d (90s, 15m, 2h, 7d); <time>: ISO-8601 UTC
(2026-11-30T06:00:00Z); <name>: the sender profile (staticforms, the default, standard-webhooks,
typeform, tally). Settings come from the environment (RECEIPTS_TABLE, LEAD_SINK, ...).";

/// What the arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The Lambda function (no arguments).
    Lambda,
    /// `poll`.
    Poll,
    /// `reconcile`.
    Reconcile { older_than: Duration, scan: bool, json: bool },
    /// `receipts list`.
    List { status: Option<ReceiptStatus>, since: Option<Since>, json: bool },
    /// `receipts show`: the receipt of one submission of one sender profile.
    Show { profile: Profile, submission_id: String, payload: bool, json: bool },
    /// `receipts redrive`: one submission, or every receipt with a status; how long to wait for
    /// the stream's verdict on a reopened receipt (default 60 s); `force`: settle a `RECEIVED`
    /// receipt even while the stream may still retry it.
    Redrive { target: RedriveTarget, wait: Duration, force: bool, json: bool },
}

/// `--since`: a time, or an age before now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Since {
    At(String),
    Ago(Duration),
}

/// What `receipts redrive` works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedriveTarget {
    /// One submission of one sender profile.
    One(Profile, String),
    /// Every `FAILED` receipt.
    AllFailed,
}

/// Reads the arguments (without the program name); the error says what is wrong.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let (command, rest) = match words.as_slice() {
        [] => return Ok(Command::Lambda),
        ["poll"] => return Ok(Command::Poll),
        ["reconcile", rest @ ..] => ("reconcile", rest),
        ["receipts", "list", rest @ ..] => ("list", rest),
        ["receipts", "show", rest @ ..] => ("show", rest),
        ["receipts", "redrive", rest @ ..] => ("redrive", rest),
        [first, ..] => return Err(format!("unknown command {first:?}")),
    };
    let mut options = Options::default();
    let mut positional = Vec::new();
    let mut it = rest.iter();
    while let Some(word) = it.next() {
        let mut value = |name: &str| it.next().map(|v| (*v).to_owned()).ok_or(format!("{name} needs a value"));
        match *word {
            "--json" => options.json = true,
            "--scan" if command == "reconcile" => options.scan = true,
            "--payload" if command == "show" => options.payload = true,
            "--force" if command == "redrive" || command == "reconcile" => options.force = true,
            "--older-than" if command == "reconcile" => options.older_than = Some(age(&value(word)?)?),
            "--wait" if command == "redrive" => options.wait = Some(age(&value(word)?)?),
            "--status" if command == "list" || command == "redrive" => options.status = Some(status(&value(word)?)?),
            "--since" if command == "list" => options.since = Some(since(&value(word)?)?),
            "--profile" if command == "show" || command == "redrive" => {
                let name = value(word)?;
                let known = Profile::parse(&name).ok_or(format!("{name:?} is not a sender profile"))?;
                options.profile = Some(known);
            }
            option if option.starts_with("--") => return Err(format!("{option} is not an option of {command}")),
            word => positional.push(word.to_owned()),
        }
    }
    let json = options.json;
    let (wait, force) = (options.wait.unwrap_or(REDRIVE_WAIT), options.force);
    let profile = options.profile.unwrap_or(Profile::StaticForms);
    match (command, positional.as_slice()) {
        ("reconcile", []) => match options.older_than {
            Some(older_than) => {
                if !force {
                    reconcile_age(older_than).map_err(|why| format!("--older-than: {why}; or add --force"))?;
                }
                Ok(Command::Reconcile { older_than, scan: options.scan, json })
            }
            None => Err("reconcile needs --older-than <age>".into()),
        },
        ("list", []) => Ok(Command::List { status: options.status, since: options.since, json }),
        ("show", [id]) => Ok(Command::Show { profile, submission_id: id.clone(), payload: options.payload, json }),
        ("show", _) => Err("receipts show needs one submission ID".into()),
        ("redrive", [id]) if options.status.is_none() => {
            Ok(Command::Redrive { target: RedriveTarget::One(profile, id.clone()), wait, force, json })
        }
        ("redrive", []) if options.profile.is_some() => Err("--profile goes with one submission ID".into()),
        ("redrive", []) => match options.status {
            Some(ReceiptStatus::Failed) => Ok(Command::Redrive { target: RedriveTarget::AllFailed, wait, force, json }),
            Some(_) => Err("receipts redrive --status takes only FAILED".into()),
            None => Err("receipts redrive needs a submission ID or --status FAILED".into()),
        },
        (_, extra) => Err(format!("unexpected argument(s): {}", extra.join(" "))),
    }
}

#[derive(Default)]
struct Options {
    json: bool,
    scan: bool,
    payload: bool,
    force: bool,
    older_than: Option<Duration>,
    wait: Option<Duration>,
    status: Option<ReceiptStatus>,
    since: Option<Since>,
    profile: Option<Profile>,
}

/// Refuses a reconcile age within the stream's maximum record age: the stream may still retry
/// such a receipt, and the two would call the sink for it at the same time (a CRM's upsert is
/// not atomic under concurrent calls).
pub fn reconcile_age(older_than: Duration) -> Result<(), String> {
    let limit = crate::operate::STREAM_MAX_RECORD_AGE;
    if older_than <= limit {
        return Err(format!(
            "{}s is within the stream's maximum record age ({}s): reconcile could take a receipt the stream still retries; give more than that",
            older_than.as_secs(),
            limit.as_secs()
        ));
    }
    Ok(())
}

/// How long `receipts redrive` waits for the stream to settle a reopened receipt by default.
pub const REDRIVE_WAIT: Duration = Duration::from_secs(60);

/// `90s`, `15m`, `2h`, `7d` (`0s` too).
pub fn age(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not an age such as 90s, 15m, 2h or 7d");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    number.checked_mul(seconds).map(Duration::from_secs).ok_or_else(bad)
}

fn status(text: &str) -> Result<ReceiptStatus, String> {
    ReceiptStatus::parse(&text.to_ascii_uppercase())
        .ok_or_else(|| format!("{text:?} is not a status: RECEIVED, COMPLETED or FAILED"))
}

/// An ISO-8601 UTC time (`2026-11-30`, `2026-11-30T06:00:00Z`, with milliseconds or not), or
/// an age.
fn since(text: &str) -> Result<Since, String> {
    if let Ok(ago) = age(text) {
        return Ok(Since::Ago(ago));
    }
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| b.get(range).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let date = b.len() >= 10 && digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10);
    let time = b.len() == 10 || (b.len() >= 20 && b[10] == b'T' && text.ends_with('Z') && digits(11..13));
    if date && time {
        // Receipts compare as text: `receivedAt` is always `YYYY-MM-DDTHH:MM:SS.mmmZ`.
        return Ok(Since::At(text.trim_end_matches('Z').to_owned()));
    }
    Err(format!("{text:?} is neither an ISO-8601 UTC time (2026-11-30T06:00:00Z) nor an age (2h)"))
}

impl Since {
    /// The earliest `receivedAt` to list, given the time now (epoch milliseconds).
    pub fn cutoff(&self, now_millis: u64) -> String {
        match self {
            Since::At(at) => at.clone(),
            Since::Ago(ago) => shared::time::iso8601_millis(now_millis.saturating_sub(ago.as_millis() as u64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn reconcile_never_takes_a_receipt_the_stream_still_retries_unless_forced() {
        for age in ["15m", "1h", "3600s", "60m"] {
            let refused = parse(&args(&format!("reconcile --older-than {age}")));
            assert!(
                refused.as_ref().is_err_and(|e| e.starts_with("--older-than: ") && e.contains("--force")),
                "{age}: {refused:?}"
            );
        }
        let just_past = parse(&args("reconcile --older-than 3601s"));
        assert_eq!(
            just_past,
            Ok(Command::Reconcile { older_than: Duration::from_secs(3_601), scan: false, json: false })
        );
        assert!(parse(&args("reconcile --force --older-than 1m")).is_ok());
        assert!(reconcile_age(Duration::from_secs(7_200)).is_ok());
        assert!(reconcile_age(crate::operate::STREAM_MAX_RECORD_AGE).is_err());
    }

    #[test]
    fn commands_and_options() {
        assert_eq!(parse(&[]), Ok(Command::Lambda));
        assert_eq!(parse(&args("poll")), Ok(Command::Poll));
        assert_eq!(
            parse(&args("reconcile --older-than 15m --json --force")),
            Ok(Command::Reconcile { older_than: Duration::from_secs(900), scan: false, json: true })
        );
        assert_eq!(
            parse(&args("reconcile --scan --older-than 2h")),
            Ok(Command::Reconcile { older_than: Duration::from_secs(7_200), scan: true, json: false })
        );
        assert_eq!(
            parse(&args("receipts list --status failed --since 1d")),
            Ok(Command::List {
                status: Some(ReceiptStatus::Failed),
                since: Some(Since::Ago(Duration::from_secs(86_400))),
                json: false
            })
        );
        assert_eq!(
            parse(&args("receipts list --since 2026-11-30T06:00:00Z")),
            Ok(Command::List { status: None, since: Some(Since::At("2026-11-30T06:00:00".into())), json: false })
        );
        assert_eq!(
            parse(&args("receipts show sub_1 --payload")),
            Ok(Command::Show {
                profile: Profile::StaticForms,
                submission_id: "sub_1".into(),
                payload: true,
                json: false
            })
        );
        assert_eq!(
            parse(&args("receipts show 2wgx4n --profile tally")),
            Ok(Command::Show { profile: Profile::Tally, submission_id: "2wgx4n".into(), payload: false, json: false })
        );
        assert_eq!(
            parse(&args("receipts redrive --profile typeform f:t")),
            Ok(Command::Redrive {
                target: RedriveTarget::One(Profile::Typeform, "f:t".into()),
                wait: REDRIVE_WAIT,
                force: false,
                json: false
            })
        );
        assert_eq!(
            parse(&args("receipts redrive sub_1 --json --force")),
            Ok(Command::Redrive {
                target: RedriveTarget::One(Profile::StaticForms, "sub_1".into()),
                wait: REDRIVE_WAIT,
                force: true,
                json: true
            })
        );
        assert_eq!(
            parse(&args("receipts redrive --status FAILED --wait 0s")),
            Ok(Command::Redrive { target: RedriveTarget::AllFailed, wait: Duration::ZERO, force: false, json: false })
        );
    }

    #[test]
    fn mistakes_say_what_is_wrong() {
        for (line, expected) in [
            ("reconcile", "needs --older-than"),
            ("reconcile --older-than soon", "is not an age"),
            ("reconcile --older-than 5w", "is not an age"),
            ("reconcile --payload", "not an option of reconcile"),
            ("receipts show", "one submission ID"),
            ("receipts show a b", "one submission ID"),
            ("receipts list --status LOST", "is not a status"),
            ("receipts list --since yesterday", "neither an ISO-8601"),
            ("receipts redrive", "needs a submission ID"),
            ("receipts redrive --status COMPLETED", "takes only FAILED"),
            ("receipts list extra", "unexpected argument"),
            ("receipts list --status", "needs a value"),
            ("receipts show s --profile typeforms", "is not a sender profile"),
            ("receipts list --profile tally", "not an option of list"),
            ("receipts redrive --status FAILED --profile tally", "goes with one submission ID"),
            ("deploy", "unknown command"),
        ] {
            let error = parse(&args(line)).expect_err(line);
            assert!(error.contains(expected), "{line}: {error}");
        }
    }

    #[test]
    fn ages_and_cutoffs() {
        assert_eq!(age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(age("7d"), Ok(Duration::from_secs(604_800)));
        assert!(age("").is_err() && age("m").is_err() && age("99999999999999999999d").is_err());
        assert_eq!(Since::Ago(Duration::from_secs(60)).cutoff(1_796_019_713_123), "2026-11-30T06:20:53.123Z");
        assert_eq!(Since::At("2026-11-30".into()).cutoff(0), "2026-11-30");
    }
}
