//! RecycleBuffer: return slots to the free state, arrival bits included.
//! [ENG-041] [M2-012] [M3-032]

use crate::engine::endpoint::EndpointState;
use crate::engine::pipe::Pipe;

/// Clears slot `slot` of `pipe`: degree, record, and every endpoint's
/// arrival bit for it (Algorithm 1, lines 34–36, with the arrival state
/// cleared too so the slot's next PSN is not taken for a duplicate).
/// [ENG-041]
pub(crate) fn recycle_buffer(pipe: &mut Pipe, eps: &mut [EndpointState], slot: usize) {
    pipe.clear(slot);
    let which = pipe.id as usize;
    for ep in eps {
        if let Some(a) = ep.arrived.get_mut(which) {
            a.clear(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::config::{EndpointConfig, Peer};
    use crate::engine::invocation::PipeId;
    use crate::engine::modules::check_duplicate::check_duplicate;
    use crate::psn::Psn;
    use crate::wire::{EthernetAddress, Qpn};
    use core::net::Ipv4Addr;

    /// [ENG-041] Recycling clears degree, tag and every arrival bit.
    #[test]
    fn recycle_clears_arrivals() {
        let cfg = EndpointConfig {
            port: 0,
            local_qpn: Qpn::try_new(1).unwrap(),
            remote_qpn: Qpn::try_new(2).unwrap(),
            remote_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            remote_ip: Ipv4Addr::new(10, 0, 0, 1),
            peer: Peer::Switch,
        };
        let mut eps = [
            EndpointState::new(cfg, 8, 8, Psn::ZERO),
            EndpointState::new(cfg, 8, 8, Psn::ZERO),
        ];
        let mut p = Pipe::new(PipeId::Up, 8, 4, 0, 0, Psn::ZERO);
        check_duplicate(&mut eps[0].arrived[0], 3);
        check_duplicate(&mut eps[1].arrived[0], 3);
        check_duplicate(&mut eps[1].arrived[1], 3);
        p.bump_degree(3);
        p.meta_mut(3).unwrap().tag = Some(Psn::from_truncated(3));
        recycle_buffer(&mut p, &mut eps, 3);
        assert_eq!(p.degree(3), 0);
        assert_eq!(p.meta(3).tag, None);
        assert!(!eps[0].arrived[0].get(3) && !eps[1].arrived[0].get(3));
        assert!(eps[1].arrived[1].get(3), "the other pipe's bits stay");
    }
}
