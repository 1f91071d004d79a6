//! Per-session path isolation (agent-hypervisor.md §2.10; spec §11, §20.5).
//!
//! Unlike the reference (a raw string prefix over a lexically normalised path that keeps `..`),
//! a path is canonicalised first: `.` and `..` are resolved, symlinks are resolved for every
//! component that exists (the kernel's view of the path), and the comparison is component-wise.
//! This is the only I/O of the module besides the kill-switch callback thread.

use super::{ValidationError, validate_identifier};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The reference's default base directory of session working directories.
pub const DEFAULT_BASE_PATH: &str = "/var/agt/sessions";

/// Isolation level (§2.10). Serialised `snapshot`, `read_committed`, `serializable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationLevel {
    /// Complete isolation (the default); grants are stored but ignored.
    #[default]
    Snapshot,
    /// Granted sessions' directories are readable.
    ReadCommitted,
    /// Causal ordering with vector clocks and intent locks; grants ignored.
    Serializable,
}

impl IsolationLevel {
    /// The wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationLevel::Snapshot => "snapshot",
            IsolationLevel::ReadCommitted => "read_committed",
            IsolationLevel::Serializable => "serializable",
        }
    }

    /// Parses the exact wire string.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [IsolationLevel::Snapshot, IsolationLevel::ReadCommitted, IsolationLevel::Serializable]
            .into_iter()
            .find(|l| l.as_str() == s)
    }

    /// Only SERIALIZABLE.
    #[must_use]
    pub fn requires_vector_clocks(self) -> bool {
        self == IsolationLevel::Serializable
    }

    /// All but SERIALIZABLE.
    #[must_use]
    pub fn allows_concurrent_writes(self) -> bool {
        self != IsolationLevel::Serializable
    }

    /// `low`, `medium`, `high`.
    #[must_use]
    pub fn coordination_cost(self) -> &'static str {
        match self {
            IsolationLevel::Snapshot => "low",
            IsolationLevel::ReadCommitted => "medium",
            IsolationLevel::Serializable => "high",
        }
    }
}

/// One session's scope (§2.10): its working directory is `base_path/session_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IsolationScope {
    /// Identifier-validated, so it cannot be absolute or contain `/` or `..`.
    pub session_id: String,
    /// The owning agent.
    pub agent_did: String,
    /// Absolute base directory.
    pub base_path: PathBuf,
    /// The level.
    pub isolation_level: IsolationLevel,
    /// Sessions whose directories are readable under READ_COMMITTED (identifier-validated).
    pub granted_sessions: BTreeSet<String>,
}

impl IsolationScope {
    /// A scope with no grants.
    ///
    /// # Errors
    /// [`ValidationError`] when `session_id` is not an identifier (so `/etc` or `../x` cannot
    /// escape the base) or `base_path` is not absolute.
    pub fn new(
        session_id: &str,
        agent_did: &str,
        base_path: impl Into<PathBuf>,
        isolation_level: IsolationLevel,
    ) -> Result<Self, ValidationError> {
        validate_identifier("session_id", session_id)?;
        let base_path = base_path.into();
        if !base_path.is_absolute() {
            return Err(ValidationError::Value(format!("base_path must be absolute, got {}", base_path.display())));
        }
        Ok(Self {
            session_id: session_id.into(),
            agent_did: agent_did.into(),
            base_path,
            isolation_level,
            granted_sessions: BTreeSet::new(),
        })
    }

    /// `base_path/session_id` (as written, not canonicalised).
    #[must_use]
    pub fn working_directory(&self) -> PathBuf {
        self.base_path.join(&self.session_id)
    }

    /// Whether `path` lies in this session's working directory or, under READ_COMMITTED only, in
    /// a granted session's directory. Both sides are [`canonicalize`]d and compared component by
    /// component, so `session-10` is not inside `session-1` and `session-1/../session-2` is
    /// `session-2`. Relative paths and paths that cannot be canonicalised are denied.
    #[must_use]
    pub fn is_path_allowed(&self, path: &Path) -> bool {
        let Ok(path) = canonicalize(path) else { return false };
        let inside = |dir: &Path| canonicalize(dir).is_ok_and(|d| path.starts_with(d));
        if inside(&self.working_directory()) {
            return true;
        }
        self.isolation_level == IsolationLevel::ReadCommitted
            && self.granted_sessions.iter().any(|g| inside(&self.base_path.join(g)))
    }

