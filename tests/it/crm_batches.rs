//! The CRM sinks' batch calls through the stream worker and a real receipts table, against
//! the stand-ins with their documented limits. HubSpot (100 requests per rolling 10 s, 429
//! beyond): a stream batch of leads is a handful of calls, each lead decided by its own
//! input's answer, one person one contact, a crash between the calls and the receipts'
//! updates replays to one ticket per submission, a 429 inside a batch hands it back, and the
//! sink paces itself so it never meets a 429 at all. Salesforce (sObject Collections, a daily
//! allocation): one call per page of the stream, each record judged on its own, and no call
//! into the org's last tenth.

use std::time::Duration;

use stream_worker::handler::Handler;
use stream_worker::receipts::DynamoReceipts;
use stream_worker::sink::{BatchItem, LeadSink, Sink, SinkError};
use tests::aws::sample_lead;
use tests::crm::{HubSpotStandIn, SalesforceStandIn};
use tests::stub_http::FailNext;
use tests::worker::{self, World};

const ID_PROPERTY: &str = "static_forms_submission_id";

async fn hubspot(standin: &HubSpotStandIn) -> Sink {
    Sink::connect(&standin.sink_config()).await.unwrap()
}

fn handler(w: &World, sink: Sink) -> Handler<Sink, DynamoReceipts> {
    // The org's refusals are retried many times here: waits of milliseconds, doubling alike.
    let backoff = stream_worker::backoff::Backoff::starting_at(Duration::from_millis(5));
    Handler { backoff, mapping: Default::default(), sink, receipts: w.receipts() }
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{prefix}_{i:03}")).collect()
}

fn status(w: &World, id: &str) -> (String, Option<String>) {
    w.status(id).unwrap_or_else(|| panic!("{id}: no receipt"))
}

/// Calls the stand-in served, by kind (`POST /crm/v3/objects/tickets/batch/upsert`, ...).
fn calls_of(standin: &HubSpotStandIn, kind: &str) -> usize {
    standin.state.lock().unwrap().calls.iter().filter(|c| c.ends_with(kind)).count()
}

#[tokio::test]
async fn a_stream_batch_of_leads_from_few_people_is_four_calls_one_contact_each_and_a_ticket_each() {
    let w = World::start("hs-batch-calls").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let handler = handler(&w, hubspot(&standin).await);
    let at_start = standin.state.lock().unwrap().calls.len();
    // 60 submissions, 12 people (5 each, one of them under another case of the address).
    let subs = ids("sub_hsb", 60);
    for (i, id) in subs.iter().enumerate() {
        let email = if i == 12 { "Person0@Example.com".to_owned() } else { format!("person{}@example.com", i % 12) };
        w.deliver_form(id, &format!("Person {}", i % 12), &email, "Hello", &[]);
    }
    worker::drain(&w.poller(), &handler).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    let state = standin.state.lock().unwrap();
    assert_eq!((state.tickets.len(), state.contacts.len(), state.associations.len()), (60, 12, 60));
    let per_kind: Vec<usize> =
        ["tickets/batch/read", "contacts/batch/upsert", "tickets/batch/upsert", "batch/associate/default"]
            .iter()
            .map(|kind| state.calls.iter().filter(|c| c.ends_with(kind)).count())
            .collect();
    // The poller hands the stream over in pages; each page is one call of each kind, and
    // nothing else is called after the start-up check: four calls per batch, as documented.
    let pages = per_kind[0];
    assert!(pages >= 1 && per_kind.iter().all(|n| *n == pages), "{per_kind:?}");
    assert_eq!(state.calls.len() - at_start, 4 * pages, "{:?}", &state.calls[at_start..]);
    assert!(pages * 10 <= 60, "at least ten leads a batch: {pages} pages");
    assert_eq!(state.throttled, 0);
}

