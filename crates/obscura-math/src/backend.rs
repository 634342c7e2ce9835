//! The one place that decides which vector unit every kernel of Obscura's crates runs on.
//!
//! Following curve25519-dalek's `backend` model, the CPU is read once ([`Cpu`]) and one
//! [`Backend`] is selected for the process: the fastest this CPU has, or the one named by the
//! environment variable [`BACKEND_VARIABLE`] (`OBSCURA_BACKEND=portable|avx2|avx512`). Kernels
//! never detect features themselves: they match on [`Backend::selected`] and ask it for the
//! fine-grained tokens they need ([`Backend::avx2`], [`Backend::avx512`], [`Backend::vnni`],
//! [`Backend::ifma`], [`Backend::clmul`]). A token is a value only this module makes, after
//! detection, so an unsafe call into code compiled for a feature rests on holding its token (none
//! can exist off x86-64). Forcing a lower backend therefore turns off every kernel above it,
//! ECDH-PSI's multi-buffer kernel and RR22's carry-less multiply included.
//!
//! Third-party crates choose for themselves: curve25519-dalek picks its AVX2 or AVX-512 IFMA
//! field backend at run time, `aes` uses AES-NI and `sha2` the SHA extensions where the CPU has
//! them; `OBSCURA_BACKEND` does not reach them.

use std::fmt;
use std::sync::OnceLock;

/// The environment variable that forces a backend: `portable`, `avx2` or `avx512`.
pub const BACKEND_VARIABLE: &str = "OBSCURA_BACKEND";

/// A backend by name, without the proof that this CPU runs it (what [`BACKEND_VARIABLE`]
/// names), slowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Plain Rust; runs everywhere (wasm included).
    Portable,
    /// x86-64 AVX2 (with PCLMULQDQ where the CPU has it).
    Avx2,
    /// x86-64 AVX-512 F, BW, DQ and VL, with whichever of VNNI and IFMA the CPU has.
    Avx512,
}

impl Level {
    /// Every level, slowest first.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    /// The level's name, as [`BACKEND_VARIABLE`] spells it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.name() == name)
    }
}

/// The CPU features the kernels use, read once per process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    avx2: bool,
    avx512f: bool,
    avx512bw: bool,
    avx512dq: bool,
    avx512vl: bool,
    vnni: bool,
    ifma: bool,
    clmul: bool,
}

impl Cpu {
    /// This CPU's features, detected on the first call.
    pub fn detect() -> Cpu {
        static DETECTED: OnceLock<Cpu> = OnceLock::new();
        *DETECTED.get_or_init(Self::read)
    }

