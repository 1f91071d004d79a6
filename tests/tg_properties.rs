//! Property tests of Trust Graduation (`trust-graduation.md` §3–§5):
//! - the posterior's 95% interval is inside [0, 1], contains the mean, and is the exact
//!   equal-tailed interval of Beta(α, β);
//! - the interval narrows as evidence grows (one-sign rows, and doubling any mix);
//! - a negative row never raises the mean (and a positive one never lowers it);
//! - no input makes an external class `allowed`, not even a valid exact grant (which yields
//!   `deferred` / `pending_atomic_consumption`);
//! - `can_execute` is deterministic.

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};
use statrs::function::beta::beta_reg;
use time::OffsetDateTime;
use time::macros::date;
use warrant::protocol::graduation::binding;
use warrant::protocol::graduation::evidence::{EvidenceIndex, EvidenceRow, EvidenceSummary, SourceType};
use warrant::protocol::graduation::gate::{AgentStanding, Decision, GateRequest, Mode, can_execute};
use warrant::protocol::graduation::policy::{PolicySet, Threshold};
use warrant::protocol::graduation::posterior::Posterior;
use warrant::protocol::graduation::receipt::prepare_approval_packet;
use warrant::protocol::packet::DecisionState;

const CASES: u32 = 96;

/// The spec's eight labels (§4.1).
const SPEC_LABELS: [&str; 8] =
    ["sent", "approved", "minor_edit", "edited", "heavy_rewrite", "held", "rejected", "dropped"];

/// The reference's extras, receipt outcomes, misfiled negatives and free text.
const EXTRA_LABELS: [&str; 22] = [
    "trust_issue",
    "hallucination",
    "rollback",
    "refused",
    "overrode",
    "outcome_positive",
    "outcome_negative",
    "policy_exception",
    "receipt_logged",
    "sent_with_receipt",
    "edited_and_accepted",
    "used",
    "executed",
    "approve",
    "refuse",
    "correct",
    "execute",
    "customer complaint",
    "leaked-secret",
    "  Approved ",
    "SENT",
    "unsuccessful_send_failed",
];

const CLASS: &str = "email.send.internal";
const OTHER_CLASS: &str = "draft.compose";
const THRESHOLD: Threshold = Threshold { ci_low_min: 0.8, samples_min: 10 };

fn today() -> time::Date {
    date!(2026 - 05 - 30)
}

fn label() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(SPEC_LABELS.to_vec()).prop_map(String::from),
        2 => select(EXTRA_LABELS.to_vec()).prop_map(String::from),
        1 => "[a-z_ .-]{0,16}",
    ]
}

fn source() -> impl Strategy<Value = Option<SourceType>> {
    proptest::option::of(select(SourceType::ALL.to_vec()))
}

fn row_date() -> impl Strategy<Value = Option<String>> {
    proptest::option::of((2025..=2026i32, 1..=12u8, 1..=28u8).prop_map(|(y, m, d)| format!("{y}-{m:02}-{d:02}")))
}

/// One row: mostly of `class`, sometimes of another class; built with `EvidenceRow::new`, or
/// parsed with explicit (possibly out-of-range, then clamped) weights.
fn row_of(class: &'static str) -> impl Strategy<Value = EvidenceRow> {
    let built = (prop_oneof![4 => Just(class), 1 => Just(OTHER_CLASS)], label(), source(), row_date())
        .prop_map(|(c, l, s, d)| EvidenceRow::new(c, &l, s, d));
    let parsed = (label(), source(), proptest::option::of(-3.0..3.0f64), proptest::option::of(-3.0..3.0f64)).prop_map(
        move |(l, s, dw, ew)| {
            let mut v = json!({"action_class": class, "label": l});
            if let Some(s) = s {
                v["source_type"] = json!(s.as_str());
            }
            if let Some(d) = dw {
                v["decision_weight"] = json!(d);
            }
            if let Some(e) = ew {
                v["evidence_weight"] = json!(e);
            }
            EvidenceRow::from_json(&v).expect("a generated row parses")
        },
    );
    prop_oneof![4 => built, 1 => parsed]
}

