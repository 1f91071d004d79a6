//! Per-session path isolation (agent-hypervisor.md §2.10; spec §11, §20.5).
//!
//! Unlike the reference (a raw string prefix over a lexically normalised path that keeps `..`),
//! a path is canonicalised first: `.` and `..` are resolved, symlinks are resolved for every
//! component that exists (the kernel's view of the path), and the comparison is component-wise.
//! Resolving a path reads the filesystem: the caller passes the resolver ([`Resolve`]; `warrant
//! eval`'s is `warrant::eval::rings::canonicalize`), so this module itself does no I/O.

use super::{ValidationError, validate_identifier};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

/// Resolves an absolute path to the path the kernel would open, without requiring it to exist;
/// an error (a relative path, a dangling or looping symlink) denies. The caller's I/O.
pub type Resolve<'a> = &'a dyn Fn(&Path) -> io::Result<PathBuf>;

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
    /// a granted session's directory. Both sides are resolved by `resolve` and compared component
    /// by component, so `session-10` is not inside `session-1` and `session-1/../session-2` is
    /// `session-2`. Paths `resolve` refuses (relative ones, dangling symlinks) are denied.
    #[must_use]
    pub fn is_path_allowed(&self, path: &Path, resolve: Resolve<'_>) -> bool {
        let Ok(path) = resolve(path) else { return false };
        let inside = |dir: &Path| resolve(dir).is_ok_and(|d| path.starts_with(d));
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

    /// Whether `session_id` may access `path` (resolved by `resolve`); false without a scope
    /// (fail closed).
    #[must_use]
    pub fn check_access(&self, session_id: &str, path: &Path, resolve: Resolve<'_>) -> bool {
        self.scopes.get(session_id).is_some_and(|s| s.is_path_allowed(path, resolve))
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
