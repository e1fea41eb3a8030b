//! `switch.toml`: the documented example parses into the switch the
//! simulator builds, and every wrong file is refused with an error that
//! names the offending key.
//!
//! SPEC: [SW-030] [SW-031]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::net::Ipv4Addr;
use std::path::Path;

use epic_proto::engine::Mode;
use epic_proto::wire::{EthernetAddress, GroupId};
use incengine::{ConfigError, Route, SwitchConfig};
use netsim::inc::IncTree;

fn example_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/switch.toml")
}

fn example() -> String {
    std::fs::read_to_string(example_path()).unwrap()
}

/// The example with `from` replaced by `to` (which must occur).
fn edited(from: &str, to: &str) -> String {
    let text = example();
    assert!(text.contains(from), "{from:?} is not in the example");
    text.replacen(from, to, 1)
}

fn refused(text: &str) -> ConfigError {
    match SwitchConfig::parse(text) {
        Ok(c) => panic!("accepted: {c:?}"),
        Err(e) => e,
    }
}

/// Asserts that the error names `key` and that its message contains
/// `says`.
fn assert_names(e: &ConfigError, key: &str, says: &str) {
    let shown = e.to_string();
    assert_eq!(e.key(), Some(key), "{shown}");
    assert!(shown.starts_with(&format!("{key}: ")), "{shown}");
    assert!(shown.contains(says), "{shown:?} does not say {says:?}");
}

/// [SW-030] The documented example is the Tree-2-2 switch of the
/// simulator, Mode II, group 7.
#[test]
fn example_parses_into_the_simulators_switch() {
    let c = SwitchConfig::load(&example_path()).unwrap();
    assert_eq!(c.interfaces, ["veth-r0", "veth-r1"]);
    let tree = IncTree::new("tree-2-2".parse().unwrap()).unwrap();
    let sw = &tree.switches[0];
    assert_eq!(c.spec.name, "tree-2-2");
    assert_eq!(c.spec.engine.mac, sw.mac);
    assert_eq!(c.spec.engine.ip, sw.ip);
    assert_eq!(c.spec.addresses, [Ipv4Addr::new(10, 0, 0, 254)]);
    assert_eq!(
        c.spec.routes[1],
        Route {
            prefix: Ipv4Addr::new(10, 0, 0, 1),
            prefix_len: 32,
            port: 1,
            next_hop_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
        }
    );
    let mut want = tree.context(0, GroupId(7), Mode::Translated, 128, 4096, true);
    want.message_packets = 4;
    assert_eq!(c.spec.contexts.len(), 1);
    assert_eq!(c.spec.contexts[0].config, want);
    assert_eq!(c.spec.contexts[0].start_psn.value(), 0);
}

