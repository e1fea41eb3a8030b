//! `fixtures/conformance/cases/` holds every built-in case as files: its
//! `case.toml` and the stimulus pcaps the reference run delivers to the
//! DUT (`in-port<N>.pcap`). Regenerate on purpose with
//! `EPIC_BLESS=1 cargo test -p conformance --test fixtures`. [CONF-001]
//! [CONF-007]

use std::fs;
use std::path::{Path, PathBuf};

use conformance::case::{Case, Direction};
use conformance::dut::AdapterSpec;
use conformance::{catalog, harness, pcapio, suite};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance/cases")
}

fn case_dir(c: &Case) -> PathBuf {
    root().join(c.family.name()).join(&c.name)
}

/// [CONF-001] [CONF-007] Every built-in case is on disk, byte for byte,
/// with its stimulus; the files parse back into the same cases, and
/// nothing else is there. The stimulus is deterministic: the same case
/// gives the same pcaps, byte for byte.
#[test]
fn fixtures_match_the_catalog() {
    let bless = std::env::var_os("EPIC_BLESS").is_some();
    let cases = catalog::builtin();
    let reference = AdapterSpec::Reference { mutant: None };
    if bless {
        let _ = fs::remove_dir_all(root());
    }
    let mut stale = Vec::new();
    for c in &cases {
        let dir = case_dir(c);
        let obs = harness::run(c, &reference).unwrap();
        let tmp =
            std::env::temp_dir().join(format!("epic-fixture-{}-{}", std::process::id(), c.name));
        pcapio::write_stimulus(&tmp, &obs.trace, obs.spec.ports).unwrap();
        fs::write(tmp.join("case.toml"), c.to_toml()).unwrap();
        if bless {
            fs::create_dir_all(&dir).unwrap();
        }
        let mut names: Vec<String> = vec!["case.toml".into()];
        names.extend((0..obs.spec.ports).map(|p| {
            pcapio::port_file(Path::new(""), Direction::In, p)
                .display()
                .to_string()
        }));
        for n in names {
            let want = fs::read(tmp.join(&n)).unwrap();
            if bless {
                fs::write(dir.join(&n), &want).unwrap();
            } else if fs::read(dir.join(&n)).ok().as_deref() != Some(want.as_slice()) {
                stale.push(dir.join(&n).display().to_string());
            }
        }
        fs::remove_dir_all(&tmp).unwrap();
    }
    assert!(
        stale.is_empty(),
        "{} fixture files differ from the catalog (first: {}); regenerate on purpose with \
         EPIC_BLESS=1 cargo test -p conformance --test fixtures",
        stale.len(),
        stale.first().map_or("", String::as_str)
    );
    let loaded = suite::load_dir(&root()).unwrap();
    let mut want = cases.clone();
    want.sort_by(|a, b| (a.family, &a.name).cmp(&(b.family, &b.name)));
    let mut got = loaded;
    got.sort_by(|a, b| (a.family, &a.name).cmp(&(b.family, &b.name)));
    assert_eq!(
        got, want,
        "fixtures/conformance/cases holds other cases than the catalog"
    );
}
