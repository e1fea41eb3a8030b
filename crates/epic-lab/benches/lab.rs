//! AllReduce, Broadcast and Barrier on the in-process Tree-3-2 in each
//! mode (I, II, III, and the host fallback), 4 KiB to 16 MiB: one cluster
//! per mode kept running, each sample a batch of calls timed from the
//! start to the last rank's completion, every output checked. Throughput
//! is the algorithm throughput (one rank's vector per call).
//!
//! `cargo bench -p epic-lab --bench lab` (all), or a filter such as
//! `-- 'all_reduce/mode2'`. The paper's emulation figures (Tables 19, 22,
//! 24) stand beside the lab's in docs/PERFORMANCE.md.
// A wrong result or a failed call stops the benchmark loudly.
#![allow(clippy::expect_used)]
// criterion_group! makes an undocumented public function.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use epic_lab::{LabConfig, LabMode, Session};
use epic_proto::wire::Collective;

const SIZES: [u64; 4] = [4 << 10, 64 << 10, 1 << 20, 16 << 20];

fn bench(c: &mut Criterion) {
    // As `epic lab` does: keep the calls' large buffers mapped.
    epic_io::keep_large_allocations();
    let cfg = LabConfig::default();
    for mode in LabMode::ALL {
        let mut session = Session::start(&cfg, mode).expect("the cluster starts");
        for collective in [Collective::AllReduce, Collective::Broadcast] {
            let mut g = c.benchmark_group(format!("{}/mode{}", collective.name(), mode.name()));
            g.sample_size(10);
            g.warm_up_time(Duration::from_millis(500));
            g.measurement_time(Duration::from_secs(2));
            for bytes in SIZES {
                g.throughput(Throughput::Bytes(bytes));
                g.bench_with_input(BenchmarkId::from_parameter(bytes), &bytes, |b, &bytes| {
                    b.iter_custom(|calls| {
                        session
                            .time(collective, bytes, calls)
                            .expect("every call completes with the reference result")
                    });
                });
            }
            g.finish();
        }
        let mut g = c.benchmark_group(format!("barrier/mode{}", mode.name()));
        g.sample_size(20);
        g.bench_function("barrier", |b| {
            b.iter_custom(|calls| {
                session
                    .time(Collective::Barrier, 0, calls)
                    .expect("every barrier completes")
            });
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
