//! Action descriptors (agent-hypervisor.md §2.3, §2.4; spec §5, §17): the fields, their
//! validation in the reference order, the risk weight and the ring an action requires.

use super::{Ring, ValidationError, is_blank, validate_identifier};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest `name`, in characters.
pub const MAX_NAME_LEN: usize = 256;
/// Longest `execute_api` / `undo_api`, in characters.
pub const MAX_API_LEN: usize = 2048;
/// Longest `undo_window_seconds` (24 hours).
pub const MAX_UNDO_WINDOW_SECONDS: i64 = 86_400;

/// How far an action can be undone (§2.3). Serialised lowercase: `full`, `partial`, `none`.
/// The model default is [`Reversibility::None`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reversibility {
    /// Fully undoable; risk 0.1–0.3.
    Full,
    /// Partly undoable; risk 0.5–0.8.
    Partial,
    /// Not undoable; risk 0.9–1.0. The default.
    #[default]
    None,
}

impl Reversibility {
    /// The wire string: `full`, `partial` or `none`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Reversibility::Full => "full",
            Reversibility::Partial => "partial",
            Reversibility::None => "none",
        }
    }

    /// Parses the exact lowercase wire string.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Reversibility::Full, Reversibility::Partial, Reversibility::None].into_iter().find(|r| r.as_str() == s)
    }

    /// The risk range `(low, high)`: FULL 0.1–0.3, PARTIAL 0.5–0.8, NONE 0.9–1.0.
    #[must_use]
    pub fn risk_range(self) -> (f64, f64) {
        match self {
            Reversibility::Full => (0.1, 0.3),
            Reversibility::Partial => (0.5, 0.8),
            Reversibility::None => (0.9, 1.0),
        }
    }
}

/// An action an agent may ask to run (§2.3). Build one with [`ActionDescriptor::new`] (model
/// defaults) or [`ActionDescriptor::from_json`] (validated); a hand-built value can be checked with
/// [`ActionDescriptor::validate`].
///
/// JSON shape (serde): `{"action_id", "name", "execute_api", "undo_api": str|null,
/// "reversibility": "full"|"partial"|"none", "undo_window_seconds": int, "compensation_method":
/// str|null, "is_read_only": bool, "is_admin": bool}`. Deserialising goes through
/// [`ActionDescriptor::from_json`], so serde input is validated too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value")]
pub struct ActionDescriptor {
    /// Identifier (validated with [`validate_identifier`]).
    pub action_id: String,
    /// Human name: non-blank, at most 256 characters, any characters.
    pub name: String,
    /// The API that executes the action: non-blank, at most 2048 characters.
    pub execute_api: String,
    /// The API that undoes it, if any: non-blank when present, at most 2048 characters.
    pub undo_api: Option<String>,
    /// Default [`Reversibility::None`].
    pub reversibility: Reversibility,
    /// Seconds during which the action can be undone, 0–86400. Default 0.
    pub undo_window_seconds: i64,
    /// Free text naming the compensation, if any. Not validated.
    pub compensation_method: Option<String>,
    /// Default false.
    pub is_read_only: bool,
    /// Default false.
    pub is_admin: bool,
}

impl ActionDescriptor {
    /// The JSON keys a descriptor may have, in field order.
    pub const FIELDS: [&'static str; 9] = [
        "action_id",
        "name",
        "execute_api",
        "undo_api",
        "reversibility",
        "undo_window_seconds",
        "compensation_method",
        "is_read_only",
        "is_admin",
    ];

    /// A descriptor with the model defaults (no undo API, reversibility NONE, window 0, not
    /// read-only, not admin): such an action requires Ring 1. Not validated.
    #[must_use]
    pub fn new(action_id: &str, name: &str, execute_api: &str) -> Self {
        Self {
            action_id: action_id.into(),
            name: name.into(),
            execute_api: execute_api.into(),
            undo_api: None,
            reversibility: Reversibility::None,
            undo_window_seconds: 0,
            compensation_method: None,
            is_read_only: false,
            is_admin: false,
        }
    }

    /// Checks the values in the reference order (§2.3), the first failure winning:
    /// `action_id` (identifier rules), `name` ("name must be a non-empty string", "name exceeds
    /// maximum length of 256 characters"), `execute_api`, `undo_api` ("undo_api must not be
    /// empty"), `undo_window_seconds` ("… must not be negative", "… must not exceed 86400 (24
    /// hours)").
    ///
    /// # Errors
    /// [`ValidationError::Value`] with the message of the first failing check.
    pub fn validate(&self) -> Result<(), ValidationError> {
        validate_identifier("action_id", &self.action_id)?;
        check_text("name", &self.name, MAX_NAME_LEN)?;
        check_text("execute_api", &self.execute_api, MAX_API_LEN)?;
        if let Some(undo) = &self.undo_api {
            check_undo_api(undo)?;
        }
        check_undo_window(self.undo_window_seconds)
    }

