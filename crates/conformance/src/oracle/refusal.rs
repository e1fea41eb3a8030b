//! Mode I refuses what it would discard: a request the harness injects
//! that no invocation takes (a SEND with a foreign immediate, a data
//! message past its invocation) is answered with NAK invalid request for
//! its PSN, and nothing acknowledges it. [M1-041] [RC-067]

use epic_proto::wire::{NakCode, Syndrome};
use epic_proto::Psn;

use crate::case::Direction;
use crate::frames::{self, Kind};
use crate::harness::Observation;
use crate::trace::Origin;

use super::{Check, Verdict};

/// What the DUT answered to one injected request.
fn answer(obs: &Observation, at: usize, port: u16, psn: Psn) -> Result<(), String> {
    let mut naked = false;
    for (i, e) in obs.trace.events.iter().enumerate().skip(at + 1) {
        if e.port != port {
            continue;
        }
        let kind = frames::kind(&e.frame);
        let Some(p) = frames::psn(&e.frame) else {
            continue;
        };
        match e.direction {
            // A genuine request at that PSN: what follows answers it.
            Direction::In => {
                let genuine = !matches!(e.origin, Origin::Injected(_));
                if genuine && matches!(kind, Kind::Data | Kind::Control) && p == psn {
                    break;
                }
            }
            Direction::Out => match kind {
                Kind::Nak if p == psn => {
                    naked |=
                        frames::syndrome(&e.frame) == Some(Syndrome::Nak(NakCode::InvalidRequest));
                }
                Kind::Ack | Kind::Sack if !p.is_before(psn) => {
                    return Err(format!(
                        "event #{i}: {kind:?} {p} on port {port} acknowledges the injected request {psn} (event #{at})"
                    ));
                }
                _ => {}
            },
        }
    }
    if naked {
        Ok(())
    } else {
        Err(format!(
            "no NAK invalid request for the injected request {psn} on port {port} (event #{at})"
        ))
    }
}

/// [M1-041] [RC-067] Every injected request a Mode I DUT must refuse got
/// a NAK invalid request carrying its PSN and no acknowledgement; `None`
/// when the case injects none.
pub(super) fn refusals(obs: &Observation) -> Option<Check> {
    if obs.case.mode != 1 {
        return None;
    }
    let injected: Vec<(usize, u16, Psn)> = obs
        .trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.direction == Direction::In
                && matches!(e.origin, Origin::Injected(c) if c.follows_genuine())
        })
        .filter_map(|(i, e)| frames::psn(&e.frame).map(|p| (i, e.port, p)))
        .collect();
    if injected.is_empty() {
        return None;
    }
    let bad: Vec<String> = injected
        .iter()
        .filter_map(|&(i, port, p)| answer(obs, i, port, p).err())
        .collect();
    let verdict = match bad.first() {
        None => Verdict::Pass,
        Some(b) => Verdict::Fail(format!("{} of {}; first: {b}", bad.len(), injected.len())),
    };
    Some(Check::new(
        "refused_not_acknowledged",
        &["M1-041", "RC-067"],
        verdict,
    ))
}
