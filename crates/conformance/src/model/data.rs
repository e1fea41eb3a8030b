//! The vectors the ranks send, chosen so that any value a switch holds
//! says which element it is and which ranks' contributions it counts:
//! element `e` of rank `r` is `(e + 1) << 16 | 1 << 4r` (Int32). A sum of
//! contributions of one element keeps one count per rank in the low 16
//! bits and `(e + 1) · count` above them, so a slot that counted a rank
//! twice, mixed two PSNs' data, or holds data of a PSN other than its
//! tag shows it. [VER-004]

use epic_proto::host::CollectiveRequest;
use epic_proto::wire::{Collective, DataType, ReduceOp};

use super::config::ModelCollective;

/// Most ranks the encoding counts (4 bits each in 16).
pub const MAX_RANKS: usize = 4;

/// The value of element `e` of rank `r`.
pub fn value(rank: usize, e: usize) -> i32 {
    (((e + 1) as i32) << 16) | (1 << (4 * rank))
}

/// The call every rank makes.
pub fn request(c: ModelCollective) -> CollectiveRequest {
    match c {
        ModelCollective::AllReduce => CollectiveRequest::new(Collective::AllReduce)
            .with_op(ReduceOp::Sum)
            .with_dtype(DataType::Int32),
        ModelCollective::Reduce => CollectiveRequest::new(Collective::Reduce)
            .with_op(ReduceOp::Sum)
            .with_dtype(DataType::Int32),
        ModelCollective::Broadcast => {
            CollectiveRequest::new(Collective::Broadcast).with_dtype(DataType::Int32)
        }
    }
}

/// Rank `r`'s input, in wire encoding (big-endian).
pub fn input(rank: usize, elements: usize) -> Vec<u8> {
    (0..elements)
        .flat_map(|e| value(rank, e).to_be_bytes())
        .collect()
}

/// What rank `r` must end with. The root is rank 0.
pub fn expected(c: ModelCollective, rank: usize, ranks: usize, elements: usize) -> Vec<u8> {
    let sum = || -> Vec<u8> {
        (0..elements)
            .flat_map(|e| (0..ranks).map(|r| value(r, e)).sum::<i32>().to_be_bytes())
            .collect()
    };
    match c {
        ModelCollective::AllReduce => sum(),
        ModelCollective::Reduce if rank == 0 => sum(),
        ModelCollective::Reduce => Vec::new(),
        ModelCollective::Broadcast => input(0, elements),
    }
}

/// Why a slot's data is not that of one packet counted at most once per
/// rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotFault {
    /// A rank's contribution counted more than once.
    CountedTwice {
        /// The element's position in the slot.
        at: usize,
        /// The rank.
        rank: usize,
    },
    /// A value no sum of contributions of one element can be.
    NotASum {
        /// The element's position in the slot.
        at: usize,
        /// The value.
        value: i32,
    },
    /// Elements of different packets in one slot, or of a packet other
    /// than the one the slot's tag names.
    WrongPacket {
        /// The packet the slot's tag names.
        tag_packet: u32,
        /// The packet the data is from.
        data_packet: u32,
    },
}

/// Checks one slot's data (wire encoding) against the packet its tag
/// names, `tag_packet`; `per_packet` is elements per packet.
pub fn check_slot(
    data: &[u8],
    tag_packet: u32,
    per_packet: usize,
    ranks: usize,
) -> Result<(), SlotFault> {
    for (at, w) in data.chunks_exact(4).enumerate() {
        let Ok(word) = <[u8; 4]>::try_from(w) else {
            continue;
        };
        let v = i32::from_be_bytes(word);
        let low = (v & 0xffff) as u32;
        let mut count = 0u32;
        for rank in 0..MAX_RANKS {
            let n = (low >> (4 * rank)) & 0xf;
            if n > 1 {
                return Err(SlotFault::CountedTwice { at, rank });
            }
            if n == 1 && rank >= ranks {
                return Err(SlotFault::NotASum { at, value: v });
            }
            count += n;
        }
        let high = (v >> 16) as u32;
        if count == 0 || high % count != 0 || high / count == 0 {
            return Err(SlotFault::NotASum { at, value: v });
        }
        let e = (high / count - 1) as usize;
        let (packet, pos) = (e / per_packet.max(1), e % per_packet.max(1));
        if pos != at || packet as u32 != tag_packet {
            return Err(SlotFault::WrongPacket {
                tag_packet,
                data_packet: packet as u32,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(values: &[i32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    /// The encoding tells a correct partial sum from a double count, a
    /// mixed slot and a stale one. [VER-004]
    #[test]
    fn slot_check_tells_each_fault() {
        // Packet 1 of 2 elements each: elements 2 and 3.
        let ok = slot(&[value(0, 2) + value(2, 2), value(0, 3) + value(2, 3)]);
        assert_eq!(check_slot(&ok, 1, 2, 4), Ok(()));
        let twice = slot(&[value(0, 2) * 2, value(0, 3) * 2]);
        assert_eq!(
            check_slot(&twice, 1, 2, 4),
            Err(SlotFault::CountedTwice { at: 0, rank: 0 })
        );
        let stale = slot(&[value(0, 0), value(0, 1)]);
        assert_eq!(
            check_slot(&stale, 1, 2, 4),
            Err(SlotFault::WrongPacket {
                tag_packet: 1,
                data_packet: 0
            })
        );
        let mixed = slot(&[value(0, 2) + value(1, 0), value(0, 3)]);
        assert!(check_slot(&mixed, 1, 2, 4).is_err());
    }

    #[test]
    fn expected_results_follow_the_collective() {
        let sum = expected(ModelCollective::AllReduce, 3, 4, 1);
        assert_eq!(sum, ((4i32 << 16) | 0x1111).to_be_bytes().to_vec());
        assert!(expected(ModelCollective::Reduce, 1, 4, 1).is_empty());
        assert_eq!(expected(ModelCollective::Broadcast, 2, 4, 3), input(0, 3));
    }
}
