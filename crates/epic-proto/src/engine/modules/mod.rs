//! The function modules of §4.1, each a small unit with its own tests.
//! Modes are compositions of these (paper Figure 5). [ENG-050]

pub mod aggregate_data;
pub mod check_duplicate;
pub mod lookup_table;
pub mod receive_ack;
pub mod recycle_buffer;
pub mod replicate_data;
pub mod retransmission;
pub mod send_ack;
pub mod translate_header;
