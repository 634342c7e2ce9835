//! Obscura's PIR client for web pages: `obscura-client`'s session compiled to WebAssembly with
//! wasm-bindgen, so a page looks up every scheme the native clients do, the same way: the
//! session accepts the setup (size limits, SHA-256 pin or ETag, revalidation of a cached copy),
//! makes each request and decodes each reply, and says when the setup must be fetched again.
//! The page's JavaScript (`js/obscura.js`) only carries bytes with `fetch` and keeps setups in
//! IndexedDB. Secrets come from the page's `crypto.getRandomValues`; the public matrix is
//! expanded from its seed as the native client does.

use obscura_client::setup::{sha256_of_etag, Cached, SetupPolicy, MAX_ERROR_BYTES};
use obscura_client::{setup, Ask, ClientError, Consistency, Outcome, Request, Session, Step};
use obscura_registry::Registry;
use wasm_bindgen::prelude::*;

/// A client error as the JavaScript error it throws.
fn js(error: ClientError) -> JsError {
    JsError::new(&error.to_string())
}

/// `value` as a whole number from 0 that JavaScript holds exactly, or an error naming `what`.
fn whole(value: f64, what: &str) -> Result<u64, JsError> {
    if value >= 0.0 && value.fract() == 0.0 && value < 2f64.powi(53) {
        Ok(value as u64)
    } else {
        Err(JsError::new(&format!(
            "the {what} must be a whole number from 0"
        )))
    }
}

/// 32 bytes as a hash, or an error naming `what`.
fn hash(bytes: &[u8], what: &str) -> Result<[u8; 32], JsError> {
    bytes
        .try_into()
        .map_err(|_| JsError::new(&format!("{what} is 32 bytes")))
}

/// The client of one database of a service: its setup accepted once, then one session for
/// every lookup.
#[wasm_bindgen]
pub struct Client {
    name: String,
    policy: SetupPolicy,
    session: Option<Session>,
    patched: Option<Vec<u8>>,
}