#[tokio::test]
async fn a_refused_input_fails_its_own_lead_and_its_neighbours_become_leads() {
    let w = World::start("hs-batch-refused").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let subs = ids("sub_hsr", 5);
    {
        let mut state = standin.state.lock().unwrap();
        // A 207 with mixed results: one ticket refused for its content.
        let refusal = serde_json::json!({"status": "error", "category": "VALIDATION_ERROR",
            "errors": [{"code": "INVALID_OPTION", "context": {"propertyName": ["subject"]}}]});
        state.refuse_inputs.insert(subs[2].clone(), refusal);
        // A contact the batch call refuses as a whole (409): split until it stands alone.
        state.conflicting_emails.insert("bob@example.com".into());
    }
    for (i, id) in subs.iter().enumerate() {
        let email = if i == 3 { "bob@example.com".to_owned() } else { format!("p{i}@example.com") };
        w.deliver_form(id, "Pat Doe", &email, "Hello", &[]);
    }
    worker::drain(&w.poller(), &handler(&w, hubspot(&standin).await)).await;
    assert_eq!(status(&w, &subs[2]), ("FAILED".into(), Some("sink_rejected".into())));
    for i in [0, 1, 3, 4] {
        assert_eq!(status(&w, &subs[i]), ("COMPLETED".into(), None), "{}", subs[i]);
    }
    let state = standin.state.lock().unwrap();
    assert_eq!(state.tickets.len(), 4);
    // Bob's contact was given up (a standing conflict), his ticket keeps the address.
    let bob = &state.tickets[&subs[3]].1;
    assert!(bob["content"].as_str().unwrap().ends_with("(email as submitted: bob@example.com)"), "{bob}");
    assert_eq!(state.contacts.len(), 4, "p0, p1, p2 and p4: p2's contact is written though its ticket was refused");
    assert_eq!(state.associations.len(), 3);
}

#[tokio::test]
async fn a_crash_after_the_batch_calls_replays_to_one_ticket_per_submission_untouched() {
    let w = World::start("hs-batch-crash").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let sink = hubspot(&standin).await;
    let subs = ids("sub_hsc", 8);
    let keys: Vec<String> = subs.iter().map(|id| w.deliver(id)).collect();
    // The calls go through, then the worker dies before any receipt is updated.
    let leads: Vec<_> = subs.iter().map(|id| sample_lead(id)).collect();
    let items: Vec<BatchItem<'_>> =
        leads.iter().zip(&keys).map(|(lead, key)| BatchItem { lead, receipt_key: key }).collect();
    assert!(sink.upsert_batch(&items, None).await.iter().all(Result::is_ok));
    for id in &subs {
        assert_eq!(status(&w, id), ("RECEIVED".into(), None), "{id}");
    }
    // An agent works one ticket meanwhile.
    standin.state.lock().unwrap().tickets.get_mut(&subs[0]).unwrap().1["hs_pipeline_stage"] = "4".into();
    standin.state.lock().unwrap().calls.clear();
    // The stream delivers the records again: every receipt completes, nothing is written twice.
    worker::drain(&w.poller(), &handler(&w, sink)).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    let state = standin.state.lock().unwrap();
    assert_eq!((state.tickets.len(), state.contacts.len(), state.associations.len()), (8, 1, 8));
    assert_eq!(state.tickets[&subs[0]].1["hs_pipeline_stage"], "4", "the agent's stage");
    assert!(!state.calls.iter().any(|c| c.ends_with("batch/upsert") || c.contains("associate")), "{:?}", state.calls);
}

#[tokio::test]
async fn a_429_inside_a_batch_hands_it_back_and_the_replay_writes_each_lead_once() {
    let w = World::start("hs-batch-429").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let handler = handler(&w, hubspot(&standin).await);
    let subs = ids("sub_hst", 6);
    for id in &subs {
        w.deliver(id);
    }
    // The contacts went in; the tickets' call meets the window used up by another app.
    standin.state.lock().unwrap().fail_path.insert("tickets/batch/upsert".into(), FailNext::new(1, 429));
    let pass = w.poller().pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 1, "{pass:?}");
    for id in &subs {
        assert_eq!(status(&w, id), ("RECEIVED".into(), None), "{id}");
    }
    worker::drain(&w.poller(), &handler).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    let state = standin.state.lock().unwrap();
    assert_eq!((state.tickets.len(), state.contacts.len(), state.associations.len()), (6, 1, 6));
}

#[tokio::test]
async fn the_sink_paces_itself_to_the_rate_limit_headers_and_meets_no_429() {
    let w = World::start("hs-batch-paced").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    // A tight window: two requests per second. Each page of the stream is four calls.
    standin.state.lock().unwrap().rate_limit = Some((2, Duration::from_secs(1)));
    let handler = handler(&w, hubspot(&standin).await);
    let subs = ids("sub_hsp", 30);
    for id in &subs {
        w.deliver(id);
    }
    worker::drain(&w.poller(), &handler).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    let state = standin.state.lock().unwrap();
    assert_eq!(state.throttled, 0, "paced: no request met the limit");
    assert_eq!(state.tickets.len(), 30);
    drop(state);
    assert!(calls_of(&standin, "batch/associate/default") >= 1);
}

