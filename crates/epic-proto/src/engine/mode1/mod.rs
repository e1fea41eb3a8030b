//! Mode I, connection terminated (paper §4.2): the switch is a full RC
//! peer on every tree edge and aggregates whole messages, as a
//! hierarchical parameter server; reliability is the RC endpoints' own.
//! [M1-001]

mod admit;
mod control;
mod machine;
mod msg_buf;
mod stages;
mod terminated;

#[cfg(test)]
mod refuse_tests;
#[cfg(test)]
mod sr_tests;
#[cfg(test)]
mod tests;

pub(crate) use terminated::Terminated;
