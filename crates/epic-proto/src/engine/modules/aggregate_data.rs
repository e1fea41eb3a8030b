//! AggregateData: fold a packet's payload into a slot and bump its degree.
//! [ENG-030] [ENG-035]

use crate::engine::aggregate::{AggregateError, Reduction};
use crate::engine::pipe::Pipe;

/// Adds `payload` (wire encoding) into slot `slot` of `pipe` and returns the
/// new degree (Algorithm 1, lines 31–33). The first contribution loads the
/// accumulator, later ones accumulate. In reproducible mode the payload is
/// kept raw in the child's buffer (`child` = input ordinal) and nothing is
/// summed until the degree reaches `fanin`, then the children are reduced
/// in ordinal order. `reduction` is `None` for data that is only
/// replicated (Broadcast) and for control messages: the bytes are copied.
/// [ENG-030] [ENG-035]
pub(crate) fn aggregate_data(
    pipe: &mut Pipe,
    slot: usize,
    reduction: Option<Reduction>,
    reproducible: Option<u32>,
    fanin: u32,
    payload: &[u8],
) -> Result<u32, AggregateError> {
    let degree = pipe.degree(slot);
    match (reduction, reproducible) {
        (None, _) => {
            let acc = pipe.acc_mut(slot);
            let acc_len = acc.len();
            let dst = acc
                .get_mut(..payload.len())
                .ok_or(AggregateError::LengthMismatch {
                    acc: acc_len,
                    wire: payload.len(),
                })?;
            dst.copy_from_slice(payload);
        }
        (Some(r), None) => {
            let len = r.elem.acc_len(payload.len());
            let acc = pipe.acc_mut(slot);
            let acc_len = acc.len();
            let acc = acc.get_mut(..len).ok_or(AggregateError::LengthMismatch {
                acc: acc_len,
                wire: payload.len(),
            })?;
            if degree == 0 {
                r.load(acc, payload)?;
            } else {
                r.accumulate(acc, payload)?;
            }
        }
        (Some(r), Some(child)) => {
            let raw = pipe.raw_mut(slot, child as usize);
            let raw_len = raw.len();
            raw.get_mut(..payload.len())
                .ok_or(AggregateError::LengthMismatch {
                    acc: raw_len,
                    wire: payload.len(),
                })?
                .copy_from_slice(payload);
            if degree + 1 >= fanin {
                let len = r.elem.acc_len(payload.len());
                let per = pipe.raw_bytes;
                let (acc, raws) = pipe.acc_and_raw(slot);
                let acc = acc.get_mut(..len).ok_or(AggregateError::LengthMismatch {
                    acc: 0,
                    wire: payload.len(),
                })?;
                let inputs = raws
                    .chunks(per.max(1))
                    .take(fanin as usize)
                    .map(|c| c.get(..payload.len()).unwrap_or(&[]));
                r.reduce_in_order(acc, inputs)?;
            }
        }
    }
    Ok(pipe.bump_degree(slot))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::aggregate::{ElemType, Op};
    use crate::engine::invocation::PipeId;
    use crate::psn::Psn;

    fn be(v: &[i32]) -> std::vec::Vec<u8> {
        v.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    /// The accumulator format: little-endian. [ENG-031]
    fn le(v: &[i32]) -> std::vec::Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// [ENG-030] Sum of three children, degree counts.
    #[test]
    fn sums_and_counts() {
        let mut p = Pipe::new(PipeId::Up, 4, 32, 0, 0, Psn::ZERO);
        let r = Some(Reduction {
            elem: ElemType::Int32,
            op: Op::Sum,
        });
        assert_eq!(
            aggregate_data(&mut p, 1, r, None, 3, &be(&[1, 2])).unwrap(),
            1
        );
        assert_eq!(
            aggregate_data(&mut p, 1, r, None, 3, &be(&[10, 20])).unwrap(),
            2
        );
        assert_eq!(
            aggregate_data(&mut p, 1, r, None, 3, &be(&[100, -200])).unwrap(),
            3
        );
        assert_eq!(&p.acc(1)[..8], &le(&[111, -178])[..]);
    }

    /// [ENG-035] Reproducible: nothing is summed before the last child,
    /// then the children are reduced in ordinal order.
    #[test]
    fn reproducible_reduces_in_child_order() {
        let mut p = Pipe::new(PipeId::Up, 2, 16, 3, 8, Psn::ZERO);
        let r = Some(Reduction {
            elem: ElemType::Fp32,
            op: Op::Sum,
        });
        let f = |v: f32| v.to_be_bytes().to_vec();
        let vals = [1.0e8f32, 1.0, -1.0e8];
        // Arrival order 2, 0, 1.
        aggregate_data(&mut p, 0, r, Some(2), 3, &f(vals[2])).unwrap();
        aggregate_data(&mut p, 0, r, Some(0), 3, &f(vals[0])).unwrap();
        assert_eq!(
            aggregate_data(&mut p, 0, r, Some(1), 3, &f(vals[1])).unwrap(),
            3
        );
        let want = (vals[0] + vals[1]) + vals[2];
        assert_eq!(&p.acc(0)[..4], &want.to_le_bytes()[..]);
    }

    /// [ENG-030] A payload longer than the slot is an error, not a panic.
    #[test]
    fn oversized_payload_is_refused() {
        let mut p = Pipe::new(PipeId::Up, 2, 8, 0, 0, Psn::ZERO);
        assert!(aggregate_data(&mut p, 0, None, None, 1, &[0u8; 9]).is_err());
    }
}