const SF_FIELD: &str = "Static_Forms_Submission_Id__c";

fn salesforce() -> SalesforceStandIn {
    SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD)
}

async fn salesforce_sink(standin: &SalesforceStandIn) -> Sink {
    Sink::connect(&standin.sink_config()).await.unwrap()
}

#[tokio::test]
async fn salesforce_takes_a_stream_batch_in_one_collection_call_each_record_judged_on_its_own() {
    let w = World::start("sf-batch-mixed").await;
    let standin = salesforce();
    let subs = ids("sub_sfb", 40);
    {
        let mut state = standin.state.lock().unwrap();
        // Refused for its email only: saved once more without it.
        state.refused_emails.insert("refused@example.com".into());
        // Several Leads hold one ID: that record's own failure.
        state.ambiguous.insert(subs[5].clone());
    }
    for (i, id) in subs.iter().enumerate() {
        let email = if i == 7 { "refused@example.com".to_owned() } else { format!("v{i}@example.com") };
        w.deliver_form(id, "Ada Lovelace", &email, "Hello", &[]);
    }
    worker::drain(&w.poller(), &handler(&w, salesforce_sink(&standin).await)).await;
    assert_eq!(status(&w, &subs[5]), ("FAILED".into(), Some("sink_multiple_matches".into())));
    for (i, id) in subs.iter().enumerate().filter(|(i, _)| *i != 5) {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{i}");
    }
    let state = standin.state.lock().unwrap();
    assert_eq!(state.leads.len(), 39);
    assert!(state.leads[&subs[7]].get("Email").is_none(), "saved without the refused address");
    assert!(state.leads[&subs[7]]["Description"].as_str().unwrap().contains("refused@example.com"));
    // The poller's pages are one collection call each, and one more for the refused email.
    let records: usize = state.collections.iter().sum();
    assert_eq!(records, 41, "40 records, and one again without its email: {:?}", state.collections);
    assert!(state.collections.len() * 20 <= 40 * 2, "at most 0.05 calls per lead: {:?}", state.collections);
}

#[tokio::test]
async fn salesforce_stops_at_nine_tenths_of_the_allocation_and_hands_the_records_back() {
    let w = World::start("sf-batch-allocation").await;
    let standin = salesforce();
    {
        let mut state = standin.state.lock().unwrap();
        (state.api_limit, state.api_used) = (100, 89);
    }
    let handler = handler(&w, salesforce_sink(&standin).await);
    let (first, second) = ("sub_sfa_1", "sub_sfa_2");
    w.deliver(first);
    let pass = w.poller().pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 0, "{pass:?}");
    assert_eq!(status(&w, first), ("COMPLETED".into(), None));
    // That answer said 90 of 100: the next record waits, the org keeps its last tenth.
    w.deliver(second);
    let pass = w.poller().pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 1, "{pass:?}");
    assert_eq!(status(&w, second), ("RECEIVED".into(), None));
    assert_eq!(standin.state.lock().unwrap().api_used, 90, "no call past nine tenths");
}

#[tokio::test]
async fn salesforce_a_crash_after_the_collection_call_replays_to_one_lead_per_submission() {
    let w = World::start("sf-batch-crash").await;
    let standin = salesforce();
    let sink = salesforce_sink(&standin).await;
    let subs = ids("sub_sfc", 8);
    let keys: Vec<String> = subs.iter().map(|id| w.deliver(id)).collect();
    let leads: Vec<_> = subs.iter().map(|id| sample_lead(id)).collect();
    let items: Vec<BatchItem<'_>> =
        leads.iter().zip(&keys).map(|(lead, key)| BatchItem { lead, receipt_key: key }).collect();
    assert!(sink.upsert_batch(&items, None).await.iter().all(Result::is_ok));
    worker::drain(&w.poller(), &handler(&w, sink)).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    assert_eq!(standin.state.lock().unwrap().leads.len(), 8, "one Lead per submission after the replay");
}

