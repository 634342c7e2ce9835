//! Library errors as Python exceptions: each maps to one class of `obscura._errors` (a hierarchy
//! under `ObscuraError`, defined in Python so that classes can also derive from the built-in
//! exception that fits), with the library's message.

use obscura_client::ClientError;
use obscura_pir::PirError;
use obscura_psi::transport::TransportError;
use obscura_psi::PsiError;
use obscura_store::build::BuildError;
use obscura_store::changes::ChangeFileError;
use obscura_store::store::StoreError;
use obscura_store::update::UpdateError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use pyo3::PyErr;

/// The classes of `obscura._errors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `ObscuraError`: the base class.
    Obscura,
    /// `InvalidInputError`.
    InvalidInput,
    /// `MalformedDataError`.
    Malformed,
    /// `StorageError`.
    Storage,
    /// `MemoryLimitError`.
    MemoryLimit,
    /// `ServerError`.
    Server,
    /// `PeerError`.
    Peer,
    /// `PeerTimeoutError`.
    PeerTimeout,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Self::Obscura => "ObscuraError",
            Self::InvalidInput => "InvalidInputError",
            Self::Malformed => "MalformedDataError",
            Self::Storage => "StorageError",
            Self::MemoryLimit => "MemoryLimitError",
            Self::Server => "ServerError",
            Self::Peer => "PeerError",
            Self::PeerTimeout => "PeerTimeoutError",
        }
    }
}

/// An exception of `class` with `message`.
pub fn error(class: Class, message: impl ToString) -> PyErr {
    let message = message.to_string();
    Python::attach(|py| {
        match py
            .import("obscura._errors")
            .and_then(|module| module.getattr(class.name()))
            .and_then(|class| Ok(class.cast_into::<PyType>()?))
        {
            Ok(class) => PyErr::from_type(class, message),
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

/// An error's message with its chain of causes, as the CLI prints it.
pub fn full_message(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    message
}

/// The class of a PIR error.
fn pir_class(error: &PirError) -> Class {
    match error {
        PirError::IndexOutOfRange { .. }
        | PirError::InvalidParameters(_)
        | PirError::NeedsNewSetup(_)
        | PirError::Coloring(_) => Class::InvalidInput,
        PirError::Rng(_) => Class::Obscura,
        _ => Class::Malformed,
    }
}

/// The class of a database file error.
fn store_class(error: &StoreError) -> Class {
    match error {
        StoreError::Io { .. } => Class::Storage,
        StoreError::Memory { .. } => Class::MemoryLimit,
        _ => Class::Malformed,
    }
}

/// The class of an HTTP client error.
fn client_class(error: &ClientError) -> Class {
    match error {
        ClientError::Pir(error) => pir_class(error),
        ClientError::Store(error) => store_class(error),
        ClientError::RootMismatch { .. } | ClientError::Inconsistent { .. } => Class::Malformed,
        ClientError::Lookup { .. } | ClientError::LeafOutOfRange { .. } => Class::InvalidInput,
        ClientError::UnknownScheme { .. } => Class::Storage,
        _ => Class::Server,
    }
}

/// Turns a library error into the Python exception of its class.
pub trait IntoPyErr {
    /// The exception.
    fn into_py_err(self) -> PyErr;
}

/// `result.map_err(IntoPyErr::into_py_err)`, shortened: `result.py()?`.
pub trait PyResultExt<T> {
    /// The result with its error as a Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T, E: IntoPyErr> PyResultExt<T> for Result<T, E> {
    fn py(self) -> PyResult<T> {
        self.map_err(IntoPyErr::into_py_err)
    }
}

impl IntoPyErr for PirError {
    fn into_py_err(self) -> PyErr {
        error(pir_class(&self), full_message(&self))
    }
}

impl IntoPyErr for ChangeFileError {
    fn into_py_err(self) -> PyErr {
        let class = match self {
            ChangeFileError::Io(_) => Class::Storage,
            _ => Class::InvalidInput,
        };
        error(class, full_message(&self))
    }
}

impl IntoPyErr for UpdateError {
    fn into_py_err(self) -> PyErr {
        let class = match &self {
            UpdateError::Store(error) => store_class(error),
            UpdateError::Change { source, .. } => pir_class(source),
            UpdateError::ChangeFile { .. } => Class::InvalidInput,
            _ => Class::Obscura,
        };
        error(class, full_message(&self))
    }
}

impl IntoPyErr for StoreError {
    fn into_py_err(self) -> PyErr {
        error(store_class(&self), full_message(&self))
    }
}

impl IntoPyErr for obscura_math::threads::ThreadsError {
    fn into_py_err(self) -> PyErr {
        let class = match self {
            obscura_math::threads::ThreadsError::Zero
            | obscura_math::threads::ThreadsError::TooMany => Class::InvalidInput,
            _ => Class::Obscura,
        };
        error(class, full_message(&self).replace("--threads", "threads"))
    }
}

impl IntoPyErr for ClientError {
    fn into_py_err(self) -> PyErr {
        error(client_class(&self), full_message(&self))
    }
}

impl IntoPyErr for BuildError {
    fn into_py_err(self) -> PyErr {
        let class = match &self {
            BuildError::Empty
            | BuildError::IndexOnly { .. }
            | BuildError::ZeroRecordSize
            | BuildError::ArityWithoutKeys => Class::InvalidInput,
            BuildError::Memory(_) => Class::MemoryLimit,
            BuildError::Pir(error) => pir_class(error),
            _ => Class::Obscura,
        };
        error(class, full_message(&self))
    }
}

impl IntoPyErr for PsiError {
    fn into_py_err(self) -> PyErr {
        use obscura_psi::ecdh::messages::MessageError;
        let class = match &self {
            PsiError::Transport(
                TransportError::Timeout { .. } | TransportError::SendTimeout { .. },
            ) => Class::PeerTimeout,
            PsiError::Transport(TransportError::Io(error))
                if error.kind() == std::io::ErrorKind::TimedOut =>
            {
                Class::PeerTimeout
            }
            PsiError::Transport(_) | PsiError::Hello(_) | PsiError::Peer(_) => Class::Peer,
            PsiError::Io { .. } => Class::Storage,
            PsiError::Message(
                MessageError::Malformed { .. } | MessageError::CountMismatch { .. },
            ) => Class::Malformed,
            PsiError::Input(_)
            | PsiError::ItemTooLong { .. }
            | PsiError::TooManyItems { .. }
            | PsiError::Message(_)
            | PsiError::Unsupported { .. } => Class::InvalidInput,
            _ => Class::Obscura,
        };
        error(class, full_message(&self))
    }
}
