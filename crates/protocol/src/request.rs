//! A request to one of the models, and why it could not be answered.
//!
//! The models' own request readers (the trust ladder's gate, the tiers' gate, the rings' ops)
//! parse JSON objects into their inputs; when a request is malformed they say so with a stable
//! code and a sentence. The error belongs to the protocol, so that the models never depend on
//! the surface that serves them (`warrant eval`, `docs/eval.md`), which sends it as its `error`
//! object (dependencies point from surfaces to the protocol).

/// Why a request could not be answered: a stable `code` and a sentence (`docs/eval.md`, the
/// error object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// `parse_error`, `invalid_request`, `unknown_op`, `invalid_evidence`, `invalid_policy`,
    /// `invalid_action_class`, `line_too_long`.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}