fn rows_of(class: &'static str) -> impl Strategy<Value = Vec<EvidenceRow>> {
    proptest::collection::vec(row_of(class), 0..60)
}

fn posterior(rows: &[EvidenceRow]) -> Posterior {
    Posterior::of(CLASS, rows, THRESHOLD, today())
}

/// A row of one sign: a label and provenance whose evidence weight is non-zero.
fn signed_row() -> impl Strategy<Value = EvidenceRow> {
    (prop_oneof![select(SPEC_LABELS.to_vec()), select(EXTRA_LABELS.to_vec())], source())
        .prop_map(|(l, s)| EvidenceRow::new(CLASS, l, s, Some("2026-05-01".into())))
        .prop_filter("non-zero weight", |r| r.evidence_weight != 0.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    // The interval is inside [0, 1], non-degenerate, contains the mean, and its ends are the exact 2.5% and 97.5% quantiles of Beta(α, β).
    #[test]
    fn interval_contains_the_mean(rows in rows_of(CLASS)) {
        let p = posterior(&rows);
        prop_assert!(0.0 <= p.ci_low && p.ci_low < p.ci_high && p.ci_high <= 1.0, "{p:?}");
        prop_assert!(p.ci_low <= p.mean && p.mean <= p.ci_high, "{p:?}");
        prop_assert!(p.alpha >= 2.0 && p.beta >= 2.0, "{p:?}");
        prop_assert!((p.mean - p.alpha / (p.alpha + p.beta)).abs() < 1e-15, "{p:?}");
        prop_assert!((beta_reg(p.alpha, p.beta, p.ci_low) - 0.025).abs() < 1e-12, "{p:?}");
        prop_assert!((beta_reg(p.alpha, p.beta, p.ci_high) - 0.975).abs() < 1e-12, "{p:?}");
        let mine = rows.iter().filter(|r| r.action_class == CLASS);
        prop_assert_eq!(p.samples as usize, mine.clone().filter(|r| r.evidence_weight != 0.0).count());
        prop_assert_eq!(p.neutral as usize, mine.filter(|r| r.evidence_weight == 0.0).count());
        let j = p.to_json();
        prop_assert_eq!(&j["ci_low"], &json!(p.ci_low));
        prop_assert!((j["ci_width"].as_f64().expect("width") - (p.ci_high - p.ci_low)).abs() < 1e-15);
    }

    // k identical rows of one sign: the interval strictly narrows with every row, and 2n rows give a narrower interval than n.
    #[test]
    fn one_sign_evidence_narrows_the_interval(row in signed_row(), n in 1usize..40) {
        let width = |k: usize| posterior(&vec![row.clone(); k]).ci_width();
        let (w0, wn, wn1, w2n) = (width(0), width(n), width(n + 1), width(2 * n));
        prop_assert!(wn < w0, "{} n={n}: {wn} vs prior {w0}", row.label);
        prop_assert!(wn1 < wn, "{} n={n}: {wn1} after {wn}", row.label);
        prop_assert!(w2n < wn, "{} n={n}: {w2n} after {wn}", row.label);
    }

    // Doubling any mix (the same rows twice) narrows the interval when it has a non-zero row, and leaves it alone otherwise.
    #[test]
    fn doubling_the_evidence_narrows_the_interval(rows in rows_of(CLASS)) {
        let once = posterior(&rows);
        let twice = posterior(&[rows.clone(), rows].concat());
        prop_assert_eq!(twice.samples, 2 * once.samples);
        if once.samples == 0 {
            prop_assert_eq!(twice.ci_width(), once.ci_width());
        } else {
            prop_assert!(twice.ci_width() < once.ci_width(), "{} → {}", once.ci_width(), twice.ci_width());
        }
    }

    // A row moves the mean in the direction of its weight's sign only: a negative row never raises it, a positive one never lowers it, a zero row or a row of another class leaves it alone.
    #[test]
    fn a_negative_row_never_raises_the_mean(rows in rows_of(CLASS), extra in row_of(CLASS)) {
        let before = posterior(&rows).mean;
        let after = posterior(&[rows, vec![extra.clone()]].concat()).mean;
        let w = extra.evidence_weight;
        if extra.action_class != CLASS || w == 0.0 {
            prop_assert_eq!(after, before);
        } else if w < 0.0 {
            prop_assert!(after < before, "{} ({w}): {before} → {after}", extra.label);
        } else {
            prop_assert!(after > before, "{} ({w}): {before} → {after}", extra.label);
        }
        prop_assert!(after <= before || w > 0.0);
    }
}

// ---- the gate ------------------------------------------------------------------------------------

/// A local class declared `type = "external"` with every other knob as lax as the policy file
/// allows, and an internal and an `external controlled` class just as lax for contrast.
const LOCAL_POLICY: &str = r#"
[[class]]
id = "vendor.order.place"
type = "external"
risk = "low"
minimum_level = 0
requires_approval = false
receipt_required = false
aliases = ["order_place"]

[[class]]
id = "vendor.order.draft"
type = "external controlled"
risk = "low"
minimum_level = 0
requires_approval = false

[[class]]
id = "notes.local.write"
type = "internal"
minimum_level = 0
"#;

fn policies(strict: bool) -> PolicySet {
    let mut set = PolicySet::from_toml(LOCAL_POLICY).expect("local policy");
    set.strict = strict;
    set
}

/// External classes as requested: the five canonical ones (with aliases and odd spellings) and
/// the local external class (and its alias).
const EXTERNAL: [&str; 13] = [
    "email.send.external",
    "social.post.public",
    "proposal.submit",
    "calendar.create",
    "payment.initiate",
    "vendor.order.place",
    "payment.spend",
    "social.post.external",
    "calendar.invite.external",
    "EMAIL_SEND_EXTERNAL",
    " Proposal.Submit ",
    "order_place",
    "calendar_create_external",
];

/// A JSON value of any shape, for constraint values and context members.
fn junk() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(|n| json!(n)),
        (-10.0..1e6f64).prop_map(|x| json!(x)),
        "[a-z@. ]{0,12}".prop_map(Value::String),
        proptest::collection::vec("[a-z@.]{1,10}", 0..3).prop_map(|v| json!(v)),
        Just(json!({"count": 3, "window": "PT1H"})),
    ]
}

