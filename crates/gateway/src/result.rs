//! Shaping tool results: a refusal as a normal tool result with `_meta._warrant`, and the
//! server's answers without a `_warrant` of their own.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Value, json};
use warrant_engine::govern::{Outcome, warrant_object};

/// The tool result of a call warrant did not run: `isError: true`, a text for the model, and
/// `_meta._warrant` ([`warrant_object`]); `structuredContent: {"_warrant": …}` too when the tool
/// declares no `outputSchema` (which a structured result would have to follow).
pub(super) fn refusal(key: &str, outcome: &Outcome, graduation: Option<Value>, structured: bool) -> CallToolResult {
    let mut w = warrant_object(outcome);
    if let (Some(g), Some(m)) = (graduation, w.as_object_mut())
        && m.get("graduationPath").is_none_or(Value::is_null)
    {
        m.insert("graduationPath".into(), g);
    }
    let field = |k: &str| w.get(k).and_then(Value::as_str).map(str::to_owned);
    let status = field("status").unwrap_or_default();
    let mut text = format!("warrant did not run {key}: {status}.\nReason: {}", field("reason").unwrap_or_default());
    if let Some(id) = field("packet_id") {
        text.push_str(&format!("\nPacket: {id}"));
    }
    if let Some(u) = field("unblock") {
        text.push_str(&format!("\nTo unblock: {u}"));
    }
    if let Some(g) = w.get("graduationPath").filter(|g| !g.is_null()) {
        text.push_str(&format!("\nGraduation path: {g}"));
    }
    text.push_str("\nThe call was not run. Re-plan: do not repeat it unchanged unless the principal says so.");
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.result_type = None;
    let mut meta = serde_json::Map::new();
    meta.insert("_warrant".into(), w.clone());
    r.meta = Some(MetaObject(meta));
    if structured {
        r.structured_content = Some(json!({ "_warrant": w }));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_tool_result_with_the_warrant_object() {
        let o = Outcome::Deny {
            packet_id: Some("gw-abc-3".into()),
            status: "refused",
            reason: "refused by alice: no".into(),
            remedy: None,
        };
        let r = refusal("filesystem/write_file", &o, Some(json!({"remaining": 3})), true);
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!(v["isError"], json!(true));
        assert_eq!(v["_meta"]["_warrant"]["status"], json!("refused"));
        assert_eq!(v["_meta"]["_warrant"]["packet_id"], json!("gw-abc-3"));
        assert_eq!(v["_meta"]["_warrant"]["graduationPath"], json!({"remaining": 3}));
        assert_eq!(v["structuredContent"]["_warrant"], v["_meta"]["_warrant"]);
        assert!(v.get("resultType").is_none(), "{v}");
        let text = v["content"][0]["text"].as_str().expect("text");
        assert!(text.contains("refused") && text.contains("gw-abc-3") && text.contains("not run"), "{text}");
        let r = refusal("filesystem/write_file", &o, None, false);
        assert!(serde_json::to_value(&r).expect("json").get("structuredContent").is_none());
    }
}
