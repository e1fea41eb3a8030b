//! Counterexamples: the numbered steps of a path, and its frames as a
//! pcap. [VER-007]

use std::fmt::Write as _;
use std::path::Path;

use epic_pcap::{ByteOrder, PcapSink};
use epic_proto::trace::FrameRecord;

use super::build::Setup;
use super::check::Action;
use super::error::ModelError;
use super::world::{Flight, World};

/// The name of node `n`.
pub fn node_name(setup: &Setup, n: usize) -> String {
    if n < setup.switches {
        format!("switch {n}")
    } else {
        format!("rank {}", n - setup.switches)
    }
}

fn flight_text(setup: &Setup, f: &Flight) -> String {
    let rec = FrameRecord::decode(0, 0, &f.frame);
    format!(
        "to {} port {}: {}",
        node_name(setup, usize::from(f.to.node)),
        f.to.port,
        rec
    )
}

/// One line for taking `action` in `last`.
pub fn describe(setup: &Setup, last: &World, action: Action) -> String {
    let flight = |i: usize| {
        last.flights
            .get(i)
            .map_or_else(|| format!("flight {i} (none)"), |f| flight_text(setup, f))
    };
    match action {
        Action::Deliver(i) => format!("deliver {}", flight(i)),
        Action::Drop(i) => format!("drop {}", flight(i)),
        Action::Duplicate(i) => format!("duplicate {}", flight(i)),
        Action::Forge(i) => format!(
            "forge from {} a copy with other data of {}",
            super::forge::OUTSIDER,
            flight(i)
        ),
        Action::Fire(n) => format!(
            "fire the timer of {} (due {:?}, now {:?})",
            node_name(setup, n),
            last.machine(n)
                .and_then(super::world::Machine::poll_timeout),
            last.now
        ),
    }
}

/// Writes a counterexample into `dir`: `steps.txt`, one numbered line
/// per step, and `frames.pcap`, every frame the path delivers, drops or
/// duplicates, one microsecond apart in step order. [VER-007]
pub fn write_counterexample(
    dir: &Path,
    setup: &Setup,
    args: &str,
    property: &str,
    detail: Option<&str>,
    path: &[super::search::PathStep],
) -> Result<(), ModelError> {
    std::fs::create_dir_all(dir)?;
    let mut text = String::new();
    let _ = writeln!(text, "# {}", setup.cfg);
    let _ = writeln!(text, "# violates: {property}");
    if let Some(d) = detail {
        let _ = writeln!(text, "# {d}");
    }
    let _ = writeln!(text, "# args: {args}");
    let _ = writeln!(
        text,
        "# replay: epic model-check --replay {}",
        dir.join("steps.txt").display()
    );
    let mut pcap = PcapSink::new(Vec::new(), ByteOrder::Little)
        .map_err(|e| ModelError::Io(std::io::Error::other(e.to_string())))?;
    for (k, (state, action)) in path.iter().enumerate() {
        let Some(a) = action else { continue };
        let _ = writeln!(text, "{:>4} {:?}  {}", k + 1, a, describe(setup, state, *a));
        let frame = match a {
            Action::Deliver(i) | Action::Drop(i) | Action::Duplicate(i) | Action::Forge(i) => {
                state.flights.get(*i)
            }
            Action::Fire(_) => None,
        };
        // A forge step records the forged copy, not the original.
        let bytes = match (a, frame) {
            (Action::Forge(_), Some(f)) => super::forge::forge(&f.frame),
            (_, f) => f.map(|f| f.frame.to_vec()),
        };
        if let Some(bytes) = bytes {
            pcap.write(std::time::Duration::from_micros(k as u64 + 1), &bytes)
                .map_err(|e| ModelError::Io(std::io::Error::other(e.to_string())))?;
        }
    }
    std::fs::write(dir.join("steps.txt"), text)?;
    std::fs::write(dir.join("frames.pcap"), pcap.into_inner())?;
    Ok(())
}