/// The ten vocabulary keys and one key outside the vocabulary.
fn vocabulary() -> Vec<&'static str> {
    let mut keys = warrant::protocol::graduation::gate::CONSTRAINT_VOCABULARY.to_vec();
    keys.push("scope");
    keys
}

/// Context constraints with a malformed vocabulary member make the gate fail closed (`blocked`).
fn malformed_constraints(context: &Value) -> bool {
    context
        .get("constraints")
        .and_then(Value::as_object)
        .is_some_and(|c| warrant::protocol::graduation::gate::check_constraints(c).is_err())
}

fn constraints() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(select(vocabulary()), junk(), 0..5).prop_map(|m| {
        let mut out: Map<String, Value> = m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        if let Some(Value::String(_)) = out.get("expires_at") {
            // Sometimes a real date-time, in the future or the past.
            out.insert("expires_at".into(), json!("2026-06-01T00:00:00Z"));
        }
        Value::Object(out)
    })
}

/// A request context: any mix of the members the gate reads, with good and bad values.
fn context() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(prop_oneof![
            any::<bool>().prop_map(Value::Bool),
            Just(json!("yes")),
            Just(json!("")),
            Just(json!(1)),
            Just(json!(0))
        ]),
        proptest::option::of(constraints()),
        proptest::option::of(select(vec!["approved", "pending", "rejected", "APPROVED"])),
        proptest::option::of(
            ("[a-z]{1,8}@example\\.com", "(?s).{0,20}").prop_map(|(to, body)| json!({"to": to, "body": body})),
        ),
        proptest::option::of("[a-z0-9-]{1,12}"),
        proptest::option::of(select(vec!["2026-05-30T12:30:00.000Z", "2025-01-01T00:00:00.000Z", "soon"])),
        proptest::option::of(select(vec!["alice", "bob"])),
        proptest::option::of(junk()),
    )
        .prop_map(|(asynchronous, constraints, state, action, nonce, expires, principal, other)| {
            let mut m = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    m.insert(k.to_owned(), v);
                }
            };
            put("asynchronousApproval", asynchronous);
            put("constraints", constraints);
            put("approvalState", state.map(|s| json!(s)));
            put("requestedAction", action);
            put("nonce", nonce.map(|s| json!(s)));
            put("expiresAt", expires.map(|s| json!(s)));
            put("principal", principal.map(|s| json!(s)));
            put("requestedBy", Some(json!("scribe")));
            put("note", other);
            Value::Object(m)
        })
}

