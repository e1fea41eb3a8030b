//! The incast scenario: congestion control against a shallow queue.
//! [CC-114]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use epic_proto::time::Duration;
use netsim::incast::{run, IncastConfig};

/// [CC-114] [CC-110]…[CC-113]: 16 senders into one 32-frame queue. With
/// ECN marking and DCQCN every byte still arrives, and the queue drops
/// far fewer frames than without.
#[test]
fn cc_reduces_incast_drops() {
    let small = IncastConfig {
        bytes_per_rank: 512 << 10,
        limit: Duration::from_millis(500),
        ..IncastConfig::DEFAULT
    };
    let off = run(&small).unwrap();
    let on = run(&IncastConfig { cc: true, ..small }).unwrap();
    eprintln!(
        "off {off:?} drop {:.2}% goodput {:.1}%",
        off.drop_pct(),
        off.goodput_pct()
    );
    eprintln!(
        "on  {on:?} drop {:.2}% goodput {:.1}%",
        on.drop_pct(),
        on.goodput_pct()
    );
    assert!(off.completed && on.completed);
    assert_eq!(on.bytes_delivered, 16 * (512 << 10));
    assert!(off.bottleneck_drops > 0);
    assert!(on.cnps_sent > 0 && on.rate_cuts > 0);
    assert!(on.drop_pct() < off.drop_pct() / 2.0, "{on:?} vs {off:?}");
    assert!(on.goodput_pct() > off.goodput_pct(), "{on:?} vs {off:?}");
}
