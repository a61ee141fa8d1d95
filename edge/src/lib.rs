//! The edge receiver (a Cloudflare Worker). Skeleton: the Worker shell arrives with its own issue.