/// What the agent presents as approval.
#[derive(Debug, Clone)]
enum Presented {
    Nothing,
    /// `{state: "approved"}` and friends: a flag, not a grant.
    Flag(Value),
    /// A grant made from the gate's own binding for this exact request.
    ValidGrant,
    /// That grant with one member changed.
    TamperedGrant(&'static str, Value),
}

fn presented() -> impl Strategy<Value = Presented> {
    prop_oneof![
        Just(Presented::Nothing),
        prop_oneof![
            Just(json!({"state": "approved"})),
            Just(json!({"state": "approved", "scope": "once", "actionHash": "sha256:00"})),
            Just(json!({"state": "denied"})),
        ]
        .prop_map(Presented::Flag),
        Just(Presented::ValidGrant),
        Just(Presented::ValidGrant),
        (select(vec!["actionHash", "inputHash", "target", "nonce", "executionCount", "scope", "revokedAt"]), junk())
            .prop_map(|(k, v)| Presented::TamperedGrant(k, v)),
    ]
}

fn standing() -> impl Strategy<Value = AgentStanding> {
    select(vec![AgentStanding::Active, AgentStanding::Active, AgentStanding::Quarantined, AgentStanding::Killed])
}

fn instant() -> impl Strategy<Value = OffsetDateTime> {
    (1_767_225_600i64..1_798_761_600, 0u16..1000).prop_map(|(s, ms)| {
        OffsetDateTime::from_unix_timestamp(s).expect("in range") + time::Duration::milliseconds(i64::from(ms))
    })
}

#[derive(Debug, Clone)]
struct GateInput {
    class: String,
    strict: bool,
    context: Value,
    presented: Presented,
    evidence: Vec<EvidenceRow>,
    agent: AgentStanding,
    chain_intact: bool,
    now: OffsetDateTime,
}

fn evidence_for(classes: &'static [&'static str]) -> impl Strategy<Value = Vec<EvidenceRow>> {
    let row = (
        select(classes.to_vec()),
        prop_oneof![
            3 => Just("approved"),
            3 => Just("sent"),
            1 => select(SPEC_LABELS.to_vec()),
            1 => select(EXTRA_LABELS.to_vec()),
        ],
        prop_oneof![3 => Just(Some(SourceType::Receipt)), 1 => source()],
    )
        .prop_map(|(c, l, s)| EvidenceRow::new(c, l, s, Some("2026-05-01".into())));
    // Up to 200 rows: enough for auto_capped on any class.
    proptest::collection::vec(row, 0..200)
}

fn gate_input(classes: &'static [&'static str]) -> impl Strategy<Value = GateInput> {
    (
        select(classes.to_vec()),
        any::<bool>(),
        context(),
        presented(),
        evidence_for(classes),
        standing(),
        prop_oneof![4 => Just(true), 1 => Just(false)],
        instant(),
    )
        .prop_map(|(class, strict, context, presented, evidence, agent, chain_intact, now)| GateInput {
            class: class.to_owned(),
            strict,
            context,
            presented,
            evidence,
            agent,
            chain_intact,
            now,
        })
}

fn decide(set: &PolicySet, g: &GateInput, approval: Option<&Value>) -> Decision<'static> {
    let index = EvidenceIndex::new(&g.evidence);
    let req = GateRequest {
        action_class: &g.class,
        context: &g.context,
        approval,
        evidence: &index,
        workspace: "local",
        now: g.now,
        agent: g.agent,
        chain_intact: g.chain_intact,
    };
    can_execute(set, &req).into_owned()
}