/// [SW-031] Values that parse but are wrong name their key.
#[test]
fn wrong_values_name_their_key() {
    let cases = [
        (
            edited(
                "next_hop_mac = \"02:00:00:00:00:01\"",
                "next_hop_mac = \"zz:00:00:00:00:01\"",
            ),
            "route[1].next_hop_mac",
            "\"zz:00:00:00:00:01\" is not a MAC address",
        ),
        (
            edited("index = 1", "index = 0"),
            "port[1].index",
            "duplicate",
        ),
        (
            edited("index = 1", "index = 5"),
            "port[1].index",
            "out of range",
        ),
        (
            edited("interface = \"veth-r1\"", "interface = \"veth-r0\""),
            "port[1].interface",
            "already port[0]",
        ),
        (
            edited("mac = \"02:00:00:01:00:00\"", "mac = \"01:00:5e:00:00:01\""),
            "switch.mac",
            "multicast",
        ),
        (
            edited("ip = \"10.1.0.0\"", "ip = \"10.1.0\""),
            "switch.ip",
            "not an IPv4 address",
        ),
        (
            edited(
                "addresses = [\"10.0.0.254\"]",
                "addresses = [\"10.0.0.254\", \"255.255.255.255\"]",
            ),
            "switch.addresses[1]",
            "not a unicast address",
        ),
        (
            edited("prefix = \"10.0.0.1/32\"", "prefix = \"10.0.0.1/24\""),
            "route[1].prefix",
            "the network is 10.0.0.0/24",
        ),
        (
            edited("prefix = \"10.0.0.1/32\"", "prefix = \"10.0.0.1/33\""),
            "route[1].prefix",
            "not an IPv4 prefix",
        ),
        (
            edited("port = 1\nnext_hop_mac", "port = 2\nnext_hop_mac"),
            "route[1].port",
            "not a configured port",
        ),
        (
            edited("mode = \"II\"", "mode = \"IV\""),
            "context[0].mode",
            "not a mode",
        ),
        (
            edited("peer = \"rank:1\"", "peer = \"host:1\""),
            "context[0].endpoints[1].peer",
            "\"rank:N\" or \"switch\"",
        ),
        (
            edited("local_qpn = 0x1000", "local_qpn = 0x1000000"),
            "context[0].endpoints[0].local_qpn",
            "not a 24-bit QP number",
        ),
        (
            edited("remote_ip = \"10.0.0.1\"", "remote_ip = \"10.0.0.1.5\""),
            "context[0].endpoints[1].remote_ip",
            "not an IPv4 address",
        ),
        (
            edited("# pattern = \"all_reduce\"", "pattern = \"gather:1\""),
            "context[0].pattern",
            "not \"all_reduce\"",
        ),
        (
            edited("start_psn = 0", "start_psn = 16777216"),
            "context[0].start_psn",
            "not a 24-bit PSN",
        ),
        (
            // The engine's own checks, made at load time.
            edited("# arena_bytes = 16777216", "arena_bytes = 1000"),
            "context[0]",
            "arena",
        ),
        (edited("ranks = 2", "ranks = 1"), "context[0]", "group 7"),
        (
            edited("retransmit_timeout_us = 100", "retransmit_timeout_us = 0").replacen(
                "# retransmit_timeout_us",
                "retransmit_timeout_us",
                1,
            ),
            "switch.retransmit_timeout_us",
            "at least 1",
        ),
    ];
    for (text, key, says) in &cases {
        assert_names(&refused(text), key, says);
    }
}

/// [SW-031] Unknown keys, missing keys, wrong types and bad TOML are
/// refused by serde with the key path and the line.
#[test]
fn serde_errors_name_the_key_path() {
    let e = refused(&edited("slots = 128", "slots = 128\nslotz = 1"));
    assert_eq!(e.key(), Some("context[0].slotz"), "{e}");
    assert!(e.to_string().contains("unknown field `slotz`"), "{e}");
    assert!(matches!(e, ConfigError::Syntax { .. }));

    let e = refused(&edited(
        "peer = \"rank:1\"",
        "peer = \"rank:1\"\ncolour = \"red\"",
    ));
    assert_eq!(e.key(), Some("context[0].endpoints[1].colour"), "{e}");

    let e = refused(&edited("[switch]", "bogus = 1\n[switch]"));
    assert_eq!(e.key(), Some("bogus"), "{e}");

    let e = refused(&edited(
        "port = 1\nnext_hop_mac",
        "port = \"one\"\nnext_hop_mac",
    ));
    assert_eq!(e.key(), Some("route[1].port"), "{e}");
    let ConfigError::Syntax { line, .. } = e else {
        panic!("{e}")
    };
    let want = edited("port = 1\nnext_hop_mac", "port = \"one\"\nnext_hop_mac")
        .lines()
        .position(|l| l.contains("\"one\""))
        .unwrap()
        + 1;
    assert_eq!(line, want);

    let e = refused(&edited(
        "port = 1\nnext_hop_mac = \"02:00:00:00:00:01\"",
        "",
    ));
    assert!(e.to_string().contains("missing field `port`"), "{e}");
    assert_eq!(e.key(), Some("route[1]"), "{e}");

    let e = refused("[switch\nname = 1");
    assert_eq!(e.key(), Some("."), "{e}");
    assert!(e.to_string().contains("line 1"), "{e}");

    let e = refused(&edited("[[port]]\nindex = 0\ninterface = \"veth-r0\"\n\n[[port]]\nindex = 1\ninterface = \"veth-r1\"", ""));
    assert_names(&e, "port", "at least one");
}