#[wasm_bindgen]
impl Client {
    /// A client of database `name`, whose setup must have SHA-256 `sha256` (hex) when given
    /// (else its ETag is checked) and at most `max_setup_bytes` bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(
        name: &str,
        sha256: Option<String>,
        max_setup_bytes: f64,
    ) -> Result<Client, JsError> {
        let pin = sha256
            .map(|text| {
                sha256_of_etag(&text).ok_or_else(|| JsError::new("sha256 is 64 hexadecimal digits"))
            })
            .transpose()?;
        Ok(Self {
            name: name.to_string(),
            policy: SetupPolicy {
                pin,
                max_setup_bytes: whole(max_setup_bytes, "maxSetupBytes")?,
                ..SetupPolicy::default()
            },
            session: None,
            patched: None,
        })
    }

    /// The largest setup accepted, in bytes.
    #[wasm_bindgen(getter, js_name = maxSetupBytes)]
    pub fn max_setup_bytes(&self) -> f64 {
        self.policy.max_setup_bytes as f64
    }

    /// The `If-None-Match` to send for a cached setup of SHA-256 `cached_sha256` (hex), or
    /// `undefined` when that copy may not be offered (it is not the pinned one).
    pub fn revalidation(&self, cached_sha256: Option<String>) -> Option<String> {
        let sha256 = sha256_of_etag(&cached_sha256?)?;
        let offered = Cached {
            sha256,
            bytes: Vec::new(),
        };
        self.policy
            .usable(Some(offered))
            .map(|cached| setup::etag_of(&cached.sha256))
    }

    /// The `A-IM` to send beside a revalidation: the client applies the patches from the
    /// cached setup to the current one when the service keeps them (it answers `226`).
    #[wasm_bindgen(getter, js_name = patchIm)]
    pub fn patch_im(&self) -> String {
        setup::PATCH_IM.to_string()
    }

    /// Takes the service's reply to the setup request of `url`: its `status`, `etag` and
    /// `body` (the setup; empty for a 304; the patches from the cached setup for a 226; the
    /// reason for an error), and the cached copy offered with `revalidation`, if any. Refuses
    /// what the policy refuses (a 226 whose patches do not make the setup the ETag names
    /// included: fetch the setup again without offering the cached copy); returns whether
    /// the setup is new, so that a cache should keep it: the body, or for a 226 the patched
    /// setup ([`Client::take_patched_setup`]).
    #[wasm_bindgen(js_name = acceptSetup)]
    pub fn accept_setup(
        &mut self,
        url: &str,
        status: u16,
        etag: Option<String>,
        body: Vec<u8>,
        cached: Option<Vec<u8>>,
    ) -> Result<bool, JsError> {
        if status >= 400 {
            return Err(js(refusal(url, status, &body)));
        }
        let cached = cached.map(|bytes| Cached {
            sha256: obscura_registry::setup_sha256(&bytes),
            bytes,
        });
        let accepted = self
            .policy
            .accept(
                url,
                status,
                etag.as_deref(),
                body,
                self.policy.usable(cached),
            )
            .map_err(js)?;
        let session = Session::new(
            &self.name,
            &accepted.bytes,
            accepted.sha256,
            accepted.from_cache,
            &self.policy,
            &Registry::default(),
        )
        .map_err(js)?;
        self.session = Some(session);
        self.patched = accepted.patch_bytes.map(|_| accepted.bytes);
        Ok(!accepted.from_cache)
    }

    /// The setup the last accepted reply's patches made (a 226), taken out of the client for
    /// the cache; `undefined` when the reply was no patch.
    #[wasm_bindgen(js_name = takePatchedSetup)]
    pub fn take_patched_setup(&mut self) -> Option<Vec<u8>> {
        self.patched.take()
    }

    fn session(&self) -> Result<&Session, JsError> {
        self.session
            .as_ref()
            .ok_or_else(|| JsError::new("no setup was accepted yet"))
    }

    fn session_mut(&mut self) -> Result<&mut Session, JsError> {
        self.session
            .as_mut()
            .ok_or_else(|| JsError::new("no setup was accepted yet"))
    }

    /// The lookup the database serves: `"index"`, `"batch"`, `"keyword"` or `"audit-path"`.
    #[wasm_bindgen(getter)]
    pub fn lookup(&self) -> Result<String, JsError> {
        Ok(self.session()?.lookup().name().into())
    }

    /// Records (index databases), keys (keyword databases) or leaves (Merkle trees).
    #[wasm_bindgen(getter)]
    pub fn items(&self) -> Result<f64, JsError> {
        Ok(self.session()?.listing().items as f64)
    }

    /// The root of a Merkle tree (32 bytes); `undefined` for other databases.
    #[wasm_bindgen(getter)]
    pub fn root(&self) -> Result<Option<Vec<u8>>, JsError> {
        Ok(self.session()?.listing().root.map(|root| root.to_vec()))
    }

    /// Bytes of the setup.
    #[wasm_bindgen(getter, js_name = setupBytes)]
    pub fn setup_bytes(&self) -> Result<f64, JsError> {
        Ok(self.session()?.setup_bytes() as f64)
    }

    /// The setup's SHA-256, in hex.
    #[wasm_bindgen(getter, js_name = setupSha256)]
    pub fn setup_sha256(&self) -> Result<String, JsError> {
        Ok(hex::encode(self.session()?.setup_sha256()))
    }

    /// Whether the setup is the cached copy, confirmed by the service.
    #[wasm_bindgen(getter, js_name = fromCache)]
    pub fn from_cache(&self) -> Result<bool, JsError> {
        Ok(self.session()?.from_cache())
    }

    /// Starts a lookup of record `index` of an index database.
    pub fn get(&mut self, index: f64) -> Result<Exchange, JsError> {
        let ask = Ask::Record(whole(index, "index")?);
        self.begin(ask)
    }

    /// Starts a lookup of the value under `key` (bytes) of a keyword database.
    #[wasm_bindgen(js_name = getKey)]
    pub fn get_key(&mut self, key: &[u8]) -> Result<Exchange, JsError> {
        self.begin(Ask::Value(key.to_vec()))
    }

    /// Starts a lookup of the audit path of `leaf` of a Merkle tree, verified against its root
    /// (and `root`, 32 bytes, when given); without `leaf_hash` (32 bytes) the leaf's hash is
    /// fetched privately first, in a request of its own.
    #[wasm_bindgen(js_name = auditPath)]
    pub fn audit_path(
        &mut self,
        leaf: f64,
        leaf_hash: Option<Vec<u8>>,
        root: Option<Vec<u8>>,
    ) -> Result<Exchange, JsError> {
        let ask = Ask::AuditPath {
            leaf: whole(leaf, "leaf")?,
            leaf_hash: leaf_hash.map(|h| hash(&h, "a leaf hash")).transpose()?,
            root: root.map(|h| hash(&h, "a root")).transpose()?,
        };
        self.begin(ask)
    }

    /// Checks the consistency proof the service sent (`GET …/consistency?first=M`: the served
    /// tree's `second` leaves and `root`, 32 bytes, and the proof's hashes end to end) that the
    /// tree of `first` leaves with head `first_root` is a prefix of this client's tree: `false`
    /// when the proof goes to another tree (the service's has grown since the setup was
    /// accepted: fetch it again and ask again); throws when the proof fails.
    #[wasm_bindgen(js_name = checkConsistency)]
    pub fn check_consistency(
        &self,
        first: f64,
        first_root: &[u8],
        second: f64,
        root: &[u8],
        proof: &[u8],
    ) -> Result<bool, JsError> {
        if !proof.len().is_multiple_of(32) {
            return Err(JsError::new("a proof is 32-byte hashes"));
        }
        let proved = Consistency {
            first: whole(first, "first size")?,
            second: whole(second, "second size")?,
            root: hash(root, "a root")?,
            proof: proof
                .chunks_exact(32)
                .map(|h| h.try_into().expect("32 bytes"))
                .collect(),
        };
        self.session()?
            .check_consistency(&proved, &hash(first_root, "the first root")?)
            .map_err(js)
    }

    fn begin(&mut self, ask: Ask) -> Result<Exchange, JsError> {
        let (inner, request) = self.session_mut()?.begin(ask).map_err(js)?;
        Ok(Exchange {
            inner,
            step: Step::Send(request),
        })
    }

    /// Hands `exchange` the service's reply to its request (posted to `url`): its `status`
    /// and `body` (the answer, or the reason for an error). The exchange's next step follows;
    /// a refusal other than a first 409 is thrown.
    pub fn receive(
        &mut self,
        exchange: &mut Exchange,
        url: &str,
        status: u16,
        body: &[u8],
    ) -> Result<(), JsError> {
        let reply = if (200..300).contains(&status) {
            Ok(body)
        } else {
            Err(refusal(url, status, body))
        };
        exchange.step = self
            .session_mut()?
            .receive(&mut exchange.inner, reply)
            .map_err(js)?;
        Ok(())
    }

    /// Starts `exchange` again, once the setup was fetched anew after its `"refresh"` step.
    pub fn restart(&mut self, exchange: &mut Exchange) -> Result<(), JsError> {
        let request = self
            .session_mut()?
            .restart(&mut exchange.inner)
            .map_err(js)?;
        exchange.step = Step::Send(request);
        Ok(())
    }
}