    #[cfg(target_arch = "x86_64")]
    fn read() -> Cpu {
        use std::arch::is_x86_feature_detected as has;
        Cpu {
            avx2: has!("avx2"),
            avx512f: has!("avx512f"),
            avx512bw: has!("avx512bw"),
            avx512dq: has!("avx512dq"),
            avx512vl: has!("avx512vl"),
            vnni: has!("avx512vnni"),
            ifma: has!("avx512ifma"),
            clmul: has!("pclmulqdq") && has!("sse4.1"),
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn read() -> Cpu {
        Cpu::default()
    }

    /// The features `level` needs that this CPU lacks (empty if it runs `level`).
    pub fn missing(&self, level: Level) -> Vec<&'static str> {
        let needed: &[(bool, &'static str)] = match level {
            Level::Portable => &[],
            Level::Avx2 => &[(self.avx2, "avx2")],
            Level::Avx512 => &[
                (self.avx2, "avx2"),
                (self.avx512f, "avx512f"),
                (self.avx512bw, "avx512bw"),
                (self.avx512dq, "avx512dq"),
                (self.avx512vl, "avx512vl"),
            ],
        };
        needed
            .iter()
            .filter(|(has, _)| !has)
            .map(|&(_, name)| name)
            .collect()
    }

    /// Whether this CPU runs `level`.
    pub fn runs(&self, level: Level) -> bool {
        self.missing(level).is_empty()
    }

    /// The fastest level this CPU runs.
    pub fn fastest(&self) -> Level {
        Level::ALL
            .into_iter()
            .rev()
            .find(|&level| self.runs(level))
            .unwrap_or(Level::Portable)
    }

    /// The level to run: the one `requested` names (the value of [`BACKEND_VARIABLE`]; unset or
    /// empty asks for the fastest), refused if this CPU lacks its features or no level has
    /// that name.
    pub fn choose(&self, requested: Option<&str>) -> Result<Level, BackendError> {
        let Some(name) = requested.filter(|name| !name.is_empty()) else {
            return Ok(self.fastest());
        };
        let level = Level::from_name(name).ok_or_else(|| BackendError::Unknown {
            name: name.to_owned(),
        })?;
        let missing = self.missing(level);
        if missing.is_empty() {
            Ok(level)
        } else {
            Err(BackendError::Absent { level, missing })
        }
    }
}

/// Why the backend [`BACKEND_VARIABLE`] names cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendError {
    /// The value names no backend.
    Unknown {
        /// The value given.
        name: String,
    },
    /// This CPU lacks features the backend needs.
    Absent {
        /// The backend asked for.
        level: Level,
        /// The features this CPU lacks.
        missing: Vec<&'static str>,
    },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Unknown { name } => write!(
                f,
                "{BACKEND_VARIABLE}={name:?} names no backend: expected portable, avx2 or avx512"
            ),
            BackendError::Absent { level, missing } => write!(
                f,
                "{BACKEND_VARIABLE}={} asks for features this CPU lacks: {}",
                level.name(),
                missing.join(", ")
            ),
        }
    }
}

impl std::error::Error for BackendError {}

/// The vector unit the kernels run on, holding the proof that this CPU has it: only
/// [`Backend::select`], [`Backend::selected`] and [`Backend::available`] make one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Plain Rust; runs everywhere.
    Portable,
    /// x86-64 AVX2.
    Avx2(Avx2Token),
    /// x86-64 AVX-512 F, BW, DQ and VL.
    Avx512(Avx512Token),
}

impl Backend {
    /// The process's backend, chosen on the first call: [`BACKEND_VARIABLE`] if set, else the
    /// fastest this CPU runs. Front ends call this at start-up to refuse a bad value before any
    /// work.
    pub fn select() -> Result<Backend, BackendError> {
        static SELECTED: OnceLock<Result<Backend, BackendError>> = OnceLock::new();
        SELECTED
            .get_or_init(|| {
                let requested = std::env::var_os(BACKEND_VARIABLE)
                    .map(|value| value.to_string_lossy().into_owned());
                let level = Cpu::detect().choose(requested.as_deref())?;
                Ok(Self::at(level).expect("the chosen level runs on this CPU"))
            })
            .clone()
    }

    /// The process's backend ([`Backend::select`]).
    ///
    /// # Panics
    /// If [`BACKEND_VARIABLE`] names no backend, or one this CPU cannot run: the message says
    /// which. Front ends check [`Backend::select`] first and report it as an error.
    pub fn selected() -> Backend {
        Self::select().unwrap_or_else(|error| panic!("{error}"))
    }

    /// Every backend this CPU runs up to the selected one, slowest first: what tests hold to the
    /// portable reference (so forcing `portable` runs the reference alone).
    pub fn available() -> Vec<Backend> {
        let selected = Self::selected().level();
        Level::ALL
            .into_iter()
            .filter(|&level| level <= selected)
            .filter_map(Self::at)
            .collect()
    }

    /// The backend at `level`, if this CPU runs it.
    fn at(level: Level) -> Option<Backend> {
        let cpu = Cpu::detect();
        if !cpu.runs(level) {
            return None;
        }
        Some(match level {
            Level::Portable => Backend::Portable,
            Level::Avx2 => Backend::Avx2(Avx2Token(PROOF?)),
            Level::Avx512 => Backend::Avx512(Avx512Token(PROOF?)),
        })
    }

    /// The backend's level.
    pub fn level(self) -> Level {
        match self {
            Backend::Portable => Level::Portable,
            Backend::Avx2(_) => Level::Avx2,
            Backend::Avx512(_) => Level::Avx512,
        }
    }

