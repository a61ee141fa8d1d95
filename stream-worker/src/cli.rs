//! The command line (clap): what to run, from the arguments; `--help` and every mistake get
//! clap's usage text.

use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};
use shared::profile::Profile;
use shared::receipt::ReceiptStatus;

/// What `--help` says after the commands and options.
fn after_help() -> String {
    let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
    format!(
        "<age>: a number and a unit, s, m, h or d (90s, 15m, 2h, 7d); <time>: ISO-8601 UTC
(2026-11-30T06:00:00Z); <name>: the sender profile (staticforms by default), one of:
{}. A submission ID that begins with - goes after -- (receipts show -- -a1).
Settings come from the environment (RECEIPTS_TABLE, LEAD_SINK, ...).",
        names.join(", ")
    )
}

/// What the arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The Lambda function (no arguments).
    Lambda,
    /// `poll`.
    Poll,
    /// `reconcile`.
    Reconcile { older_than: Duration, scan: bool, json: bool },
    /// `receipts list`: of one status, or (none) those that need attention, `RECEIVED` and
    /// `FAILED`, from their indexes; `all`: every receipt, by a scan of the table.
    List { status: Option<ReceiptStatus>, all: bool, since: Option<Since>, json: bool },
    /// `receipts show`: the receipt of one submission of one sender profile; `as_lead`: what
    /// the configured sink would send for it instead, without sending it.
    Show { profile: Profile, submission_id: String, payload: bool, json: bool, as_lead: bool },
    /// `profiles`: the registered sender profiles as JSON, with each one's example delivery
    /// for an identity and a free-text answer when given.
    Profiles { example: Option<(String, String)> },
    /// `receipts redrive`: one submission, or every receipt with a status; how long to wait for
    /// the stream's verdict on a reopened receipt (default 60 s); `force`: settle a `RECEIVED`
    /// receipt even while the stream may still retry it.
    Redrive { target: RedriveTarget, wait: Duration, force: bool, json: bool },
    /// `console`: the local web page over the receipts, on 127.0.0.1:`port` (0: any free
    /// port); a redrive waits up to `wait` for the stream's verdict; `read_only`: no redrive,
    /// and no sink settings needed (only the table).
    Console { port: u16, wait: Duration, read_only: bool },
    /// `mapping check`: the lead mapping checked against the configured CRM, each mapped field
    /// printed with its type.
    MappingCheck,
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

/// The command line as clap reads it.
#[derive(Parser, Debug)]
#[command(
    name = "stream-worker",
    about = "Turns receipts into leads: the Lambda function (no arguments), the local poller, and the operator's commands.",
    after_help = after_help()
)]
struct Arguments {
    #[command(subcommand)]
    command: Option<Top>,
}

