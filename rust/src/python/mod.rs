//! PyO3 bindings (feature `python`): the `contextforge._core` module.

mod call;
mod engine;
mod errors;
mod hit;

use pyo3::prelude::*;

#[pymodule]
mod _core {
    #[pymodule_export]
    use super::engine::Engine;
    #[pymodule_export]
    use super::engine::default_config;
    #[pymodule_export]
    use super::hit::Hit;

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        // Async methods run on the crate's one runtime, not a second one.
        let _ = pyo3_async_runtimes::tokio::init_with_runtime(crate::runtime::runtime());
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        Ok(())
    }
}