/// The approval the input presents; grants are made from the binding of the same request
/// without approval, issued a minute before `now`.
fn approval_of(set: &PolicySet, g: &GateInput) -> Option<Value> {
    let grant = |b: &Value| {
        let issued = binding::js_iso(g.now - time::Duration::minutes(1));
        binding::create_grant(b, "grant-7", "principal:alice", &issued).ok()
    };
    match &g.presented {
        Presented::Nothing => None,
        Presented::Flag(f) => Some(f.clone()),
        Presented::ValidGrant => {
            decide(set, g, None).action_binding().and_then(grant).or(Some(json!({"state": "approved"})))
        }
        Presented::TamperedGrant(k, v) => {
            let mut a = decide(set, g, None).action_binding().and_then(grant)?;
            a[*k] = v.clone();
            Some(a)
        }
    }
}

static EXTERNAL_CLASSES: [&str; 13] = EXTERNAL;
static CONTRAST_CLASSES: [&str; 4] = ["read.context", "draft.compose", "notes.local.write", "vendor.order.draft"];
static ANY_CLASSES: [&str; 12] = [
    "read.context",
    "draft.compose",
    "draft.response",
    "tool.call.local",
    "email.send.internal",
    "email.send.external",
    "calendar.create",
    "social.post.public",
    "payment.initiate",
    "proposal.submit",
    "vendor.order.place",
    "widget.frobnicate",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    // No context, evidence, standing or approval makes an external class allowed; a valid exact grant yields deferred / pending_atomic_consumption, still not allowed.
    #[test]
    fn external_classes_are_never_allowed(g in gate_input(&EXTERNAL_CLASSES)) {
        let set = policies(g.strict);
        let approval = approval_of(&set, &g);
        let d = decide(&set, &g, approval.as_ref());
        let j = d.to_json();
        prop_assert!(!d.allowed, "{j:#}");
        prop_assert_eq!(&j["allowed"], &json!(false));
        prop_assert!(!matches!(d.status, DecisionState::Allowed | DecisionState::AllowedWithConstraints), "{j:#}");
        prop_assert!(!matches!(d.mode, Mode::Allowed | Mode::Supervised | Mode::AutoCapped), "{j:#}");

        let fail_closed = g.agent != AgentStanding::Active || !g.chain_intact || malformed_constraints(&g.context);
        if fail_closed {
            prop_assert_eq!(d.status, DecisionState::Blocked);
        } else if d.action_class == "payment.initiate" {
            prop_assert_eq!(d.status, DecisionState::HumanOnly);
            prop_assert!(d.action_binding().is_none());
        } else {
            // Every other external class is approval-gated and bound to the exact action.
            prop_assert!(d.action_binding().is_some(), "{j:#}");
            let valid = d.approval_check.is_some_and(|c| c.is_ok());
            if valid {
                prop_assert_eq!(d.status, DecisionState::Deferred);
                prop_assert_eq!(d.mode, Mode::PendingAtomicConsumption);
                prop_assert!(d.requires_atomic_consumption && !d.needs_approval);
            } else {
                prop_assert_eq!(d.mode, Mode::ApprovalRequired);
                prop_assert!(matches!(d.status, DecisionState::ReviewRequired | DecisionState::Deferred));
                prop_assert!(d.needs_approval && d.approval_packet_required);
            }
            // A grant for this exact request is valid unless the context set an expiry of its own
            // (then it may have passed, or be malformed).
            let own_expiry = g.context.get("expiresAt").is_some()
                || g.context.get("constraints").and_then(|c| c.get("expires_at")).is_some();
            if matches!(g.presented, Presented::ValidGrant) && !own_expiry {
                prop_assert!(valid, "{:?} {j:#}", d.approval_check);
            }
            if matches!(g.presented, Presented::Nothing | Presented::Flag(_)) {
                prop_assert!(!valid);
            }
        }
        // The packet an agent would prepare never claims an external action.
        let p = prepare_approval_packet(&d, &g.evidence, "scribe", "s");
        prop_assert_eq!(&p["external_actions"], &json!(0));
        prop_assert_eq!(&p["required_approval"], &json!(true));
    }

    // The contrast: the same generators do make internal (and lax external-controlled) classes allowed when the agent is active and the chain intact, so the property above is not vacuous.
    #[test]
    fn internal_classes_can_be_allowed(g in gate_input(&CONTRAST_CLASSES)) {
        let set = policies(g.strict);
        let d = decide(&set, &g, None);
        let reviewed = d.summary.tier() == warrant::protocol::graduation::Tier::Review;
        if g.agent == AgentStanding::Active && g.chain_intact && !reviewed && !malformed_constraints(&g.context) {
            prop_assert!(d.allowed, "{:#}", d.to_json());
            prop_assert!(matches!(d.status, DecisionState::Allowed | DecisionState::AllowedWithConstraints));
        } else {
            prop_assert!(!d.allowed);
        }
    }

    // can_execute is a pure function: the same request twice gives the same decision, the same JSON and the same approval packet.
    #[test]
    fn can_execute_is_deterministic(g in gate_input(&ANY_CLASSES)) {
        let set = policies(g.strict);
        let approval = approval_of(&set, &g);
        let a = decide(&set, &g, approval.as_ref());
        let b = decide(&policies(g.strict), &g.clone(), approval.clone().as_ref());
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(a.to_json(), b.to_json());
        prop_assert_eq!(
            prepare_approval_packet(&a, &g.evidence, "scribe", "s"),
            prepare_approval_packet(&b, &g.evidence, "scribe", "s")
        );
    }

    // The streamed JSON of a decision (`write_json`, what `warrant eval` writes) is byte for byte the serialized `to_json`, with an echoed `id` in its sorted place; the evidence index gives every class exactly the summary a scan of the rows gives (floating-point sums included).
    #[test]
    fn streamed_decisions_and_indexed_evidence_match_the_plain_forms(
        g in gate_input(&ANY_CLASSES),
        id in prop_oneof![Just(None), Just(Some(json!(7))), Just(Some(json!("a\"b\u{e9}"))), Just(Some(json!({"k": [1.5]})))],
    ) {
        let set = policies(g.strict);
        let approval = approval_of(&set, &g);
        let d = decide(&set, &g, approval.as_ref());
        let mut want = d.to_json();
        if let Some(id) = &id {
            want["id"] = id.clone();
        }
        let mut got = Vec::new();
        d.write_json(id.as_ref(), &mut got).expect("write into a Vec");
        prop_assert_eq!(String::from_utf8(got).expect("UTF-8"), serde_json::to_string(&want).expect("JSON"));
        let index = EvidenceIndex::new(&g.evidence);
        prop_assert_eq!(index.len(), g.evidence.len());
        for class in ANY_CLASSES {
            prop_assert_eq!(index.summary(class), EvidenceSummary::of(class, &g.evidence), "{}", class);
        }
    }
}

