//! Placeholder while the core is written.
/// Input.
pub enum Input {}
/// Node.
pub struct StreamNode;
