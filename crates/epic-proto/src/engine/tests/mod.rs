//! The engine's tests that span modules, and their rig.

mod alignment_tests;
mod credit_tests;
mod deadline_tests;
mod install_tests;
mod lend_tests;
mod lock_tests;
mod m2_sr_tests;
mod m3_cc_tests;
mod m3_sr_tests;
#[cfg(feature = "mutants")]
mod mutant_tests;
mod outcome_tests;
mod pipe_walk_tests;
mod sack_tests;
mod source_tests;
mod test_rig;
