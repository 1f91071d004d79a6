//! placeholder
#![allow(missing_docs)]
#[derive(Default)]
pub struct RingsSession;
impl RingsSession {
    pub fn handle(
        &mut self,
        _op: &str,
        _r: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, crate::eval::EvalError> {
        Err(crate::eval::EvalError { code: "unknown_op", message: String::new() })
    }
}