/// The error for a reply of status `status` whose body is `body`.
fn refusal(url: &str, status: u16, body: &[u8]) -> ClientError {
    let cut = body.len() as u64 > MAX_ERROR_BYTES;
    let shown = &body[..body.len().min(MAX_ERROR_BYTES as usize)];
    setup::refusal(url, status, shown, cut)
}

/// One lookup in progress: its next step, or what it found.
#[wasm_bindgen]
pub struct Exchange {
    inner: obscura_client::Exchange,
    step: Step,
}

#[wasm_bindgen]
impl Exchange {
    /// What to do next: `"send"` (post `body` to the database's `route`), `"refresh"` (fetch
    /// the setup again, then `restart`) or `"done"`.
    #[wasm_bindgen(getter)]
    pub fn state(&self) -> String {
        match self.step {
            Step::Send(_) => "send",
            Step::Refresh => "refresh",
            Step::Done(_) => "done",
        }
        .into()
    }

    fn request(&self) -> Option<&Request> {
        match &self.step {
            Step::Send(request) => Some(request),
            _ => None,
        }
    }

    /// The route to post to (`/v1/databases/{name}/{route}`), in the `"send"` state.
    #[wasm_bindgen(getter)]
    pub fn route(&self) -> Option<String> {
        self.request().map(|request| request.route.into())
    }

    /// The request's body, in the `"send"` state.
    #[wasm_bindgen(getter)]
    pub fn body(&self) -> Option<Vec<u8>> {
        self.request().map(|request| request.body.clone())
    }

    /// Requests made so far.
    #[wasm_bindgen(getter)]
    pub fn requests(&self) -> f64 {
        self.inner.requests() as f64
    }

    fn outcome(&self) -> Option<&Outcome> {
        match &self.step {
            Step::Done(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// Whether the lookup found something: `false` for a key that is absent or a record that
    /// was deleted.
    #[wasm_bindgen(getter)]
    pub fn found(&self) -> bool {
        !matches!(
            self.outcome(),
            Some(Outcome::Value(None) | Outcome::Absent) | None
        )
    }

    /// The record or value found, in the `"done"` state; `undefined` for an absent key or a
    /// deleted record.
    #[wasm_bindgen(getter)]
    pub fn value(&self) -> Option<Vec<u8>> {
        match self.outcome()? {
            Outcome::Record(record) => Some(record.clone()),
            Outcome::Value(value) => value.clone(),
            Outcome::Absent => None,
            Outcome::Records(records) => Some(records.concat()),
            Outcome::AuditPath(path) => Some(path.path.concat()),
        }
    }

    /// The leaf hash of an audit path, once known: given, or fetched (proved once the path
    /// verifies with it, in the `"done"` state).
    #[wasm_bindgen(getter, js_name = leafHash)]
    pub fn leaf_hash(&self) -> Option<Vec<u8>> {
        self.inner.leaf_hash().map(|hash| hash.to_vec())
    }
}
