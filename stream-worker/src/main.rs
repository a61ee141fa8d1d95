//! The stream worker. Skeleton: the Lambda handler and the local poller arrive with their own issue.

fn main() {
    eprintln!("stream-worker: not built yet; see the project's issues");
    std::process::exit(2);
}
