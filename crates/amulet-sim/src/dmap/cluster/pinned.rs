//! A switch for regression tests pinned to a seed: while a
//! [`BeforeKillsAndJoins`] lives, seeds run on this thread draw no joiner
//! and no kill for good, and their clients do not avoid suspected nodes,
//! as the swarm ran before those were added (2026-12-06), so that each
//! pinned seed keeps the scenario it was found in.

thread_local! {
    static NEW_DRAWS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// While it lives, seeds run on this thread run as before kills for good,
/// joins and clients' suspects.
pub struct BeforeKillsAndJoins(());

impl BeforeKillsAndJoins {
    /// Turns the new draws off on this thread until dropped.
    pub fn new() -> BeforeKillsAndJoins {
        NEW_DRAWS.set(false);
        BeforeKillsAndJoins(())
    }
}

impl Default for BeforeKillsAndJoins {
    fn default() -> BeforeKillsAndJoins {
        BeforeKillsAndJoins::new()
    }
}

impl Drop for BeforeKillsAndJoins {
    fn drop(&mut self) {
        NEW_DRAWS.set(true);
    }
}

/// Whether seeds on this thread may draw joiners and kills for good, and
/// clients avoid suspects.
pub(crate) fn new_draws() -> bool {
    NEW_DRAWS.get()
}

thread_local! {
    static GLOBAL_DRAWS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// While it lives, seeds run on this thread draw no replacement of the
/// global stream by the operator, as the swarm ran before it was added
/// (2026-12-07), so that each seed pinned before keeps its scenario.
pub struct BeforeGlobalReplacement(());

impl BeforeGlobalReplacement {
    /// Turns the operator's global stream replacements off on this thread
    /// until dropped.
    pub fn new() -> BeforeGlobalReplacement {
        GLOBAL_DRAWS.set(false);
        BeforeGlobalReplacement(())
    }
}

impl Default for BeforeGlobalReplacement {
    fn default() -> BeforeGlobalReplacement {
        BeforeGlobalReplacement::new()
    }
}

impl Drop for BeforeGlobalReplacement {
    fn drop(&mut self) {
        GLOBAL_DRAWS.set(true);
    }
}

/// Whether the operator of seeds on this thread may replace the global
/// stream.
pub(crate) fn global_draws() -> bool {
    NEW_DRAWS.get() && GLOBAL_DRAWS.get()
}