#[tokio::test]
async fn salesforce_a_collection_with_one_lead_retried_sends_only_that_lead_again() {
    let w = World::start("sf-batch-retry-one").await;
    let standin = salesforce();
    let subs = ids("sub_sfr", 10);
    standin.state.lock().unwrap().failing_once.insert(subs[3].clone());
    for id in &subs {
        w.deliver(id);
    }
    worker::drain(&w.poller(), &handler(&w, salesforce_sink(&standin).await)).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    let state = standin.state.lock().unwrap();
    // The stream retries from the locked record; the six written after it in the first call
    // are finished in the table, so the second call carries the one record alone.
    assert_eq!(state.collections, [10, 1], "no other Lead sent again");
    assert_eq!(state.queries, 0, "no duplicate to look up");
    assert_eq!(state.leads.len(), 10);
    assert!(state.assignments.values().all(|&runs| runs == 1), "assignment rules ran once per Lead");
}

#[tokio::test]
async fn salesforce_a_collection_that_outlasts_the_timeout_goes_again_in_smaller_ones_one_lead_each() {
    let w = World::start("sf-batch-slow").await;
    let standin = salesforce();
    // The org's automation makes a collection of more than 50 Leads outlast the client's
    // timeout; Salesforce saves them all the same.
    let slow = stream_worker::sink::CALL_TIMEOUT + Duration::from_secs(1);
    standin.state.lock().unwrap().slow_over = Some((50, slow));
    let subs = ids("sub_sfs", 60);
    for id in &subs {
        w.deliver(id);
    }
    worker::drain(&w.poller(), &handler(&w, salesforce_sink(&standin).await)).await;
    for id in &subs {
        assert_eq!(status(&w, id), ("COMPLETED".into(), None), "{id}");
    }
    let state = standin.state.lock().unwrap();
    assert_eq!(state.collections, [60, 50, 10], "after the timeout, collections of 50");
    assert_eq!(state.leads.len(), 60, "one Lead per submission");
    assert!(state.assignments.values().all(|&runs| runs == 1), "assignment rules ran once per Lead");
}

#[tokio::test]
async fn salesforce_a_replayed_collection_beyond_one_query_is_found_in_turns_never_failed() {
    let standin = salesforce();
    let sink = salesforce_sink(&standin).await;
    // 200 submissions of 40-character IDs; the first 120 have Leads already (a crash after the
    // collection call), and the first ID is held by several Leads.
    let subs: Vec<String> = (0..200).map(|i| format!("sub_sfq_{i:032}")).collect();
    let leads: Vec<_> = subs.iter().map(|id| sample_lead(id)).collect();
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    assert!(sink.upsert_batch(&items[..120], None).await.iter().all(Result::is_ok));
    standin.state.lock().unwrap().ambiguous.insert(subs[0].clone());
    // The whole collection again: 80 created, 120 refused as duplicates and one query asked
    // for as many as its WHERE clause holds; the rest are handed back, none FAILED.
    let results = sink.upsert_batch(&items, None).await;
    let deferred = SinkError::Retryable { reason: "sink_lookup_deferred", retry_after: None };
    let multiple = SinkError::Permanent { reason: "sink_multiple_matches" };
    assert_eq!(results[0], Err(multiple), "the ambiguous ID, asked first among the refused");
    let (found, later): (Vec<usize>, Vec<usize>) = (1..120).partition(|&i| results[i].is_ok());
    assert!(later.iter().all(|&i| results[i] == Err(deferred)), "{results:?}");
    assert!(!later.is_empty() && found.len() > 60, "{} found, {} later", found.len(), later.len());
    assert!((120..200).all(|i| results[i].is_ok()), "each new one created");
    assert_eq!(standin.state.lock().unwrap().queries, 1);
    // Their next try finds them.
    let again: Vec<BatchItem<'_>> = later.iter().map(|&i| BatchItem { lead: &leads[i], receipt_key: "k" }).collect();
    assert!(sink.upsert_batch(&again, None).await.iter().all(Result::is_ok));
    let state = standin.state.lock().unwrap();
    assert_eq!(state.leads.len(), 200, "one Lead per submission");
    assert!(state.assignments.values().all(|&runs| runs == 1), "assignment rules ran once per Lead");
}

#[tokio::test]
async fn hubspot_a_pacing_wait_past_the_deadline_hands_the_batch_back_with_its_pause() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    standin.state.lock().unwrap().rate_limit = Some((1, Duration::from_secs(60)));
    let sink = hubspot(&standin).await;
    let leads = [sample_lead("sub_hpd_1"), sample_lead("sub_hpd_2")];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    // The read goes; the next call would wait about a minute, past a 30-second deadline.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let results = sink.upsert_batch(&items, Some(deadline)).await;
    for result in results {
        match result {
            Err(SinkError::Retryable { reason: "sink_paced", retry_after: Some(wait) }) => {
                assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60), "{wait:?}")
            }
            other => panic!("expected sink_paced with its wait, got {other:?}"),
        }
    }
    let state = standin.state.lock().unwrap();
    assert_eq!((state.requests, state.throttled), (1, 0), "one call, none into the limit");
}