    /// The backend's name, as [`BACKEND_VARIABLE`] spells it.
    pub fn name(self) -> &'static str {
        self.level().name()
    }

    /// AVX2, on the AVX2 and AVX-512 backends (every AVX-512 CPU has it).
    #[cfg_attr(not(target_arch = "x86_64"), allow(unreachable_code))]
    pub fn avx2(self) -> Option<Avx2Token> {
        match self {
            Backend::Portable => None,
            Backend::Avx2(token) => Some(token),
            Backend::Avx512(token) => Some(token.avx2()),
        }
    }

    /// AVX-512 F, BW, DQ and VL, on the AVX-512 backend.
    pub fn avx512(self) -> Option<Avx512Token> {
        match self {
            Backend::Avx512(token) => Some(token),
            _ => None,
        }
    }

    /// AVX-512 VNNI (byte dot products), on the AVX-512 backend of a CPU that has it.
    pub fn vnni(self) -> Option<VnniToken> {
        let token = self.avx512()?;
        Cpu::detect().vnni.then_some(VnniToken(token.0))
    }

    /// AVX-512 IFMA (52-bit multiply-add), on the AVX-512 backend of a CPU that has it.
    pub fn ifma(self) -> Option<IfmaToken> {
        let token = self.avx512()?;
        Cpu::detect().ifma.then_some(IfmaToken(token.0))
    }

    /// PCLMULQDQ and SSE4.1 (carry-less multiply), on the AVX2 and AVX-512 backends of a CPU
    /// that has them.
    pub fn clmul(self) -> Option<ClmulToken> {
        let token = self.avx2()?;
        Cpu::detect().clmul.then_some(ClmulToken(token.0))
    }
}

/// Runs a body written once, compiled for a [`Backend`]'s vector unit: the body becomes a
/// function generated with the backend's features (AVX2, or AVX-512 F, BW, DQ and VL) into
/// which the `#[inline(always)]` helpers it calls are inlined, so plain Rust loops
/// auto-vectorize for that unit; the portable backend runs it at the crate's baseline. The body
/// cannot capture its surroundings: it names its parameters, each with the value it takes.
///
/// ```ignore
/// vectorized!(backend, fn(ring: &Ring = ring, data: &mut [u32] = data) {
///     forward_inline(ring, data)
/// })
/// ```
macro_rules! vectorized {
    ($backend:expr, fn($($arg:ident: $ty:ty = $value:expr),* $(,)?) $(-> $ret:ty)? $body:block) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        fn on_avx2($($arg: $ty),*) $(-> $ret)? $body
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
        fn on_avx512($($arg: $ty),*) $(-> $ret)? $body
        fn on_portable($($arg: $ty),*) $(-> $ret)? $body
        match $backend {
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            // SAFETY: the backend's token proves AVX2, the one feature `on_avx2` enables.
            $crate::backend::Backend::Avx2(_) => unsafe { on_avx2($($value),*) },
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            // SAFETY: the backend's token proves every feature `on_avx512` enables.
            $crate::backend::Backend::Avx512(_) => unsafe { on_avx512($($value),*) },
            _ => on_portable($($value),*),
        }
    }};
}
pub(crate) use vectorized;

/// Proof that this CPU has AVX2: only the [`Backend`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2Token(Proof);

/// Proof that this CPU has AVX2 and AVX-512 F, BW, DQ and VL: only the [`Backend`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx512Token(Proof);

impl Avx512Token {
    /// AVX2, which every CPU with AVX-512 has (and the token's detection checked).
    pub fn avx2(self) -> Avx2Token {
        Avx2Token(self.0)
    }
}

/// Proof that this CPU has what an [`Avx512Token`] proves and AVX-512 VNNI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VnniToken(Proof);

impl VnniToken {
    /// The AVX-512 features underneath.
    pub fn avx512(self) -> Avx512Token {
        Avx512Token(self.0)
    }
}

