//! ReplicateData (DuplicateData in Algorithm 1): the output endpoints a
//! result fans out to. [ENG-052]

use crate::engine::id::EdgeId;
use crate::engine::invocation::EpSet;

/// The endpoints a packet is copied to, in endpoint order; `except`
/// (the arrival endpoint) never gets its own packet back. [ENG-052]
pub(crate) fn replicate_data(outs: EpSet, except: Option<EdgeId>) -> impl Iterator<Item = EdgeId> {
    outs.iter().filter(move |e| Some(*e) != except)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [ENG-052] Every output but the arrival edge, in order.
    #[test]
    fn fans_out_in_order() {
        let outs = EpSet {
            mask: 0b1011,
            local: false,
        };
        let v: std::vec::Vec<EdgeId> = replicate_data(outs, Some(EdgeId(1))).collect();
        assert_eq!(v, [EdgeId(0), EdgeId(3)]);
    }
}
