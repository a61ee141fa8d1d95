//! What a soak run saw, the checks that say whether it held, and the Markdown report.

use std::collections::BTreeMap;

/// What one run saw.
#[derive(Debug, Default)]
pub struct Report {
    pub params_text: String,
    /// Answers by status (`none` when the connection gave no answer), every attempt counted.
    pub by_status: BTreeMap<String, usize>,
    /// Answers by the store fault active when the attempt was sent, then by status.
    pub by_fault: BTreeMap<String, BTreeMap<String, usize>>,
    /// Sink fault phases the run went through.
    pub sink_phases: BTreeMap<String, usize>,
    pub submissions: usize,
    pub deliveries: usize,
    /// Submissions the senders got a 2xx for.
    pub acknowledged: usize,
    /// Submissions that never got a 2xx, and why the sender stopped.
    pub gave_up: Vec<(String, String)>,
    pub receipts: usize,
    pub completed: usize,
    /// 2xx'd submissions without a receipt: each is a lost delivery.
    pub lost: Vec<String>,
    /// Distinct leads the sink holds, and the requests it accepted for them.
    pub leads: usize,
    pub sink_requests: usize,
    /// Leads (by `webhook-id`) that arrived with different content on different requests.
    pub conflicting_leads: Vec<String>,
    /// Breaks of "one submission, one `Idempotency-Key`, one `webhook-id`" in the sink's raw
    /// requests.
    pub sink_identities: Vec<String>,
    /// Submissions the Worker logged `stored` for more than once.
    pub stored_twice: Vec<String>,
    /// Submissions a sender got more than one 202 for.
    pub created_twice: Vec<String>,
    pub send_seconds: f64,
    pub drain_seconds: Option<f64>,
    /// Resident memory per process in MiB: (first quarter's median, last quarter's median, max).
    pub memory: BTreeMap<String, (f64, f64, f64)>,
}

impl Report {
    /// Everything that breaks "nothing lost": empty when the run held.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.gave_up.is_empty() {
            problems.push(format!("{} submissions never acknowledged: {:?}", self.gave_up.len(), first(&self.gave_up)));
        }
        if !self.lost.is_empty() {
            problems.push(format!("{} acknowledged without a receipt: {:?}", self.lost.len(), first(&self.lost)));
        }
        if self.receipts != self.submissions {
            problems.push(format!("{} receipts for {} submissions", self.receipts, self.submissions));
        }
        if self.completed != self.receipts || self.drain_seconds.is_none() {
            problems.push(format!("{} of {} receipts completed", self.completed, self.receipts));
        }
        if self.leads != self.submissions {
            problems.push(format!("{} leads for {} submissions", self.leads, self.submissions));
        }
        if !self.conflicting_leads.is_empty() {
            problems.push(format!("leads written twice with other content: {:?}", first(&self.conflicting_leads)));
        }
        if !self.sink_identities.is_empty() {
            problems
                .push(format!("sink requests without one identity per submission: {:?}", first(&self.sink_identities)));
        }
        if !self.stored_twice.is_empty() {
            problems.push(format!(
                "{} submissions stored twice by the Worker: {:?}",
                self.stored_twice.len(),
                first(&self.stored_twice)
            ));
        }
        if !self.created_twice.is_empty() {
            problems.push(format!(
                "{} submissions answered 202 twice: {:?}",
                self.created_twice.len(),
                first(&self.created_twice)
            ));
        }
        problems
    }

    /// Memory that grew: the last quarter's median above 1.5 times the first's plus 64 MiB, in
    /// this project's processes (the store's stand-in grows with what it holds, as it should).
    pub fn memory_problems(&self) -> Vec<String> {
        self.memory
            .iter()
            .filter(|(name, _)| !name.starts_with("ministack"))
            .filter(|(_, (early, late, _))| *late > early * 1.5 + 64.0)
            .map(|(name, (early, late, _))| format!("{name}: resident memory grew from {early:.0} to {late:.0} MiB"))
            .collect()
    }

    /// The report as Markdown tables.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# Soak\n\n");
        out.push_str(&format!("{}\n\n", self.params_text));
        out.push_str("| figure | value |\n|---|---|\n");
        for (name, value) in [
            ("submissions", self.submissions.to_string()),
            ("deliveries (copies included)", self.deliveries.to_string()),
            ("submissions acknowledged (2xx)", self.acknowledged.to_string()),
            ("receipts", self.receipts.to_string()),
            ("receipts completed", self.completed.to_string()),
            ("leads (distinct webhook-id at the sink)", self.leads.to_string()),
            (
                "breaks of one Idempotency-Key and one webhook-id per submission at the sink",
                self.sink_identities.len().to_string(),
            ),
            ("submissions the Worker logged `stored` for twice", self.stored_twice.len().to_string()),
            ("submissions a sender was answered 202 twice", self.created_twice.len().to_string()),
            ("requests the sink accepted", self.sink_requests.to_string()),
            ("acknowledged without a receipt", self.lost.len().to_string()),
            ("sending took", format!("{:.1} s", self.send_seconds)),
            (
                "time to drain (last delivery to last receipt completed)",
                match self.drain_seconds {
                    Some(s) => format!("{s:.1} s"),
                    None => "did not drain".into(),
                },
            ),
        ] {
            out.push_str(&format!("| {name} | {value} |\n"));
        }
        out.push_str("\n## Answers by status (every attempt)\n\n| status | attempts |\n|---|---|\n");
        for (status, count) in &self.by_status {
            out.push_str(&format!("| {status} | {count} |\n"));
        }
        out.push_str("\n## Answers by store fault\n\n| fault | attempts | by status |\n|---|---|---|\n");
        for (fault, statuses) in &self.by_fault {
            let total: usize = statuses.values().sum();
            let text: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}: {n}")).collect();
            out.push_str(&format!("| {fault} | {total} | {} |\n", text.join(", ")));
        }
        out.push_str("\n## Sink fault phases\n\n| fault | phases |\n|---|---|\n");
        for (fault, count) in &self.sink_phases {
            out.push_str(&format!("| {fault} | {count} |\n"));
        }
        out.push_str("\n## Resident memory (MiB)\n\n| process | first quarter (median) | last quarter (median) | max |\n|---|---|---|---|\n");
        for (name, (early, late, max)) in &self.memory {
            out.push_str(&format!("| {name} | {early:.0} | {late:.0} | {max:.0} |\n"));
        }
        let problems: Vec<String> = self.problems().into_iter().chain(self.memory_problems()).collect();
        out.push_str(&format!(
            "\n## Verdict\n\n{}\n",
            if problems.is_empty() { "Nothing lost; memory flat.".to_owned() } else { problems.join("\n\n") }
        ));
        out
    }
}

fn first<T: std::fmt::Debug>(items: &[T]) -> Vec<&T> {
    items.iter().take(5).collect()
}