/// Proof that this CPU has what an [`Avx512Token`] proves and AVX-512 IFMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IfmaToken(Proof);

/// Proof that this CPU has AVX2, PCLMULQDQ and SSE4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClmulToken(Proof);

/// What a token holds: nothing on x86-64, and a type with no values elsewhere, so no token can
/// exist off x86-64.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Proof;
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proof {}

/// The proof's value where one can exist.
#[cfg(target_arch = "x86_64")]
const PROOF: Option<Proof> = Some(Proof);
#[cfg(not(target_arch = "x86_64"))]
const PROOF: Option<Proof> = None;

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(features: &[&str]) -> Cpu {
        let has = |name| features.contains(&name);
        Cpu {
            avx2: has("avx2"),
            avx512f: has("avx512f"),
            avx512bw: has("avx512bw"),
            avx512dq: has("avx512dq"),
            avx512vl: has("avx512vl"),
            vnni: has("avx512vnni"),
            ifma: has("avx512ifma"),
            clmul: has("pclmulqdq"),
        }
    }

    const AVX512: &[&str] = &["avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl"];

    #[test]
    fn unset_or_empty_picks_the_fastest_level_the_cpu_runs() {
        assert_eq!(cpu(&[]).choose(None), Ok(Level::Portable));
        assert_eq!(cpu(&["avx2"]).choose(Some("")), Ok(Level::Avx2));
        assert_eq!(cpu(AVX512).choose(None), Ok(Level::Avx512));
        // AVX-512 F alone (no BW or VL) is not the AVX-512 backend.
        assert_eq!(cpu(&["avx2", "avx512f"]).choose(None), Ok(Level::Avx2));
    }

    #[test]
    fn a_named_level_is_run_only_where_the_cpu_has_it() {
        assert_eq!(cpu(AVX512).choose(Some("portable")), Ok(Level::Portable));
        assert_eq!(cpu(AVX512).choose(Some("avx2")), Ok(Level::Avx2));
        assert_eq!(cpu(AVX512).choose(Some("avx512")), Ok(Level::Avx512));
        let error = cpu(&["avx2", "avx512f"])
            .choose(Some("avx512"))
            .unwrap_err();
        assert_eq!(
            error,
            BackendError::Absent {
                level: Level::Avx512,
                missing: vec!["avx512bw", "avx512dq", "avx512vl"]
            }
        );
        assert_eq!(
            error.to_string(),
            "OBSCURA_BACKEND=avx512 asks for features this CPU lacks: avx512bw, avx512dq, avx512vl"
        );
        assert!(cpu(&[]).choose(Some("avx2")).is_err());
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_names_there_are() {
        let error = cpu(AVX512).choose(Some("AVX512")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "OBSCURA_BACKEND=\"AVX512\" names no backend: expected portable, avx2 or avx512"
        );
    }

    #[test]
    fn the_selected_backend_is_the_last_available_and_its_tokens_follow_its_level() {
        let selected = Backend::selected();
        let available = Backend::available();
        assert_eq!(available.first(), Some(&Backend::Portable));
        assert_eq!(available.last(), Some(&selected));
        assert_eq!(
            available.iter().map(|b| b.level()).collect::<Vec<_>>(),
            Level::ALL
                .into_iter()
                .filter(|&l| l <= selected.level() && Cpu::detect().runs(l))
                .collect::<Vec<_>>()
        );
        for backend in available {
            assert_eq!(backend.avx2().is_some(), backend.level() >= Level::Avx2);
            assert_eq!(backend.avx512().is_some(), backend.level() == Level::Avx512);
            if backend.level() < Level::Avx512 {
                assert!(backend.vnni().is_none() && backend.ifma().is_none());
            }
            if backend == Backend::Portable {
                assert!(backend.clmul().is_none());
            }
        }
        // Where the environment names a level, it is the one selected.
        if let Some(name) = std::env::var_os(BACKEND_VARIABLE).filter(|v| !v.is_empty()) {
            assert_eq!(Some(selected.name()), name.to_str());
        } else {
            assert_eq!(selected.level(), Cpu::detect().fastest());
        }
    }
}
