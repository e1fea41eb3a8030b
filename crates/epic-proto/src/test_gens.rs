//! proptest strategies for the wire representations (feature `proptest`).
