//! Obscura's PIR client for web pages: the client side of the index schemes (the LWE engine in
//! both layouts, DoublePIR, YPIR), of keyword PIR and of Merkle audit paths (TreePIR), compiled to WebAssembly with
//! wasm-bindgen. Secrets come from the page's `crypto.getRandomValues`; the public matrix is
//! expanded from its seed as the native client does. The page's JavaScript fetches the public
//! setup and carries each query's bytes to `obscura serve` and the answer's bytes back:
//!
//! ```js
//! const reply = await fetch(`${url}/v1/databases/phones/setup`);
//! const setup = new Uint8Array(await reply.arrayBuffer());
//! const client = new PirClient(setup, reply.headers.get("ETag")); // its SHA-256, checked
//! const query = client.queryKey(new TextEncoder().encode("+15550013"));
//! const answer = await fetch(`${url}/v1/databases/phones/query`, { method: "POST", body: query.bytes });
//! const value = query.decode(new Uint8Array(await answer.arrayBuffer())); // undefined: absent
//! ```

pub mod lookup;

use wasm_bindgen::prelude::*;

use lookup::{LookupError, Pending, Setup};

impl From<LookupError> for JsError {
    fn from(error: LookupError) -> Self {
        JsError::new(&error.to_string())
    }
}

/// A client of one database, from its public setup.
#[wasm_bindgen]
pub struct PirClient {
    setup: Setup,
}

#[wasm_bindgen]
impl PirClient {
    /// A client of the database whose public setup (as `obscura serve` sends it) is `setup`,
    /// whose SHA-256 must be `sha256` (hex: the reply's `ETag`, or a hash pinned out of band).
    #[wasm_bindgen(constructor)]
    pub fn new(setup: &[u8], sha256: &str) -> Result<PirClient, JsError> {
        Ok(Self {
            setup: Setup::from_verified(setup, sha256)?,
        })
    }

    /// The lookup the database serves: `"index"`, `"keyword"` or `"merkle"`.
    #[wasm_bindgen(getter)]
    pub fn lookup(&self) -> String {
        self.setup.lookup().into()
    }

    /// Records (index databases), keys (keyword databases) or leaves (Merkle trees).
    #[wasm_bindgen(getter)]
    pub fn items(&self) -> f64 {
        self.setup.items() as f64
    }

    /// The root of a Merkle tree (32 bytes), which every audit path is verified against;
    /// `undefined` for other databases.
    #[wasm_bindgen(getter)]
    pub fn root(&self) -> Option<Vec<u8>> {
        self.setup.root().map(|root| root.to_vec())
    }

    /// A query for record `index` of an index database.
    #[wasm_bindgen(js_name = queryIndex)]
    pub fn query_index(&self, index: f64) -> Result<Query, JsError> {
        Ok(Query(self.setup.query_index(whole(index, "index")?)?))
    }

    /// A request for the audit path of leaf `leaf` of a Merkle tree whose hash is `leaf_hash`
    /// (32 bytes); it decodes to the path's hashes, leaf to root, one after the other, verified
    /// against the root.
    #[wasm_bindgen(js_name = queryAuditPath)]
    pub fn query_audit_path(&self, leaf: f64, leaf_hash: &[u8]) -> Result<Query, JsError> {
        let hash = leaf_hash
            .try_into()
            .map_err(|_| JsError::new("a leaf hash is 32 bytes"))?;
        Ok(Query(
            self.setup.query_audit_path(whole(leaf, "leaf")?, hash)?,
        ))
    }

    /// A request for the hash of leaf `leaf` of a Merkle tree, for a page that knows only its
    /// index (the hash is proved when its audit path verifies with it).
    #[wasm_bindgen(js_name = queryLeafHash)]
    pub fn query_leaf_hash(&self, leaf: f64) -> Result<Query, JsError> {
        Ok(Query(self.setup.query_leaf_hash(whole(leaf, "leaf")?)?))
    }

    /// A query for the value under `key` (bytes) in a keyword database.
    #[wasm_bindgen(js_name = queryKey)]
    pub fn query_key(&self, key: &[u8]) -> Result<Query, JsError> {
        Ok(Query(self.setup.query_key(key)?))
    }
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

/// A query, and the secret state that decodes its answer (once).
#[wasm_bindgen]
pub struct Query(Pending);

#[wasm_bindgen]
impl Query {
    /// The encoded query: the body of a POST to the database's `/query` route.
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> Vec<u8> {
        self.0.query.clone()
    }

    /// Bytes of the answer (what to expect from the server).
    #[wasm_bindgen(getter, js_name = answerBytes)]
    pub fn answer_bytes(&self) -> f64 {
        self.0.answer_bytes as f64
    }

    /// The record or value that `answer` (the server's reply) carries; `undefined` for a key
    /// that is not in the database.
    pub fn decode(&mut self, answer: &[u8]) -> Result<Option<Vec<u8>>, JsError> {
        Ok(self.0.decode(answer)?)
    }
}
