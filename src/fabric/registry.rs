//! The providers compiled into this build, default first.

use super::provider::FabricProvider;
use std::rc::Rc;

/// One factory per provider. Providers behind cargo features add theirs here.
pub(crate) fn providers() -> Vec<Rc<dyn FabricProvider>> {
    vec![Rc::new(super::uring::UringFabric)]
}