/// A used-up day's 429 carries no rate-limit header, only `policyName: DAILY`: its records go
/// back as `sink_daily_limit`, and the next batch makes no call until the probe a minute later
/// (one call a minute, not one per invocation until the portal's midnight).
#[tokio::test]
async fn hubspot_a_daily_429_without_headers_holds_the_next_calls() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let sink = hubspot(&standin).await;
    standin.state.lock().unwrap().daily_remaining = 0;
    let leads = [sample_lead("sub_hday_1"), sample_lead("sub_hday_2")];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    let day = Err(SinkError::Retryable { reason: "sink_daily_limit", retry_after: None });
    for _ in 0..3 {
        assert_eq!(sink.upsert_batch(&items, None).await, [day, day]);
    }
    let state = standin.state.lock().unwrap();
    assert_eq!(state.day_refused, 1, "one call learnt the day is used up; the others were held");
    assert!(state.tickets.is_empty());
}

/// HubSpot's usage guidelines: the portal's day (`X-HubSpot-RateLimit-Daily`) is shared by
/// every app; the sink leaves its last tenth to the others, as Salesforce's sink leaves the
/// org's.
#[tokio::test]
async fn hubspot_stops_at_nine_tenths_of_the_portal_s_day_and_hands_the_records_back() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let sink = hubspot(&standin).await;
    standin.state.lock().unwrap().daily_remaining = 25_001;
    let leads = [sample_lead("sub_hres_1"), sample_lead("sub_hres_2")];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    let reserved = Err(SinkError::Retryable { reason: "sink_allocation_reserved", retry_after: None });
    // The batch's first call is answered with 25,000 left: its second is not sent.
    assert_eq!(sink.upsert_batch(&items, None).await, [reserved, reserved]);
    assert_eq!(sink.upsert_batch(&items, None).await, [reserved, reserved], "held: no call at all");
    let state = standin.state.lock().unwrap();
    assert_eq!(state.daily_remaining, 25_000, "no call into the portal's last tenth");
    assert!(state.tickets.is_empty());
}

/// An answer that is not a 429 and carries no window headers (HubSpot documents them on every
/// answer but search's) holds no call: the batch's four calls go at once.
#[tokio::test]
async fn hubspot_answers_without_the_window_s_headers_hold_no_call() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let sink = hubspot(&standin).await;
    {
        let mut state = standin.state.lock().unwrap();
        state.rate_limit = None;
        // A day so large that its spacing (20 µs) never makes the pacer wait.
        state.daily_remaining = u64::from(u32::MAX);
    }
    let leads = [sample_lead("sub_hnoh_1"), sample_lead("sub_hnoh_2")];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    let started = std::time::Instant::now();
    assert!(sink.upsert_batch(&items, None).await.iter().all(Result::is_ok));
    assert!(started.elapsed() < Duration::from_secs(5), "held: {:?}", started.elapsed());
}

#[tokio::test]
async fn hubspot_two_ids_differing_only_in_case_in_one_batch_never_share_a_ticket() {
    let w = World::start("hs-batch-case").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    // A portal whose unique values compare without case (HubSpot documents neither way).
    standin.state.lock().unwrap().fold_ticket_ids = true;
    let handler = handler(&w, hubspot(&standin).await);
    w.deliver("ABCdef");
    w.deliver("abcDEF");
    let pass = w.poller().pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 1, "the second is held back: {pass:?}");
    assert_eq!(status(&w, "ABCdef"), ("COMPLETED".into(), None));
    assert_eq!(status(&w, "abcDEF"), ("RECEIVED".into(), None));
    // Alone in the next batch it is read again: the portal answers the other's ticket, so it
    // waits for a person, never overwriting it.
    let pass = w.poller().pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 1, "{pass:?}");
    let state = standin.state.lock().unwrap();
    assert_eq!(state.tickets.keys().collect::<Vec<_>>(), ["ABCdef"]);
    assert_eq!(state.tickets["ABCdef"].1[ID_PROPERTY], "ABCdef");
}

