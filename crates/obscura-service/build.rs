//! Embeds the browser client's package (built by `scripts/build-wasm`) in the service, for the
//! page of `obscura serve --ui`, when `OBSCURA_WASM_PKG` names its folder at build time.
//! Without it the service is built without the page's client, and `--ui` says how to get it.

use std::path::PathBuf;
use std::{env, fs};

/// The package's files the page loads.
const FILES: [&str; 3] = ["obscura.js", "obscura_wasm.js", "obscura_wasm_bg.wasm"];

fn main() {
    println!("cargo::rerun-if-env-changed=OBSCURA_WASM_PKG");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let package = env::var_os("OBSCURA_WASM_PKG").filter(|p| !p.is_empty());
    let code = match package {
        None => "const CLIENT_PACKAGE: Option<[(&str, &[u8]); 3]> = None;\n".to_string(),
        Some(folder) => {
            let folder = fs::canonicalize(&folder).unwrap_or_else(|e| {
                panic!(
                    "OBSCURA_WASM_PKG={}: {e} (run scripts/build-wasm)",
                    folder.display()
                )
            });
            let mut files = String::new();
            for name in FILES {
                let path = folder.join(name);
                assert!(
                    path.is_file(),
                    "OBSCURA_WASM_PKG: no {} (run scripts/build-wasm)",
                    path.display()
                );
                println!("cargo::rerun-if-changed={}", path.display());
                files += &format!(
                    "({name:?}, include_bytes!({:?})), ",
                    path.display().to_string()
                );
            }
            format!("const CLIENT_PACKAGE: Option<[(&str, &[u8]); 3]> = Some([{files}]);\n")
        }
    };
    fs::write(out.join("client_package.rs"), code).expect("cannot write to OUT_DIR");
}