/// [SW-032] `to_toml` writes what `parse` reads back: the example, and a
/// switch of every mode with per-pattern alignment, a parent, routes and
/// extra addresses, come back equal.
#[test]
fn rendered_files_parse_back_into_the_same_switch() {
    let c = SwitchConfig::load(&example_path()).unwrap();
    assert_eq!(SwitchConfig::parse(&c.to_toml()).unwrap(), c);
    let tree = IncTree::new("tree-3-2".parse().unwrap()).unwrap();
    let patterns = [
        epic_proto::engine::PsnAlignment::Resync,
        epic_proto::engine::PsnAlignment::PerPattern(
            epic_proto::engine::PatternBinding::Broadcast { root: 3 },
        ),
        epic_proto::engine::PsnAlignment::PerPattern(epic_proto::engine::PatternBinding::Reduce {
            root: 1,
        }),
        epic_proto::engine::PsnAlignment::PerPattern(epic_proto::engine::PatternBinding::AllReduce),
    ];
    for (mode, alignment) in [Mode::Terminated, Mode::Translated, Mode::Augmented]
        .into_iter()
        .zip(patterns.into_iter().cycle())
    {
        for s in 0..tree.switches.len() {
            let mut c = SwitchConfig::parse(&example()).unwrap();
            let mut ctx = tree.context(s, GroupId(9), mode, 16, 4096, true);
            ctx.alignment = alignment;
            let mut spec = incengine::ContextSpec::from(ctx);
            spec.start_psn = epic_proto::Psn::from_truncated(0x00ab_cdef);
            c.spec.contexts = vec![spec];
            c.spec.engine.max_group_size = 8;
            c.spec.addresses = vec![Ipv4Addr::new(10, 9, 0, 1)];
            c.interfaces = (0..tree.switches[s].ports.len())
                .map(|p| format!("sw{s}p{p}"))
                .collect();
            c.spec.routes = vec![Route {
                prefix: Ipv4Addr::new(10, 0, 0, 0),
                prefix_len: 24,
                port: 1,
                next_hop_mac: EthernetAddress([2, 0, 0, 0, 0, 9]),
            }];
            let text = c.to_toml();
            let back = SwitchConfig::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, c, "{text}");
        }
    }
}

/// [SW-030] [TMX-001] A context's block (offset, length, tenant, sharing)
/// is written and read back, and two tenants of one shared block install
/// side by side; a block that breaks the arena's rules is refused with
/// the context named.
#[test]
fn shared_blocks_round_trip_and_install() {
    let tree = IncTree::new("tree-2-2".parse().unwrap()).unwrap();
    let mut c = SwitchConfig::parse(&example()).unwrap();
    c.interfaces = (0..tree.switches[0].ports.len())
        .map(|p| format!("p{p}"))
        .collect();
    let ctx = tree.context(0, GroupId(7), Mode::Translated, 16, 1024, false);
    let other = netsim::inc::LockTenant::context(GroupId(99), &ctx).unwrap();
    let at = |tenant| epic_proto::engine::Placement {
        offset: 0,
        len: 1 << 16,
        tenant: GroupId(tenant),
        shared: true,
    };
    let mut a = incengine::ContextSpec::from(ctx);
    a.placement = Some(at(7));
    let mut b = incengine::ContextSpec::from(other);
    b.placement = Some(at(99));
    c.spec.contexts = vec![a, b];
    let text = c.to_toml();
    assert!(text.contains("shared = true"), "{text}");
    let back = SwitchConfig::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, c, "{text}");
    let bad = text.replacen("offset = 0", "offset = 3", 1);
    let e = SwitchConfig::parse(&bad).unwrap_err();
    assert_eq!(e.key(), Some("context[0]"), "{e}");
}
