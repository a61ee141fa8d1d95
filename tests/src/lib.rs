//! Helpers for the end-to-end suite (servers on 127.0.0.1, fixtures). Skeleton for now.
