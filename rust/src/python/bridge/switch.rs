//! `CONTEXTFORGE_PLAIN_CALLS`: which of the bridge's shortcuts are on, read once when the module is
//! imported.
//!
//! Unset, empty or `0`: both shortcuts are on. `1`: every call takes the plain path (a worker, then the
//! loop's inbox), for debugging a production issue. A comma-separated list of `inline` and `awake`
//! turns off just those shortcuts. Anything else is read as `1`, with a warning.

use std::sync::OnceLock;

/// The shortcuts a call may take instead of the plain path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paths {
    /// A `quick` call may run on the loop's own thread.
    pub inline: bool,
    /// An awaiter may wait awake for a worker's result.
    pub awake: bool,
}

impl Paths {
    /// These paths for a call that always crosses the network: waiting awake
    /// would spin for all of `SPIN` and then give up, taking a core from the
    /// threads the call needs.
    pub fn networked(self) -> Self {
        Self { awake: false, ..self }
    }
}

pub const VARIABLE: &str = "CONTEXTFORGE_PLAIN_CALLS";

/// This process's paths, read from the environment on first use.
pub fn paths() -> Paths {
    static PATHS: OnceLock<Paths> = OnceLock::new();
    *PATHS.get_or_init(|| parse(std::env::var(VARIABLE).ok().as_deref()))
}

fn parse(value: Option<&str>) -> Paths {
    const ALL: Paths = Paths { inline: true, awake: true };
    const PLAIN: Paths = Paths { inline: false, awake: false };
    let value = value.unwrap_or("").trim();
    match value {
        "" | "0" => return ALL,
        "1" => return PLAIN,
        _ => {}
    }
    let mut paths = ALL;
    for name in value.split(',').map(str::trim) {
        match name {
            "inline" => paths.inline = false,
            "awake" => paths.awake = false,
            _ => {
                log::warn!("{VARIABLE}={value:?}: unknown path {name:?}; every call takes the plain path");
                return PLAIN;
            }
        }
    }
    paths
}