    /// Parses and validates a JSON descriptor, field by field in the reference order, type check
    /// before value check for each field. Stricter than the reference (fail closed): booleans
    /// must be JSON booleans, `undo_window_seconds` must be a JSON integer (no bool, no float),
    /// `reversibility` one of the three lowercase strings, and unknown keys are rejected (a
    /// misspelt `is_admin` must not quietly lower the required ring).
    ///
    /// # Errors
    /// [`ValidationError::Type`] for a missing field or a wrong type, [`ValidationError::Value`]
    /// for a bad value or an unknown key.
    pub fn from_json(v: &Value) -> Result<Self, ValidationError> {
        let Value::Object(m) = v else {
            return Err(ValidationError::Type("action must be an object".into()));
        };
        let required_str = |key: &str| -> Result<String, ValidationError> {
            match m.get(key) {
                None => Err(ValidationError::Type(format!("{key} is required"))),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(ValidationError::Type(format!("{key} must be a string"))),
            }
        };
        let action_id = required_str("action_id")?;
        validate_identifier("action_id", &action_id)?;
        let name = match m.get("name") {
            Some(Value::String(s)) => s.clone(),
            None => return Err(ValidationError::Type("name is required".into())),
            Some(_) => return Err(ValidationError::Type("name must be a non-empty string".into())),
        };
        check_text("name", &name, MAX_NAME_LEN)?;
        let execute_api = required_str("execute_api")?;
        check_text("execute_api", &execute_api, MAX_API_LEN)?;
        let undo_api = optional_str(m, "undo_api")?;
        if let Some(u) = &undo_api {
            check_undo_api(u)?;
        }
        let reversibility = match m.get("reversibility") {
            None => Reversibility::default(),
            Some(Value::String(s)) => Reversibility::parse(s).ok_or_else(|| {
                ValidationError::Value(format!("reversibility must be one of full, partial, none; got {s:?}"))
            })?,
            Some(_) => return Err(ValidationError::Type("reversibility must be a string".into())),
        };
        let undo_window_seconds = match m.get("undo_window_seconds") {
            None => 0,
            Some(v) => json_int("undo_window_seconds", v)?,
        };
        check_undo_window(undo_window_seconds)?;
        let compensation_method = optional_str(m, "compensation_method")?;
        let is_read_only = optional_bool(m, "is_read_only")?;
        let is_admin = optional_bool(m, "is_admin")?;
        if let Some(k) = m.keys().find(|k| !Self::FIELDS.contains(&k.as_str())) {
            return Err(ValidationError::Value(format!("unknown action descriptor field {k:?}")));
        }
        Ok(Self {
            action_id,
            name,
            execute_api,
            undo_api,
            reversibility,
            undo_window_seconds,
            compensation_method,
            is_read_only,
            is_admin,
        })
    }

    /// The midpoint of the reversibility's risk range: FULL 0.2, PARTIAL 0.65, NONE 0.95 (§2.3).
    #[must_use]
    pub fn risk_weight(&self) -> f64 {
        let (low, high) = self.reversibility.risk_range();
        (low + high) / 2.0
    }

    /// The ring this action requires (§2.4), rules in order: admin → Ring 0; reversibility NONE
    /// and not read-only → Ring 1; read-only → Ring 3; otherwise Ring 2.
    #[must_use]
    pub fn required_ring(&self) -> Ring {
        if self.is_admin {
            Ring::Root
        } else if self.reversibility == Reversibility::None && !self.is_read_only {
            Ring::Privileged
        } else if self.is_read_only {
            Ring::Sandbox
        } else {
            Ring::Standard
        }
    }
}

impl TryFrom<Value> for ActionDescriptor {
    type Error = ValidationError;
    fn try_from(v: Value) -> Result<Self, ValidationError> {
        Self::from_json(&v)
    }
}

fn check_text(field: &str, value: &str, max: usize) -> Result<(), ValidationError> {
    if is_blank(value) {
        // The reference's words: `name` "must be a non-empty string", the APIs "must not be empty".
        return Err(ValidationError::Value(if field == "name" {
            format!("{field} must be a non-empty string")
        } else {
            format!("{field} must not be empty")
        }));
    }
    if value.chars().count() > max {
        return Err(ValidationError::Value(format!("{field} exceeds maximum length of {max} characters")));
    }
    Ok(())
}

fn check_undo_api(value: &str) -> Result<(), ValidationError> {
    check_text("undo_api", value, MAX_API_LEN)
}

fn check_undo_window(v: i64) -> Result<(), ValidationError> {
    if v < 0 {
        Err(ValidationError::Value(format!("undo_window_seconds must not be negative, got {v}")))
    } else if v > MAX_UNDO_WINDOW_SECONDS {
        Err(ValidationError::Value(format!("undo_window_seconds must not exceed 86400 (24 hours), got {v}")))
    } else {
        Ok(())
    }
}

/// A JSON integer, strictly: booleans and floats (even `10.0`) are type errors (fail closed;
/// Python accepts `True` as 1). An integer beyond `i64` saturates, so range checks reject it.
pub(crate) fn json_int(field: &str, v: &Value) -> Result<i64, ValidationError> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.as_i64().unwrap_or(i64::MAX)),
        Value::Number(_) => Err(ValidationError::Type(format!("{field} must be an integer, got float"))),
        Value::Bool(_) => Err(ValidationError::Type(format!("{field} must be an integer, got bool"))),
        Value::Null => Err(ValidationError::Type(format!("{field} must be an integer, got None"))),
        _ => Err(ValidationError::Type(format!("{field} must be an integer"))),
    }
}

fn optional_str(m: &Map<String, Value>, key: &str) -> Result<Option<String>, ValidationError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ValidationError::Type(format!("{key} must be a string or null"))),
    }
}

fn optional_bool(m: &Map<String, Value>, key: &str) -> Result<bool, ValidationError> {
    match m.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ValidationError::Type(format!("{key} must be a boolean"))),
    }
}