#[tokio::test]
async fn hubspot_a_423_is_waited_out_as_hubspot_asks_and_the_batch_goes_on() {
    let w = World::start("hs-batch-423").await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let handler = handler(&w, hubspot(&standin).await);
    for id in ids("sub_hsl", 3) {
        w.deliver(&id);
    }
    // "423 Locked: ... upserting thousands of records in a very short period of time. Include
    // a delay of at least 2 seconds."
    standin.state.lock().unwrap().fail_path.insert("tickets/batch/upsert".into(), FailNext::new(1, 423));
    let started = std::time::Instant::now();
    let pass = w.poller().pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 0, "waited in place: {pass:?}");
    assert!(started.elapsed() >= Duration::from_secs(2));
    for id in ids("sub_hsl", 3) {
        assert_eq!(status(&w, &id), ("COMPLETED".into(), None), "{id}");
    }
}

#[tokio::test]
async fn hubspot_a_batch_refused_whole_with_no_time_to_split_is_retried_never_judged() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    {
        let mut state = standin.state.lock().unwrap();
        // One person's email conflicts: the contacts' call is refused whole (409).
        state.conflicting_emails.insert("bob@example.com".into());
        // A day so large that its spacing (20 µs) never makes the pacer wait.
        state.daily_remaining = u64::from(u32::MAX);
    }
    let sink = hubspot(&standin).await;
    let mut bob = sample_lead("sub_hsx_2");
    bob.email = "bob@example.com".into();
    let leads = [sample_lead("sub_hsx_1"), bob];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    // 15 s left: less than a call and the receipts' update (21 s), so no split is tried.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let results = sink.upsert_batch(&items, Some(deadline)).await;
    assert_eq!(results, [Err(SinkError::Retryable { reason: "deadline", retry_after: None }); 2]);
    let state = standin.state.lock().unwrap();
    assert!(state.tickets.is_empty(), "no contact given up, no ticket written for a neighbour's refusal");
}

#[tokio::test]
async fn hubspot_two_workers_writing_one_portal_at_once_make_one_contact_per_person_and_a_ticket_each() {
    // Two shards' workers (two sinks, each pacing alone) write leads of the same people at the
    // same time; the portal serves their calls at once, as HubSpot does.
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    // Each answer takes 200 ms on its way back: the two workers' first calls, sent together,
    // meet there.
    standin.state.lock().unwrap().latency = Duration::from_millis(200);
    let (first, second) = (hubspot(&standin).await, hubspot(&standin).await);
    let lead = |id: &str, person: usize| {
        let mut lead = sample_lead(id);
        lead.email = format!("person{person}@example.com");
        lead
    };
    let a: Vec<_> = ids("sub_hs_a", 10).iter().enumerate().map(|(i, id)| lead(id, i % 4)).collect();
    let b: Vec<_> = ids("sub_hs_b", 10).iter().enumerate().map(|(i, id)| lead(id, i % 4)).collect();
    let items_a: Vec<BatchItem<'_>> = a.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    let items_b: Vec<BatchItem<'_>> = b.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    let (answers_a, answers_b) = tokio::join!(first.upsert_batch(&items_a, None), second.upsert_batch(&items_b, None));
    assert!(answers_a.iter().chain(&answers_b).all(Result::is_ok), "{answers_a:?} {answers_b:?}");
    assert!(standin.most_at_once() >= 2, "the two workers' calls overlapped: {}", standin.most_at_once());
    let state = standin.state.lock().unwrap();
    assert_eq!((state.tickets.len(), state.contacts.len(), state.associations.len()), (20, 4, 20));
}

#[test]
fn the_hubspot_standin_refuses_a_body_that_is_not_json_as_hubspot_does() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let url = format!("{}/crm/v3/objects/contacts/batch/upsert", standin.server.url());
    let headers = [("Authorization", "Bearer pat-test"), ("Content-Type", "application/json")];
    for body in [&b"{\"inputs\": ["[..], b"not json", b""] {
        let answer = tests::http::send("POST", &url, &headers, body).unwrap();
        assert_eq!(
            (answer.status, answer.json()["category"].clone()),
            (400, serde_json::json!("VALIDATION_ERROR")),
            "{}",
            answer.body
        );
        assert!(answer.json()["message"].as_str().unwrap().starts_with("Invalid input JSON"), "{}", answer.body);
    }
    assert!(standin.state.lock().unwrap().contacts.is_empty());
}