// The local class differs from its contrast only in `type`: "external" is approval-gated even with risk low, minimum level 0 and requires_approval false; "external controlled" with the same knobs runs.
#[test]
fn the_external_type_alone_gates_a_local_class() {
    let set = policies(false);
    let evidence: Vec<EvidenceRow> = (0..20)
        .flat_map(|_| {
            ["vendor.order.place", "vendor.order.draft"]
                .map(|c| EvidenceRow::new(c, "approved", Some(SourceType::Receipt), Some("2026-05-01".into())))
        })
        .collect();
    let g = |class: &str| GateInput {
        class: class.into(),
        strict: false,
        context: json!({}),
        presented: Presented::Nothing,
        evidence: evidence.clone(),
        agent: AgentStanding::Active,
        chain_intact: true,
        now: time::macros::datetime!(2026-05-30 12:00 UTC),
    };
    let controlled = decide(&set, &g("vendor.order.draft"), None);
    assert!(controlled.allowed, "{:#}", controlled.to_json());
    assert_eq!(controlled.status, DecisionState::Allowed);
    for class in ["vendor.order.place", "order_place", "ORDER_PLACE"] {
        let external = decide(&set, &g(class), None);
        assert!(!external.allowed, "{class}");
        assert_eq!(external.action_class, "vendor.order.place");
        assert_eq!((external.status, external.mode), (DecisionState::ReviewRequired, Mode::ApprovalRequired));
    }
}
