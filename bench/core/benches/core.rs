//! The edge's core path, natively: parse, then everything the core decides (parse,
//! authenticate, key, fingerprint, receipt, PutItem), then signing, then both, for a 1 KiB and
//! a 200 KiB delivery. `make bench` reads criterion's estimates from target/criterion.

use std::hint::black_box;

use bench_core::Case;
use criterion::{criterion_group, criterion_main, Criterion};

fn core_path(c: &mut Criterion) {
    for (label, size) in [("1KiB", 1024), ("200KiB", 200 * 1024)] {
        let case = Case::new(size);
        let request = case.receive();
        let mut group = c.benchmark_group(format!("core/{label}"));
        group.bench_function("parse", |b| b.iter(|| black_box(case.parse())));
        group.bench_function("receive", |b| b.iter(|| black_box(case.receive())));
        group.bench_function("sign", |b| b.iter(|| black_box(case.sign(&request))));
        group.bench_function("path", |b| b.iter(|| black_box(case.sign(&case.receive()))));
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = core_path
}
criterion_main!(benches);
