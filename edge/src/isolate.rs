//! What one isolate keeps between requests: the validated configuration and the signer.
//!
//! Reading and validating the configuration (a dozen variables, a digest per webhook
//! credential, decoded signing secrets) and deriving the signing key would otherwise happen on
//! every delivery. The Workers runtime hands an isolate the same `env` object for every
//! request until the Worker's configuration changes; a changed variable or secret comes with a
//! new `env` object (a new version runs in new isolates). So the cache is keyed by the `env`
//! object itself: a different one is read afresh, and a changed secret is always picked up.

use std::cell::RefCell;
use std::rc::Rc;

use shared::config::ConfigError;
use worker::wasm_bindgen::JsValue;
use worker::{js_sys, Env};

use crate::config::Config;
use crate::sigv4::Signer;

/// A configuration that validated, and the signer for its store.
pub struct Ready {
    /// The validated configuration.
    pub config: Config,
    /// Signs requests to `config.endpoint` with `config.credentials`.
    pub signer: Signer,
}

/// The configuration as loaded from one `env`: ready, or the first variable that is wrong.
pub type Loaded = Result<Rc<Ready>, ConfigError>;

thread_local! {
    /// The `env` object last read, and what it held.
    static CACHE: RefCell<Option<(JsValue, Loaded)>> = const { RefCell::new(None) };
}

/// The configuration for `env`: cached when `env` is the object read last, read otherwise.
pub fn load(env: &Env) -> Loaded {
    let key: &JsValue = env.as_ref();
    CACHE.with(|cache| {
        if let Some((cached, loaded)) = cache.borrow().as_ref() {
            if cached == key {
                return loaded.clone();
            }
        }
        let loaded = read(env);
        *cache.borrow_mut() = Some((key.clone(), loaded.clone()));
        loaded
    })
}

/// Reads and validates every variable of `env`.
fn read(env: &Env) -> Loaded {
    let config = Config::load(|name| js_sys::Reflect::get(env.as_ref(), &name.into()).ok()?.as_string())?;
    let signer = Signer::new(&config.endpoint, &config.region, config.credentials.clone());
    Ok(Rc::new(Ready { config, signer }))
}