    /// Grants read access to `other_session_id` (stored at any level; effective only under
    /// READ_COMMITTED).
    ///
    /// # Errors
    /// When `other_session_id` is not an identifier.
    pub fn grant_access(&mut self, other_session_id: &str) -> Result<(), ValidationError> {
        validate_identifier("session_id", other_session_id)?;
        self.granted_sessions.insert(other_session_id.into());
        Ok(())
    }

    /// Removes a grant (unknown ids are a no-op).
    pub fn revoke_access(&mut self, other_session_id: &str) {
        self.granted_sessions.remove(other_session_id);
    }
}

/// Canonicalises an absolute path the way the kernel would resolve it, without requiring it to
/// exist: components are taken left to right; `.` is skipped; `..` goes to the parent of what has
/// been resolved so far (which is physical, because existing components are resolved); a name
/// that exists is resolved with [`std::fs::canonicalize`] (following symlinks); a name that does
/// not exist is appended as is.
///
/// # Errors
/// A relative path (`InvalidInput`); a dangling or looping symlink, or any error other than
/// "not found" while resolving (fail closed: the caller denies).
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    if !path.is_absolute() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "relative path"));
    }
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved = PathBuf::from(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                match std::fs::canonicalize(&candidate) {
                    Ok(real) => resolved = real,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        // A symlink whose target is missing would let a write land outside.
                        if std::fs::symlink_metadata(&candidate).is_ok() {
                            return Err(io::Error::other("dangling symlink"));
                        }
                        resolved = candidate;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(resolved)
}

/// The reference's `SessionIsolationManager` (§2.10): scopes by session id, under one base path.
#[derive(Debug, Clone)]
pub struct IsolationManager {
    base_path: PathBuf,
    scopes: std::collections::HashMap<String, IsolationScope>,
}

impl Default for IsolationManager {
    fn default() -> Self {
        Self::new(DEFAULT_BASE_PATH)
    }
}

impl IsolationManager {
    /// A manager whose scopes live under `base_path`.
    #[must_use]
    pub fn new(base_path: impl Into<PathBuf>) -> Self {
        Self { base_path: base_path.into(), scopes: std::collections::HashMap::new() }
    }

    /// Creates (or replaces, grants included) the scope of `session_id` under the manager's base.
    ///
    /// # Errors
    /// As [`IsolationScope::new`].
    pub fn create_scope(
        &mut self,
        session_id: &str,
        agent_did: &str,
        level: IsolationLevel,
    ) -> Result<&IsolationScope, ValidationError> {
        let scope = IsolationScope::new(session_id, agent_did, self.base_path.clone(), level)?;
        Ok(self.insert_scope(scope))
    }

    /// Stores a scope built elsewhere (e.g. with another base), replacing any for its session.
    pub fn insert_scope(&mut self, scope: IsolationScope) -> &IsolationScope {
        let id = scope.session_id.clone();
        self.scopes.insert(id.clone(), scope);
        &self.scopes[&id]
    }

    /// The scope of `session_id`.
    #[must_use]
    pub fn scope(&self, session_id: &str) -> Option<&IsolationScope> {
        self.scopes.get(session_id)
    }

    /// Whether `session_id` may access `path`; false without a scope (fail closed).
    #[must_use]
    pub fn check_access(&self, session_id: &str, path: &Path) -> bool {
        self.scopes.get(session_id).is_some_and(|s| s.is_path_allowed(path))
    }

    /// Grants `session_id` read access to `target`: false without a scope, at a level other than
    /// READ_COMMITTED, or for a `target` that is not an identifier.
    pub fn grant_cross_session_access(&mut self, session_id: &str, target: &str) -> bool {
        match self.scopes.get_mut(session_id) {
            Some(s) if s.isolation_level == IsolationLevel::ReadCommitted => s.grant_access(target).is_ok(),
            _ => false,
        }
    }

    /// Removes a scope (later checks are denied).
    pub fn remove_scope(&mut self, session_id: &str) {
        self.scopes.remove(session_id);
    }

    /// The number of scopes.
    #[must_use]
    pub fn active_sessions(&self) -> usize {
        self.scopes.len()
    }
}
