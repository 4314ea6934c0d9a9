//! The providers compiled into this build, default first.

use super::provider::FabricProvider;
use std::rc::Rc;

/// One factory per provider. Providers behind cargo features add theirs here.
pub(crate) fn providers() -> Vec<Rc<dyn FabricProvider>> {
    #[allow(unused_mut)]
    let mut all: Vec<Rc<dyn FabricProvider>> = vec![Rc::new(super::uring::UringFabric)];
    #[cfg(feature = "libfabric")]
    all.extend(super::libfabric::providers());
    all
}
