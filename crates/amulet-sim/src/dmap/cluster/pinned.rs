//! A switch for regression tests pinned to a seed: while a [`PinnedBefore`]
//! lives, seeds run on this thread draw none of the scenario ingredients
//! the swarm gained since a given day ([`Draws`]), so that each pinned seed
//! keeps the scenario it was found in.

/// Ingredients added to the swarm's draws after it first ran, in the order
/// they came: pinning a seed before one pins it before every later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Draws {
    /// Kills for good, joiners, and clients that avoid suspected nodes
    /// (2026-12-06).
    KillsAndJoins,
    /// The operator replacing the global stream (2026-12-07).
    GlobalReplacement,
}

thread_local! {
    /// The first ingredient not drawn on this thread; `None`: all are.
    static FIRST_NOT_DRAWN: std::cell::Cell<Option<Draws>> = const { std::cell::Cell::new(None) };
}

/// While it lives, seeds run on this thread draw nothing added since
/// `Draws` (that one included).
pub struct PinnedBefore {
    previous: Option<Draws>,
}

impl PinnedBefore {
    /// Turns `since` and every later ingredient off on this thread until
    /// dropped.
    pub fn new(since: Draws) -> PinnedBefore {
        let previous = FIRST_NOT_DRAWN.get();
        let first = previous.map_or(since, |p| p.min(since));
        FIRST_NOT_DRAWN.set(Some(first));
        PinnedBefore { previous }
    }
}

impl Drop for PinnedBefore {
    fn drop(&mut self) {
        FIRST_NOT_DRAWN.set(self.previous);
    }
}

/// Whether seeds on this thread draw `ingredient`.
fn draws(ingredient: Draws) -> bool {
    FIRST_NOT_DRAWN.get().is_none_or(|first| ingredient < first)
}

/// Whether seeds on this thread may draw joiners and kills for good, and
/// clients avoid suspects.
pub(crate) fn new_draws() -> bool {
    draws(Draws::KillsAndJoins)
}

/// Whether the operator of seeds on this thread may replace the global
/// stream.
pub(crate) fn global_draws() -> bool {
    draws(Draws::GlobalReplacement)
}