#[derive(Subcommand, Debug)]
enum Top {
    /// Poll the table's stream (local mode).
    Poll,
    /// Settle receipts still RECEIVED after <age> (over 1h, the stream's maximum record age,
    /// unless --force).
    Reconcile {
        #[arg(long, value_name = "age", value_parser = age)]
        older_than: Duration,
        /// Scan the table instead of querying the pending index.
        #[arg(long)]
        scan: bool,
        /// Take an age within the stream's maximum record age.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print the sender profiles as JSON: name, route, signature, secrets variable.
    Profiles {
        /// Also each profile's example delivery for this identity.
        #[arg(long, value_name = "id")]
        example: Option<String>,
        /// The example's free-text answer.
        #[arg(long, value_name = "text", default_value = "Hello", requires = "example")]
        answer: String,
    },
    /// Serve a web page over the receipts on 127.0.0.1 (list, show, redrive); prints its
    /// login URL, which works once.
    Console {
        /// The port (by default any free one).
        #[arg(long, value_name = "port", default_value_t = 0)]
        port: u16,
        /// How long a redrive waits for the stream's verdict.
        #[arg(long, value_name = "age", value_parser = age, default_value = "60s")]
        wait: Duration,
        /// Only read: list and show receipts, no redrive button. Needs only RECEIPTS_TABLE and
        /// read access to it, not the sink's settings.
        #[arg(long, conflicts_with = "wait")]
        read_only: bool,
    },
    /// Read and repair receipts.
    Receipts {
        #[command(subcommand)]
        command: Receipts,
    },
    /// The lead mapping (LEAD_MAPPING or LEAD_MAPPING_FILE).
    Mapping {
        #[command(subcommand)]
        command: Mapping,
    },
}

#[derive(Subcommand, Debug)]
enum Mapping {
    /// Check the mapping against the configured CRM: print each mapped field with its type
    /// and what it takes; exit non-zero on any problem.
    Check,
}

#[derive(Subcommand, Debug)]
enum Receipts {
    /// List receipts, oldest first: those RECEIVED or FAILED (from their indexes), one
    /// status, or every one (--all, a scan of the whole table).
    List {
        #[arg(long, value_name = "RECEIVED|COMPLETED|FAILED", value_parser = status)]
        status: Option<ReceiptStatus>,
        /// Every receipt, COMPLETED ones too: reads the whole table.
        #[arg(long, conflicts_with = "status")]
        all: bool,
        #[arg(long, value_name = "time|age", value_parser = since)]
        since: Option<Since>,
        #[arg(long)]
        json: bool,
    },
    /// Show one submission's receipt.
    Show {
        #[arg(value_name = "submissionId")]
        submission_id: String,
        #[arg(long, value_name = "name", value_parser = profile, default_value = "staticforms")]
        profile: Profile,
        /// Include the submission's payload (form contents).
        #[arg(long)]
        payload: bool,
        #[arg(long)]
        json: bool,
        /// Print what the configured sink would send for it (form contents), as JSON, without
        /// sending it; needs the sink's settings (and LEAD_MAPPING).
        #[arg(long, conflicts_with_all = ["payload", "json"])]
        as_lead: bool,
    },
    /// Reopen one submission's receipt, or every FAILED one, for the stream.
    Redrive {
        #[arg(value_name = "submissionId", required_unless_present = "status", conflicts_with = "status")]
        submission_id: Option<String>,
        #[arg(long, value_name = "name", value_parser = profile, conflicts_with = "status")]
        profile: Option<Profile>,
        #[arg(long, value_name = "FAILED", value_parser = failed_only)]
        status: Option<ReceiptStatus>,
        #[arg(long, value_name = "age", value_parser = age, default_value = "60s")]
        wait: Duration,
        /// Settle a RECEIVED receipt even while the stream may still retry it.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
}

/// Reads the arguments (without the program name). The error is clap's: `--help` and a
/// mistake alike, printed and exited with by [`clap::Error::exit`].
pub fn parse(args: &[String]) -> Result<Command, clap::Error> {
    let words = std::iter::once("stream-worker").chain(args.iter().map(String::as_str));
    let Some(top) = Arguments::try_parse_from(words)?.command else { return Ok(Command::Lambda) };
    Ok(match top {
        Top::Poll => Command::Poll,
        Top::Reconcile { older_than, scan, force, json } => {
            if !force {
                reconcile_age(older_than).map_err(|why| {
                    Arguments::command()
                        .error(ErrorKind::ValueValidation, format!("--older-than: {why}; or add --force"))
                })?;
            }
            Command::Reconcile { older_than, scan, json }
        }
        Top::Console { port, wait, read_only } => Command::Console { port, wait, read_only },
        Top::Profiles { example, answer } => Command::Profiles { example: example.map(|id| (id, answer)) },
        Top::Mapping { command: Mapping::Check } => Command::MappingCheck,
        Top::Receipts { command: Receipts::List { status, all, since, json } } => {
            Command::List { status, all, since, json }
        }
        Top::Receipts { command: Receipts::Show { submission_id, profile, payload, json, as_lead } } => {
            Command::Show { profile, submission_id, payload, json, as_lead }
        }
        Top::Receipts { command: Receipts::Redrive { submission_id, profile, status: _, wait, force, json } } => {
            let target = match submission_id {
                Some(id) => RedriveTarget::One(profile.unwrap_or(Profile::StaticForms), id),
                None => RedriveTarget::AllFailed,
            };
            Command::Redrive { target, wait, force, json }
        }
    })
}

/// Refuses a reconcile age within the stream's maximum record age, the stream function's
/// timeout and a slack after it ([`crate::operate::RECONCILE_MIN_AGE`]): the stream may still retry such a
/// receipt, and the two would call the sink for it at the same time (a CRM's upsert is not
/// atomic under concurrent calls).
pub fn reconcile_age(older_than: Duration) -> Result<(), String> {
    use crate::operate::{RECONCILE_MIN_AGE, STREAM_FUNCTION_TIMEOUT, STREAM_MAX_RECORD_AGE, STREAM_SLACK};
    if older_than <= RECONCILE_MIN_AGE {
        return Err(format!(
            "{}s is within the stream's maximum record age ({}s), its function's timeout ({}s) and {}s of slack: reconcile could take a receipt the stream still retries; give more than {}s",
            older_than.as_secs(),
            STREAM_MAX_RECORD_AGE.as_secs(),
            STREAM_FUNCTION_TIMEOUT.as_secs(),
            STREAM_SLACK.as_secs(),
            RECONCILE_MIN_AGE.as_secs()
        ));
    }
    Ok(())
}

/// How long `receipts redrive` waits for the stream to settle a reopened receipt by default
/// (the `--wait` default above).
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

pub fn status(text: &str) -> Result<ReceiptStatus, String> {
    ReceiptStatus::parse(&text.to_ascii_uppercase())
        .ok_or_else(|| format!("{text:?} is not a status: RECEIVED, COMPLETED or FAILED"))
}

/// `receipts redrive --status`: only `FAILED` (a COMPLETED receipt is done; a RECEIVED one is
/// the stream's, or `--force` of one submission).
fn failed_only(text: &str) -> Result<ReceiptStatus, String> {
    match status(text)? {
        ReceiptStatus::Failed => Ok(ReceiptStatus::Failed),
        _ => Err(format!("receipts redrive --status takes only FAILED, not {text:?}")),
    }
}

fn profile(name: &str) -> Result<Profile, String> {
    Profile::parse(name).ok_or(format!("{name:?} is not a sender profile"))
}

/// An ISO-8601 UTC time (`2026-11-30`, `2026-11-30T06:00:00Z`, with milliseconds or not), or
/// an age.
pub fn since(text: &str) -> Result<Since, String> {
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

    /// `parse`, its error as the text clap prints.
    fn parse(args: &[String]) -> Result<Command, String> {
        super::parse(args).map_err(|e| e.to_string())
    }

    #[test]
    fn clap_s_own_checks_of_the_definition_pass() {
        Arguments::command().debug_assert();
        let help = Arguments::command().render_long_help().to_string();
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        assert!(help.contains(&format!("one of:\n{}.", names.join(", "))), "{help}");
    }

    #[test]
    fn reconcile_never_takes_a_receipt_the_stream_still_retries_unless_forced() {
        for age in ["15m", "1h", "3600s", "60m", "3601s", "3720s", "62m", "4020s", "67m"] {
            let refused = parse(&args(&format!("reconcile --older-than {age}")));
            assert!(
                refused.as_ref().is_err_and(|e| e.starts_with("error: --older-than: ") && e.contains("--force")),
                "{age}: {refused:?}"
            );
        }
        // Past the maximum record age by the stream function's timeout and the slack: no
        // invocation of the stream can still hold it.
        let just_past = parse(&args("reconcile --older-than 4021s"));
        assert_eq!(
            just_past,
            Ok(Command::Reconcile { older_than: Duration::from_secs(4_021), scan: false, json: false })
        );
        assert!(parse(&args("reconcile --force --older-than 1m")).is_ok());
        assert!(reconcile_age(Duration::from_secs(7_200)).is_ok());
        assert!(reconcile_age(crate::operate::STREAM_MAX_RECORD_AGE).is_err());
        assert_eq!(crate::operate::RECONCILE_MIN_AGE, Duration::from_secs(4_020));
    }

    #[test]
    fn commands_and_options() {
        assert_eq!(parse(&args("profiles")), Ok(Command::Profiles { example: None }));
        assert_eq!(
            parse(&args("profiles --example d-1 --answer hi")),
            Ok(Command::Profiles { example: Some(("d-1".into(), "hi".into())) })
        );
        assert_eq!(
            parse(&args("profiles --example d-1")),
            Ok(Command::Profiles { example: Some(("d-1".into(), "Hello".into())) })
        );
        assert!(parse(&args("profiles --answer hi")).unwrap_err().contains("--example"));
        assert_eq!(parse(&[]), Ok(Command::Lambda));
        assert_eq!(parse(&args("poll")), Ok(Command::Poll));
        let wait = Duration::from_secs(60);
        assert_eq!(parse(&args("console")), Ok(Command::Console { port: 0, wait, read_only: false }));
        assert_eq!(
            parse(&args("console --port 8123 --wait 5s")),
            Ok(Command::Console { port: 8123, wait: Duration::from_secs(5), read_only: false })
        );
        assert_eq!(parse(&args("console --read-only")), Ok(Command::Console { port: 0, wait, read_only: true }));
        assert!(parse(&args("console --read-only --wait 5s")).unwrap_err().contains("--wait"));
        assert!(parse(&args("console --port 70000")).is_err());
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
                all: false,
                since: Some(Since::Ago(Duration::from_secs(86_400))),
                json: false
            })
        );
        assert_eq!(
            parse(&args("receipts list --since 2026-11-30T06:00:00Z")),
            Ok(Command::List {
                status: None,
                all: false,
                since: Some(Since::At("2026-11-30T06:00:00".into())),
                json: false
            })
        );
        assert_eq!(
            parse(&args("receipts list --all --json")),
            Ok(Command::List { status: None, all: true, since: None, json: true })
        );
        assert!(parse(&args("receipts list --all --status FAILED")).unwrap_err().contains("--status"));
        assert_eq!(
            parse(&args("receipts show sub_1 --payload")),
            Ok(Command::Show {
                profile: Profile::StaticForms,
                submission_id: "sub_1".into(),
                payload: true,
                json: false,
                as_lead: false
            })
        );
        assert_eq!(
            parse(&args("receipts show 2wgx4n --profile tally")),
            Ok(Command::Show {
                profile: Profile::Tally,
                submission_id: "2wgx4n".into(),
                payload: false,
                json: false,
                as_lead: false
            })
        );
        assert_eq!(
            parse(&args("receipts show 2wgx4n --profile tally --as-lead")),
            Ok(Command::Show {
                profile: Profile::Tally,
                submission_id: "2wgx4n".into(),
                payload: false,
                json: false,
                as_lead: true
            })
        );
        assert!(parse(&args("receipts show sub_1 --as-lead --payload")).unwrap_err().contains("--payload"));
        assert_eq!(parse(&args("mapping check")), Ok(Command::MappingCheck));
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
            parse(&args("receipts show -- -a1")),
            Ok(Command::Show {
                profile: Profile::StaticForms,
                submission_id: "-a1".into(),
                payload: false,
                json: false,
                as_lead: false
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
            ("reconcile", "required arguments were not provided:\n  --older-than <age>"),
            ("reconcile --older-than soon", "is not an age"),
            ("reconcile --older-than 5w", "is not an age"),
            ("reconcile --payload", "unexpected argument '--payload'"),
            ("receipts show", "required arguments were not provided:\n  <submissionId>"),
            ("receipts show a b", "unexpected argument 'b'"),
            ("receipts list --status LOST", "is not a status"),
            ("receipts list --since yesterday", "neither an ISO-8601"),
            ("receipts redrive", "required arguments were not provided:\n  <submissionId>"),
            ("receipts redrive --status COMPLETED", "takes only FAILED"),
            ("receipts redrive s --status FAILED", "cannot be used with"),
            ("receipts list extra", "unexpected argument 'extra'"),
            ("receipts list --status", "a value is required for '--status"),
            ("receipts show s --profile typeforms", "is not a sender profile"),
            ("receipts list --profile tally", "unexpected argument '--profile'"),
            ("receipts redrive --status FAILED --profile tally", "cannot be used with '--profile <name>'"),
            ("receipts redrive --wait 0s", "required arguments were not provided:\n  <submissionId>"),
            ("deploy", "unrecognized subcommand 'deploy'"),
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
        assert_eq!(since("2026-11-30"), Ok(Since::At("2026-11-30".into())));
        assert_eq!(since("2026-11-30T06:00:00.123Z"), Ok(Since::At("2026-11-30T06:00:00.123".into())));
        // Each part of the form matters: digits where digits go, the dashes, the T and the Z.
        for bad in [
            "2026-11-3",
            "2026-11-3x",
            "x026-11-30",
            "2026x11-30",
            "2026-1x-30",
            "2026-11x30",
            "20261130",
            "2026-11-30T06:00:00",
            "2026-11-30X06:00:00Z",
            "2026-11-30T0x:00:00Z",
            "2026-11-30T06Z",
            "2026-11-30 ",
        ] {
            assert!(since(bad).is_err(), "{bad:?}");
        }
    }
}
