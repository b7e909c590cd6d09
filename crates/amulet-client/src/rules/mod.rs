//! The client's rules, sans I/O (DMap §III-B): routing, sessions, and an
//! operation's attempts. They never read the clock or draw randomness
//! themselves: `now` and a random generator are arguments, so the gRPC
//! client (real time, OS randomness) and the simulator (virtual time, the
//! seed's generator) run the same rules.

pub mod outcome;
pub mod resend;
pub mod routing;
pub mod session;
pub mod suspects;

#[cfg(test)]
mod tests;

pub use outcome::Outcome;
pub use resend::{Backoff, Next, Request, Resend, Timing};
pub use session::Session;
pub use suspects::Suspects;
