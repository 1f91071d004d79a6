//! TEMPORARY placeholder replaced by the ladder branch merge.
#![allow(missing_docs)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NotebookTrust { #[default] Cautious, Trusted, Autonomous }
impl NotebookTrust {
    pub fn parse(s: &str) -> Option<Self> { match s { "cautious" => Some(Self::Cautious), "trusted" => Some(Self::Trusted), "autonomous" => Some(Self::Autonomous), _ => None } }
}
